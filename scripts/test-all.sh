#!/usr/bin/env bash
# Command 2: install what is missing, build, and run every test. Exits 0 only if all pass.
# Tests that need hardware this machine lacks (GPU, RDMA NIC, root/namespaces) are reported by
# ctest as skipped, with the reason in their output, never as passed.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
bash scripts/deps.sh test
bash scripts/build.sh
echo "build done after $(( $(date +%s) - t0 )) s"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd build
rc=0
ctest --output-on-failure --timeout 900 "$@" || rc=$?
echo "tests done after $(( $(date +%s) - t0 )) s (ctest exit $rc)"
exit $rc

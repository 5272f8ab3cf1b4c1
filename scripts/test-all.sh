#!/usr/bin/env bash
# Command 2: install what is missing, build, and run every test. Exits 0 only if all pass.
# Tests that need hardware this machine lacks (GPU, RDMA NIC, root/namespaces) are reported by
# ctest as skipped, with the reason in their output, never as passed.
# Then, unless FB_CI_MPICH=0, the CPU tests (labels unit, transport, mpi) again under MPICH
# (scripts/test-mpich.sh: a second, CPU-only build against MPICH, launched with hydra).
# Extra arguments go to the first ctest only.
set -euo pipefail
cd "$(dirname "$0")/.."
mpich=${FB_CI_MPICH:-1}
case "$mpich" in
  0|1) ;;
  *) echo "test-all.sh: bad FB_CI_MPICH '$mpich' (expected 1 = also run the CPU tests under MPICH, or 0)" >&2; exit 2 ;;
esac
t0=$(date +%s)
bash scripts/deps.sh test
bash scripts/build.sh
echo "build done after $(( $(date +%s) - t0 )) s"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rc=0
(cd build && ctest --output-on-failure --timeout 900 "$@") || rc=$?
echo "tests done after $(( $(date +%s) - t0 )) s (ctest exit $rc)"
if [ "$mpich" = 1 ]; then
  t1=$(date +%s)
  mrc=0
  bash scripts/test-mpich.sh || mrc=$?
  echo "MPICH pass: $(( $(date +%s) - t1 )) s (exit $mrc); all done after $(( $(date +%s) - t0 )) s"
  [ "$rc" != 0 ] || rc=$mrc
fi
exit $rc

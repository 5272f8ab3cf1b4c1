#!/usr/bin/env bash
# Configures and builds fabricbench (CUDA/NCCL/verbs parts whenever they are found).
#   scripts/build.sh            preset default: everything, into build/
#   scripts/build.sh mpich      preset mpich: CPU-only against Debian's MPICH, the test targets only
#                               (fb_tests_cpu), into build-mpich/ (scripts/test-mpich.sh)
# Ninja when installed (CMake's default generator otherwise); ccache when installed, so a second
# build (another preset or checkout) reuses the objects of every file whose preprocessed text is the
# same: under the mpich preset, those that do not see mpi.h or the CUDA/verbs switches.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
case "$preset" in
  default|mpich|debug) ;;
  *) echo "build.sh: bad preset '$preset' (expected default, mpich or debug)" >&2; exit 2 ;;
esac
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null 2>&1; then export CMAKE_GENERATOR=Ninja; fi
if [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ] && command -v ccache >/dev/null 2>&1; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
  # paths relative to the checkout, so build/ and build-mpich/ (and other checkouts) share entries
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
fi
# A bad value that CMakeLists.txt checks (NCCL_ROOT, CMAKE_CUDA_ARCHITECTURES, ...) fails the configure
# with one "fabricbench:" line; CMake itself exits 1 then, this script 2 as the suite does.
log=$(mktemp); trap 'rm -f "$log"' EXIT
if ! cmake --preset "$preset" >/dev/null 2>"$log"; then
  cat "$log" >&2
  if grep -q "fabricbench:" "$log"; then exit 2; fi
  exit 1
fi
cat "$log" >&2
cmake --build --preset "$preset" -j"$(nproc)"

#!/usr/bin/env bash
# cmake_inputs_test.sh SRC - configure-time inputs, checked by configuring:
#  1. cmake/FbCudaArch.cmake alone (tests/cmake/arch_probe) with a fake nvidia-smi: two H200s give
#     "native" and say sm 90; the same folder then without a GPU chooses the default list again
#     (not the earlier native); a given value or CUDAARCHS is kept and said to be given; bad values
#     (sm_90, 90;native, empty, 9x0) stop the configure with one "fabricbench:" line naming them.
#  2. the real project, CPU parts only, Unix Makefiles (Ninja is optional):
#     - BUILD_TESTING=OFF with Catch2 hidden (CMAKE_DISABLE_FIND_PACKAGE_Catch2 and its folder
#       ignored) configures, and the summary says the tests are off; the same with BUILD_TESTING=ON
#       stops with the Catch2 line (so the hiding is real);
#     - NCCL_ROOT pointing nowhere, at a folder without nccl.h, or at one without the library
#       (-D and environment): one "fabricbench: NCCL_ROOT=..." line, configure fails.
#     - CUDAARCHS=sm_90 stops the real project's configure with its line (it used to turn CUDA off).
#  3. scripts/test-all.sh with a bad FB_CI_MPICH: one line, exit 2, before anything is installed;
#     scripts/build.sh exits 2 when the configure stopped on a "fabricbench:" line, 1 otherwise.
set -u
SRC=${1:?source dir}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }

# --- 1. the CUDA architecture choice ---------------------------------------------------------
mkdir -p "$W/bin"
cat > "$W/bin/smi-2xh200" <<'SH'
#!/bin/sh
printf '9.0, NVIDIA H200\n9.0, NVIDIA H200\n'
SH
cat > "$W/bin/smi-none" <<'SH'
#!/bin/sh
echo "No devices were found"; exit 6
SH
chmod +x "$W/bin/"smi-*
# arch NAME DIR EXPECT_ARCH SUMMARY_NEEDLE [env VAR=.. ...] -- cmake args...
arch() {
  local name=$1 dir=$2 want=$3 needle=$4; shift 4
  local -a envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local out line
  out=$(env -u CUDAARCHS "${envs[@]}" cmake -S "$SRC/tests/cmake/arch_probe" -B "$W/$dir" -DFB_SRC="$SRC" "$@" 2>&1)
  line=$(grep -- "-- probe:" <<<"$out")
  if [[ "$line" == *"arch=$want summary="*"$needle"* ]]; then echo "ok   arch $name: ${line#-- probe: }"
  else fail "arch $name: expected arch=$want and '$needle', got: ${line:-$out}"; fi
}
arch "2 x H200 seen" a1 native "native = sm 90 (detected at configure time: 2 x NVIDIA H200)" -- \
  -DFB_NVIDIA_SMI="$W/bin/smi-2xh200" -DFB_PROBE_NVCC_VERSION=13.0
arch "same folder, no GPU now (chosen again)" a1 "80-real;90-real;100" "default list: no GPU seen" -- \
  -DFB_NVIDIA_SMI="$W/bin/smi-none" -DFB_PROBE_NVCC_VERSION=13.0
arch "no GPU, nvcc 12.4" a2 "80-real;90" "default list" -- \
  -DFB_NVIDIA_SMI="$W/bin/smi-none" -DFB_PROBE_NVCC_VERSION=12.4
arch "given 80 on a GPU host" a3 80 "80 (given: CMAKE_CUDA_ARCHITECTURES)" -- \
  -DFB_NVIDIA_SMI="$W/bin/smi-2xh200" -DCMAKE_CUDA_ARCHITECTURES=80
arch "CUDAARCHS=100a" a4 100a "100a (given: CUDAARCHS environment variable)" CUDAARCHS=100a -- \
  -DFB_NVIDIA_SMI="$W/bin/smi-none"

# bad_configure NAME NEEDLE cmd...: the command fails and prints exactly one "fabricbench:" line,
# which contains NEEDLE.
bad_configure() {
  local name=$1 needle=$2; shift 2
  local out rc lines
  out=$("$@" 2>&1); rc=$?
  lines=$(grep -c "fabricbench: " <<<"$out" | tr -d ' ')
  if [ "$rc" != 0 ] && [ "$lines" = 1 ] && grep -qF -- "$needle" <<<"$out"; then
    echo "ok   $name (exit $rc): $(grep "fabricbench: " <<<"$out" | sed 's/^ *//')"
  else
    fail "$name: exit $rc, $lines 'fabricbench:' lines, wanted '$needle': $(grep -v '^--' <<<"$out" | head -8)"
  fi
}
for v in "sm_90|'sm_90'" "90;native|(native/all/all-major stand alone)" "|'<empty>'" "9x0|'9x0'"; do
  bad_configure "arch '${v%%|*}'" "${v#*|}" \
    cmake -S "$SRC/tests/cmake/arch_probe" -B "$W/abad" -DFB_SRC="$SRC" -DFB_NVIDIA_SMI="$W/bin/smi-none" \
      "-DCMAKE_CUDA_ARCHITECTURES=${v%%|*}"
  rm -rf "$W/abad"
done

# --- 2. the real project, CPU parts only ------------------------------------------------------
CPU=(-G "Unix Makefiles" -DFB_WITH_CUDA=OFF -DFB_WITH_VERBS=OFF)
HIDE=(-DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON "-DCMAKE_IGNORE_PATH=/usr/lib/cmake/Catch2;/usr/share/cmake/Catch2;/usr/local/lib/cmake/Catch2")
t0=$SECONDS
out=$(cmake -S "$SRC" -B "$W/nocatch" "${CPU[@]}" "${HIDE[@]}" -DBUILD_TESTING=OFF 2>&1); rc=$?
if [ "$rc" = 0 ] && grep -q -- "--   tests         off: BUILD_TESTING=OFF (Catch2 not needed)" <<<"$out" \
   && grep -q "Unix Makefiles" <<<"$out" && [ -f "$W/nocatch/Makefile" ]; then
  echo "ok   BUILD_TESTING=OFF, Catch2 hidden, Unix Makefiles: configured ($((SECONDS - t0)) s)"
else
  fail "BUILD_TESTING=OFF with Catch2 hidden: exit $rc: $(tail -8 <<<"$out")"
fi
! grep -q "^Catch2_DIR:PATH=/" "$W/nocatch/CMakeCache.txt" 2>/dev/null \
  || fail "BUILD_TESTING=OFF: Catch2 was found anyway: $(grep '^Catch2_DIR' "$W/nocatch/CMakeCache.txt")"
bad_configure "BUILD_TESTING=ON, Catch2 hidden (control)" "Catch2 not found, and the tests need it" \
  cmake -S "$SRC" -B "$W/withcatch" "${CPU[@]}" "${HIDE[@]}" -DBUILD_TESTING=ON

mkdir -p "$W/empty" "$W/hdronly/include"
printf '#define NCCL_MAJOR 2\n#define NCCL_MINOR 99\n#define NCCL_PATCH 7\n' > "$W/hdronly/include/nccl.h"
bad_configure "-DNCCL_ROOT=/nonexistent" "NCCL_ROOT='/nonexistent' (-DNCCL_ROOT) is not a directory" \
  cmake -S "$SRC" -B "$W/n1" "${CPU[@]}" -DBUILD_TESTING=OFF -DNCCL_ROOT=/nonexistent
bad_configure "NCCL_ROOT env, no nccl.h" "NCCL_ROOT='$W/empty' (environment variable NCCL_ROOT) has no include/nccl.h" \
  env NCCL_ROOT="$W/empty" cmake -S "$SRC" -B "$W/n2" "${CPU[@]}" -DBUILD_TESTING=OFF
bad_configure "-DNCCL_ROOT with the header only" "has include/nccl.h but no libnccl.so" \
  cmake -S "$SRC" -B "$W/n3" "${CPU[@]}" -DBUILD_TESTING=OFF -DNCCL_ROOT="$W/hdronly"

# CUDAARCHS is read by check_language(CUDA) too, which turned CUDA off silently on a bad value.
bad_configure "real project, CUDAARCHS=sm_90" "'sm_90' in 'sm_90' (given: CUDAARCHS environment variable" \
  env CUDAARCHS=sm_90 cmake -S "$SRC" -B "$W/c1" -G "Unix Makefiles" -DFB_WITH_VERBS=OFF -DBUILD_TESTING=OFF

# --- 3. scripts ------------------------------------------------------------------------------
out=$(FB_CI_MPICH=maybe bash "$SRC/scripts/test-all.sh" 2>&1); rc=$?
if [ "$rc" = 2 ] && [ "$(grep -c . <<<"$out")" = 1 ] && grep -q "bad FB_CI_MPICH 'maybe'" <<<"$out"; then
  echo "ok   FB_CI_MPICH=maybe: exit 2: $out"
else
  fail "FB_CI_MPICH=maybe: exit $rc: $out"
fi

# scripts/build.sh: a configure stopped by a "fabricbench:" line exits 2, another failure 1 (a fake
# cmake first in PATH stands for both).
mkdir -p "$W/fakecmake"
cat > "$W/fakecmake/cmake" <<'SH'
#!/bin/sh
printf 'CMake Error at CMakeLists.txt:1 (message):\n  %s\n' "$FAKE_MSG" >&2; exit 1
SH
chmod +x "$W/fakecmake/cmake"
for c in "fabricbench: NCCL_ROOT='/x' (-DNCCL_ROOT) is not a directory|2" "Could not find CMAKE_ROOT|1"; do
  out=$(PATH="$W/fakecmake:$PATH" FAKE_MSG="${c%|*}" bash "$SRC/scripts/build.sh" 2>&1); rc=$?
  if [ "$rc" = "${c##*|}" ] && grep -qF "${c%|*}" <<<"$out"; then echo "ok   build.sh, configure says '${c%|*}': exit $rc"
  else fail "build.sh, configure says '${c%|*}': exit $rc (wanted ${c##*|}): $out"; fi
done

[ "$bad" = 0 ] && echo "RESULT: configure inputs passed" || echo "RESULT: configure inputs FAILED"
exit "$bad"

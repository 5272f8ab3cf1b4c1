#!/usr/bin/env bash
# nccl_root_test.sh SRC BUILD - NCCL found under a custom prefix: nccl.h and libnccl copied to
# $W/nccl (from /usr/local/cuda when there, else a stand-in header and library file), then
#  1. cmake/FindNCCL.cmake alone (tests/cmake/nccl_probe) with -DNCCL_ROOT, NCCL_ROOT and NCCL_HOME in
#     the environment, and CMAKE_PREFIX_PATH: each must find both files in the prefix (ahead of
#     /usr/local/cuda); with every other place ignored (CMAKE_IGNORE_PREFIX_PATH) it must still find
#     them, and without the prefix it must find nothing (so the ignore is real);
#  2. the real project (when nvcc is here), CPU test parts off, -DNCCL_ROOT=$W/nccl: configures,
#     and its summary names the prefix's library and the CUDA architectures chosen (native when
#     nvidia-smi lists a GPU, else the default list).
set -u
SRC=${1:?source dir}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }
P=$W/nccl
mkdir -p "$P/include" "$P/lib"
if [ -f /usr/local/cuda/include/nccl.h ] && ls /usr/local/cuda/lib64/libnccl.so.* >/dev/null 2>&1; then
  cp /usr/local/cuda/include/nccl*.h "$P/include/"
  cp -L "$(ls /usr/local/cuda/lib64/libnccl.so.[0-9]* | head -n 1)" "$P/lib/libnccl.so.2"
  echo "copied nccl.h and libnccl.so.2 from /usr/local/cuda ($(du -sh "$P" | cut -f1))"
else
  printf '#define NCCL_MAJOR 2\n#define NCCL_MINOR 99\n#define NCCL_PATCH 7\n' > "$P/include/nccl.h"
  : > "$P/lib/libnccl.so.2"
  echo "no NCCL in /usr/local/cuda: a stand-in nccl.h (2.99.7) and library file"
fi
ln -s libnccl.so.2 "$P/lib/libnccl.so"
want_v=$(sed -n 's/^#define NCCL_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' "$P/include/nccl.h" | paste -sd.)

# probe NAME EXPECT(found|none) [env VAR=.. ...] -- cmake args...
probe() {
  local name=$1 expect=$2; shift 2
  local -a envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  rm -rf "$W/b"
  local out
  out=$(env "${envs[@]}" cmake -S "$SRC/tests/cmake/nccl_probe" -B "$W/b" -DFB_SRC="$SRC" "$@" 2>&1)
  local line; line=$(grep -- "-- probe:" <<<"$out")
  if [ "$expect" = found ]; then
    [[ "$line" == *"found=TRUE include=$P/include library=$P/lib/libnccl.so version=$want_v"* ]] \
      && echo "ok   $name: $line" || fail "$name: expected NCCL $want_v in $P, got: ${line:-$out}"
  else
    [[ "$line" == *"found=FALSE"* ]] && echo "ok   $name (nothing found): $line" || fail "$name: expected no NCCL, got: ${line:-$out}"
  fi
}
IGN="-DCMAKE_IGNORE_PATH=/usr/local/cuda/include;/usr/local/cuda/lib64;/usr/local/cuda/lib;/usr/include;/usr/lib/x86_64-linux-gnu;/usr/lib;/usr/lib64;/usr/local/include;/usr/local/lib"
probe "-DNCCL_ROOT" found -- -DNCCL_ROOT="$P"
probe "NCCL_ROOT env" found NCCL_ROOT="$P" --
probe "NCCL_HOME env" found NCCL_HOME="$P" --
probe "CMAKE_PREFIX_PATH" found -- -DCMAKE_PREFIX_PATH="$P"
probe "-DNCCL_ROOT, everything else ignored" found PATH=/usr/bin:/bin -- -DNCCL_ROOT="$P" "$IGN"
probe "no prefix, everything else ignored" none PATH=/usr/bin:/bin -- "$IGN"

if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  t0=$SECONDS
  # no architecture given: the summary must say what was chosen and why (GPU seen or not)
  out=$(env -u CUDAARCHS cmake -S "$SRC" -B "$W/real" -DBUILD_TESTING=OFF -DFB_WITH_VERBS=OFF \
        -DNCCL_ROOT="$P" 2>&1); rc=$?
  line=$(grep -- "--   NCCL " <<<"$out")
  [ "$rc" = 0 ] && [[ "$line" == *"$want_v: $P/lib/libnccl.so; headers $P/include"* ]] \
    && echo "ok   real project, -DNCCL_ROOT: $line ($((SECONDS - t0)) s)" \
    || fail "real project with -DNCCL_ROOT: exit $rc, NCCL line '${line}': $(tail -5 <<<"$out")"
  arch=$(grep -- "--   CUDA arch " <<<"$out")
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then want_arch="native = sm "; else want_arch="(default list: no GPU seen"; fi
  [[ "$arch" == *"$want_arch"* ]] && echo "ok   real project, CUDA arch said: ${arch#-- }" \
    || fail "real project: CUDA arch line '$arch' does not contain '$want_arch'"
else
  echo "note: no nvcc here: the real project's NCCL part needs CUDA, only FindNCCL.cmake was checked"
fi
[ "$bad" = 0 ] && echo "RESULT: NCCL_ROOT passed" || echo "RESULT: NCCL_ROOT FAILED"
exit "$bad"

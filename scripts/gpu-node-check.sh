#!/usr/bin/env bash
# One batched pass on a GPU host without package access (see .gpu-node/, staged by
# shared gpu-node/stage-deps.sh): build, run the GPU tests, --list, then every step in
# scripts/gpu-steps/*.sh in name order. Logs and result folders go to $1 (default gpu-out/).
#   ONLY="name ..."   run just those steps (file names without .sh; build and tests always run)
#   SKIP_CTEST=1      skip ctest -L gpu
# Each step runs under its own time limit (FB_STEP_LIMIT in the step's first 5 lines, default 120 s),
# so a hang costs that step only. Steps see: B (build dir), OUT (this pass's folder), MPI (launcher),
# NGPU (GPUs here), NP (ranks in $MPI: 2, or 1 on a 1-GPU host), SINGLE (--allow-single-rank when NP is 1).
set -uo pipefail
out=${1:-gpu-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
source .gpu-node/activate.sh
export CUDAHOSTCXX=${CUDAHOSTCXX:-/opt/gcc/bin/g++} NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export B=build-gpu OUT=$out
# One rank per GPU, two at most (the steps compare two GPUs); on a 1-GPU host the steps run one
# rank and pass --allow-single-rank ($SINGLE).
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
NP=$(( NGPU >= 2 ? 2 : 1 ))
# The GPU model in run ids (h100, h200, a100, b200, ...; "gpu" when nvidia-smi names none of them).
FB_GPU_MODEL=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -oiE '[ABHL][0-9]{2,3}' | head -1 | tr 'A-Z' 'a-z')
export FB_GPU_MODEL=${FB_GPU_MODEL:-gpu}
export NGPU NP SINGLE=$([ "$NP" = 1 ] && echo --allow-single-rank)
export MPI="mpirun -np $NP --bind-to none -x NCCL_NVLS_ENABLE=0"
{ nvidia-smi; nvidia-smi topo -m; } > "$out/nvidia-smi.txt" 2>&1
# No CMAKE_CUDA_ARCHITECTURES: cmake/FbCudaArch.cmake builds for the GPUs nvidia-smi lists here
# (native) and says so in the configure summary and in fabricbench --version (both printed below).
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_HOST_COMPILER="$CUDAHOSTCXX" > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
grep -E -- "-- (  CUDA arch|fabricbench: CUDA code built)" "$out/configure.log"
grep -E "^CMAKE_CUDA_ARCHITECTURES" $B/CMakeCache.txt
cmake --build $B -j"$(nproc)" > "$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -30; exit 1; }
echo "build ok after ${SECONDS}s"
$B/benchmarks/fabricbench --version > "$out/version.txt" 2>&1; echo "--version exit $?"; grep -i "arch" "$out/version.txt"
# the cubins really in the binary (sm_XX per kernel image)
command -v cuobjdump >/dev/null 2>&1 && cuobjdump --list-elf $B/benchmarks/fabricbench 2>/dev/null | sed -n 's/.*\(sm_[0-9a-z]*\).*/\1/p' | sort | uniq -c
if [ -z "${SKIP_CTEST:-}" ]; then
  (cd $B && timeout 300 ctest -L gpu --output-on-failure --timeout 150) > "$out/ctest-gpu.log" 2>&1
  echo "ctest -L gpu exit $?"; grep -E "tests passed|Passed|Failed|Skipped|Not Run" "$out/ctest-gpu.log" | tail -20
fi
echo "GPUs: $NGPU; steps run $NP rank(s)"
$MPI $B/benchmarks/fabricbench --list > "$out/list.txt" 2>&1; echo "--list exit $?"
for s in scripts/gpu-steps/*.sh; do
  [ -e "$s" ] || continue
  name=$(basename "$s" .sh)
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
  limit=$(head -5 "$s" | sed -n 's/.*FB_STEP_LIMIT=\([0-9]*\).*/\1/p' | head -1)
  t0=$SECONDS
  timeout "${limit:-120}" bash "$s" > "$out/$name.log" 2>&1
  echo "step $name exit $? in $((SECONDS - t0))s"; tail -4 "$out/$name.log" | sed 's/^/    /'
done
echo "pass done after ${SECONDS}s"

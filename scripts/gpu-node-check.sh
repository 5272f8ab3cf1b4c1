#!/usr/bin/env bash
# One batched pass on a GPU host without package access (see .gpu-node/, staged by
# shared gpu-node/stage-deps.sh): build, run the GPU tests, --list, and the main job over every
# path the host has. Logs and result folders go to $1 (default gpu-out/), tarred by the caller.
set -uo pipefail
out=${1:-gpu-out}
mkdir -p "$out"
source .gpu-node/activate.sh
export CUDAHOSTCXX=${CUDAHOSTCXX:-/opt/gcc/bin/g++} NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
B=build-gpu
{ nvidia-smi; nvidia-smi topo -m; } > "$out/nvidia-smi.txt" 2>&1
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_CUDA_HOST_COMPILER="$CUDAHOSTCXX" > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build $B -j"$(nproc)" > "$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -30; exit 1; }
(cd $B && timeout 240 ctest -L gpu --output-on-failure --timeout 120) > "$out/ctest-gpu.log" 2>&1
echo "ctest -L gpu exit $?"; grep -E "tests passed|Passed|Failed|Skipped|Not Run" "$out/ctest-gpu.log" | tail -12
MPI="mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE=0"
$MPI $B/benchmarks/fabricbench --list > "$out/list.txt" 2>&1; echo "--list exit $?"
run_id=${FB_RUN_ID:-$(date -u +%Y%m%d)-h200x2-auto}
timeout 300 $MPI $B/benchmarks/fabricbench --transport auto --collective all -b 8 -e 256M -f 4 -n 10 -w 2 \
  --results-dir "$out/results" --run-id "$run_id" > "$out/auto.log" 2>&1
echo "auto exit $?"; grep -E "^# " "$out/auto.log" | tail -12

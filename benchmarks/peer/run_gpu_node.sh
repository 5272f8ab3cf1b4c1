#!/usr/bin/env bash
# One pass on the GPU host (2 GPUs): build, kernel + collective tests, fabricbench-peer, the
# P2P sanity check's negative cases, and the CUDA-IPC vs NCCL tables. Logs under $1 (default
# ./gpu-logs). Every step has its own time limit, so a hang costs that step only.
set -u
L=${1:-gpu-logs}
mkdir -p "$L"
source .gpu-node/activate.sh
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDAHOSTCXX=${CUDAHOSTCXX:-/opt/gcc/bin/g++}
B=build-gpu
RD=${RESULTS_DIR:-results}  # parent of the result folders
step() { echo "$(date -u +%T) $*" | tee -a "$L/progress.txt"; }
# Steps are skipped once the pass has run BUDGET seconds (default 480), so it ends in time.
BUDGET=${BUDGET:-480}
# ONLY="name ..." runs just those steps (configure and build always run).
run() {
  local name=$1 t=$2; shift 2
  if [ -n "${ONLY:-}" ] && [[ " $ONLY configure configure-notests build " != *" $name "* ]]; then return 0; fi
  if (( SECONDS + 20 > BUDGET )); then step "skip $name (budget)"; return 99; fi
  (( SECONDS + t > BUDGET )) && t=$(( BUDGET - SECONDS ))
  step "start $name"; timeout "$t" "$@" >"$L/$name.log" 2>&1; local rc=$?; step "end $name rc=$rc"; return $rc; }

nvidia-smi -L >"$L/gpus.txt" 2>&1; nvidia-smi topo -m >>"$L/gpus.txt" 2>&1
run configure 120 cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_HOST_COMPILER="$CUDAHOSTCXX" -DBUILD_TESTING=ON ||
  run configure-notests 120 cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_HOST_COMPILER="$CUDAHOSTCXX" -DBUILD_TESTING=OFF
run build 300 cmake --build $B -j 32 --target fabricbench-peer test_kernels test_cuda_collectives fabricbench
P=$B/benchmarks/peer/fabricbench-peer
F=$B/benchmarks/fabricbench
AR="mpirun -np 2 $F --collective allreduce --placement out --timeout 30"
run test_cuda_collectives 150 mpirun -np 2 $B/tests/collectives/test_cuda_collectives
run peer 150 $P --sm-sweep --results-dir "$RD" --run-id peer-h200x2
run allreduce 240 $AR --transport cuda,nccl --path nvlink -b 8 -e 1G -f 2 -n 50 -w 10 \
  --results-dir "$RD" --run-id allreduce-cuda-vs-nccl
# NCCL alone (no cuda rows before it in the process), to see whether its small-size time depends on that.
run nccl_alone 60 $AR --transport nccl --path nvlink -b 8 -e 1M -f 2 -n 50 -w 10 --no-files
# The small-message algorithms side by side (choosing FB_CUDA_LL_MAX's default from data).
run allreduce_ll 60 env FB_CUDA_ALGO=ll $AR --transport cuda -b 8 -e 512K -f 2 -n 50 -w 10 --no-files
run allreduce_oneshot 60 env FB_CUDA_ALGO=oneshot $AR --transport cuda -b 8 -e 1M -f 2 -n 50 -w 10 --no-files
run peer_bulk 60 $P --tests bulk --results-dir "$RD" --run-id peer-bulk-h200x2
run test_kernels 150 $B/tests/kernels/test_kernels
run list 60 mpirun -np 2 $F --list
run peer_no_peer_access 40 $P --tests sanity,ce --no-peer-access --no-files
run peer_inject_hang 40 $P --tests sanity --inject-hang --sanity-timeout-ms 1000 --no-files
run others 150 mpirun -np 2 $F --transport cuda,nccl --path nvlink --collective allgather,reducescatter,p2pring \
  -b 1K -e 256M -f 4 -n 20 -w 5 --placement out --timeout 30 --results-dir "$RD" --run-id others-cuda-vs-nccl
run allreduce_ring 60 env FB_CUDA_ALGO=ring $AR --transport cuda -b 8 -e 4M -f 4 -n 50 -w 10 --no-files
step done

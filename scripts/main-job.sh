#!/usr/bin/env bash
# Command 1: install what is missing, build, and run the main job on this machine's paths:
# the six collectives (AllReduce, AllGather, ReduceScatter, P2P ring, AllToAll, Broadcast) over every path this machine has (auto: tcp and the mpi reference here;
# nccl/cuda/verbs too where present), 8 B to 64 MiB, 4 ranks on localhost. Results: results/<run-id>/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh build
bash scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NP=${FB_NP:-4}
exec mpirun --oversubscribe -np "$NP" build/benchmarks/fabricbench --transport auto --collective all \
  -b 8 -e 64M -f 2 "$@"

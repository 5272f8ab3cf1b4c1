#!/bin/bash
# Emulated multi-node NCCL on one GPU: 2 ranks, a different NCCL_HOSTID each, so NCCL goes through NET/Socket.
set -u
source .gpu-node/activate.sh
export CUDAHOSTCXX=${CUDAHOSTCXX:-/opt/gcc/bin/g++} NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$SECONDS
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_HOST_COMPILER="$CUDAHOSTCXX" > $OUT/configure.log 2>&1 || { tail -20 $OUT/configure.log; exit 1; }
cmake --build build-gpu -j16 --target fabricbench fabricbench_nccl_profiler > $OUT/build.log 2>&1 || { grep -E "error|FAILED" $OUT/build.log | head -20; exit 1; }
echo "build ok $((SECONDS-t0))s"
printf '#!/bin/bash\nexport NCCL_HOSTID=host$OMPI_COMM_WORLD_RANK\nexec "$@"\n' > hostid.sh; chmod +x hostid.sh
FB=build-gpu/benchmarks/fabricbench
MPI="mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE=0"
COMMON="--transport nccl --collective allreduce,alltoall,allgather -b 8 -e 4M -f 16 -n 5 -w 2 --results-dir $OUT/res"
timeout 150 $MPI ./hostid.sh $FB $COMMON --path training --run-id training > $OUT/training.txt 2>&1; echo "training exit $?"; tail -14 $OUT/training.txt
timeout 100 $MPI ./hostid.sh $FB $COMMON --path training --require ib --run-id require-ib > $OUT/require-ib.txt 2>&1; echo "require-ib exit $?"; tail -5 $OUT/require-ib.txt
timeout 60 $MPI ./hostid.sh $FB $COMMON --path training --require rails=0 --run-id bad > $OUT/require-bad.txt 2>&1; echo "require rails=0 exit $?"; tail -2 $OUT/require-bad.txt
timeout 100 $MPI ./hostid.sh $FB $COMMON --path auto --run-id auto > $OUT/auto.txt 2>&1; echo "auto (MPI sees 1 node) exit $?"; tail -4 $OUT/auto.txt
python3 - "$OUT/res/training/table.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["coll"], r["size_bytes"], r["placement"], r["path"], "|", *(f"{k}={r[k]}" for k in
          ["intra", "inter", "nics", "rails", "gdr", "pxn", "nvls", "algo", "proto", "channels", "algo_source"]))
PY
# Keep a few files only (what comes back from $OUT is limited): the tables, one run.json, rank 0's NCCL log.
for r in training require-ib auto; do cp $OUT/res/$r/table.csv $OUT/$r.table.csv 2>/dev/null; done
cp $OUT/res/training/run.json $OUT/training.run.json
cp "$(ls $OUT/res/training/logs/*.log | head -1)" $OUT/training.nccl-rank.log
cp "$(ls $OUT/res/require-ib/logs/*.log | head -1)" $OUT/require-ib.nccl-rank.log
rm -rf $OUT/res
echo "total $((SECONDS-t0))s"

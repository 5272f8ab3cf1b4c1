#!/usr/bin/env bash
# Instrument (issue 33): does fabricbench's NCCL profiler plugin, loaded and disarmed, cost one-rank operations?
# Runs on the GPU host from the repository root (.gpu-node staged, nccl-tests sources in .nccl-tests/src):
# one-rank AllReduce 8 B - 1 MiB, -n 40 -w 10, pinned to CPU 3, up to 12 rounds of four variants in a shuffled
# order each round:
#   fb         fabricbench --per-op under mpirun -np 1 (as scripts/gpu-steps/60-vs-nccl-tests.sh runs it)
#   fb-noplug  the same with NCCL_PROFILER_PLUGIN pointing nowhere (no plugin loaded)
#   nt         nccl-tests -I 1 as step 60 runs it (a singleton)
#   nt-plug    nccl-tests -I 1 with our plugin loaded
# Writes $OUT/diag.tgz; summarise with: python3 scripts/instruments/perop_ab_sum.py DIR (DIR: the untarred diag/).
set -u
source .gpu-node/activate.sh
export CUDAHOSTCXX=/opt/gcc/bin/g++ NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$SECONDS
( make -C .nccl-tests/src -j8 MPI=0 NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 BUILDDIR=$PWD/.nccl-tests/build all_reduce_perf > /tmp/nt-build.log 2>&1 ||
  make -C .nccl-tests/src -j8 MPI=0 NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 BUILDDIR=$PWD/.nccl-tests/build > /tmp/nt-build.log 2>&1 ) &
ntb=$!
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_HOST_COMPILER=$CUDAHOSTCXX > /tmp/cfg.log 2>&1 || { tail -20 /tmp/cfg.log; exit 1; }
cmake --build build-gpu -j16 --target fabricbench fabricbench_nccl_profiler > /tmp/build.log 2>&1 || { grep -E "error|FAILED" /tmp/build.log | head; exit 1; }
wait $ntb || { tail -20 /tmp/nt-build.log; exit 1; }
echo "built $((SECONDS-t0))s"
D=$OUT/diag; mkdir -p $D
plugin=$(ls $PWD/build-gpu/lib/gpu/nccl/libfabricbench-nccl-profiler.so)
NT=.nccl-tests/build/all_reduce_perf
nt=(-b 8 -e 1M -f 2 -n 40 -w 10 -g 1 -I 1)
fb=(build-gpu/benchmarks/fabricbench --transport nccl --collective allreduce -b 8 -e 1M -f 2 -n 40 -w 10 --placement both
    --allow-single-rank --timer rank --per-op --results-dir $D)
M=(mpirun -np 1 --bind-to none -x NCCL_NVLS_ENABLE=0)
run() {
  case $1 in
    fb) taskset -c 3 "${M[@]}" "${fb[@]}" --run-id fb-r$2 > $D/fb-r$2.log 2>&1 ;;
    fb-noplug) taskset -c 3 env NCCL_PROFILER_PLUGIN=/nonexistent/none.so "${M[@]}" -x NCCL_PROFILER_PLUGIN "${fb[@]}" --run-id fb-noplug-r$2 > $D/fb-noplug-r$2.log 2>&1 ;;
    nt) taskset -c 3 $NT "${nt[@]}" -J $D/nt-r$2.json > $D/nt-r$2.log 2>&1 ;;
    nt-plug) taskset -c 3 env NCCL_PROFILER_PLUGIN=$plugin $NT "${nt[@]}" -J $D/nt-plug-r$2.json > $D/nt-plug-r$2.log 2>&1 ;;
  esac
}
for r in $(seq 1 12); do
  [ $((SECONDS-t0)) -gt 160 ] && break
  for v in $(printf "fb\nfb-noplug\nnt\nnt-plug\n" | shuf); do run $v $r; echo "$r $v" >> $D/order.txt; done
  echo "round $r done $((SECONDS-t0))s"
done
find $D -name plots -type d -prune -exec rm -rf {} +
find $D -name '*.log' -size +200k -delete
tar czf $OUT/diag.tgz -C $OUT diag && rm -rf $D; echo "done $((SECONDS-t0))s"

#!/usr/bin/env bash
# Instrument (issue 33): does fabricbench's NCCL profiler plugin, loaded and disarmed, cost one-rank operations?
# Runs on the GPU host from the repository root (.gpu-node staged, nccl-tests sources in .nccl-tests/src):
# one-rank AllReduce 8 B - 1 MiB, -n 40 -w 10, pinned to CPU 3, up to 12 rounds of four variants in a shuffled
# order each round:
#   fb         fabricbench --per-op under mpirun -np 1 (as scripts/gpu-steps/60-vs-nccl-tests.sh runs it)
#   fb-noplug  the same with NCCL_PROFILER_PLUGIN pointing nowhere (no plugin loaded)
#   nt         nccl-tests -I 1 as step 60 runs it (a singleton)
#   nt-plug    nccl-tests -I 1 with our plugin loaded
#   fb-R, nt-R fb and nt with address-space randomisation off (setarch -R, inherited through mpirun): is a
#              process's level (4.4-7.9 us, moving round to round) its memory layout?
#   fb-rep1    fb with --repeat 1: the per-op batch after one timed batch instead of three (a warmer loop?)
#   nt-mpi     nccl-tests built with MPI=1 (MPI_Init in its process, as fabricbench has) under mpirun -np 1
#   nt-malloc  nt with glibc's malloc never trimming or mmapping (GLIBC_TUNABLES): MPI libraries' malloc settings?
#   fb-c1, nt-c1  fb and nt with CUDA_DEVICE_MAX_CONNECTIONS=1 (every stream on one hardware queue): do the two
#              per-process modes (and the gap) follow which queue and copy engine a process's stream lands on?
#   nt-cpu     nt with -C 1: the time column is the host's enqueue time per operation (no final sync), beside
#              the per-iteration p50 of the same loop: host-bound where the two agree, GPU-bound where it is less
#   nt-env     nt with the NCCL environment fabricbench sets in its process (NCCL_DEBUG=INFO, its subsystems, a
#              debug file; lib/gpu/nccl/path_profile.cc enableNcclLogging)
#   fb-noucx   fb with Open MPI's ob1 PML and UCX's memory hooks off (UCM replaces malloc when it loads)
#   nt-c0      nt with -c 0 (no data check): from 64 KiB out of place nccl-tests' lower quartile rose by ~1 us
#              where fabricbench's did not (session 21); is it the check's setup around each size?
#   fb-reuse   fb with --reuse-buffers (one buffer, as nccl-tests does not): does moving the buffers cost fb?
#   nt-rest    nt with scripts/instruments/rest.c preloaded: its thread sleeps REST_US (2000) before each size's loop
#   fb-pin     fb with taskset -c 3 inside mpirun as well (in case mpirun widens the CPU set it inherits)
#   nt-free    nt on every core (no taskset): do its own threads, sharing CPU 3 with the loop, slow it?
#   fb-ct, nt-ct  fb and nt with scripts/instruments/calltime.c preloaded: the host time of each ncclAllReduce and
#              cudaEventRecord in the per-op loops, and the application's own time between them (ct-*.csv;
#              summarise with scripts/instruments/calltime_sum.py DIR): in which call is nt's extra time?
#   fb-pad, nt-pad  fb and nt with scripts/instruments/pad.c preloaded: one malloc of 16-8192 random bytes before
#              main shifts every later small allocation inside its page (address-space randomisation moves whole
#              pages only): do a process's level and the gap follow its heap's layout? (pad-*.txt: each size)
#   fb-ntl     fb with --timer nccl-tests -a 1, whose --per-op batch runs nccl-tests' -I loop (a clock read and
#              cudaSetDevice before each operation's event; lib/collectives/gpu_ops.h)
#   fb-shm     fb writing its result files on /dev/shm (tmpfs: fsync returns at once): do the rows' fsyncs, where
#              fb's main thread blocks between its loops, make its loops faster than nccl-tests' (see nt-rest)?
# THREADS=1 first runs one fb and one nt under scripts/instruments/threads.py: each thread's name, CPU time and
# allowed CPUs, and the process's context switches (threads.txt). STRACE=1: the same two under strace -f -c.
# VARIANTS="fb nt ..." picks the variants (default the first four), ROUNDS the most rounds (12), BUDGET_S the
# seconds after which no further round starts (160).
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
if [[ " ${VARIANTS:-} " == *" nt-mpi "* ]]; then
  mpiinc=$(mpicc --showme:incdirs | tr ' ' ':'); mpilib=$(mpicc --showme:libdirs | tr ' ' ':')
  CPATH=$mpiinc${CPATH:+:$CPATH} LIBRARY_PATH=$mpilib${LIBRARY_PATH:+:$LIBRARY_PATH} \
  make -C .nccl-tests/src -j8 MPI=1 MPI_HOME=${mpiinc%%:*}/.. NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 \
    BUILDDIR=$PWD/.nccl-tests/build-mpi $PWD/.nccl-tests/build-mpi/all_reduce_perf > /tmp/nt-mpi-build.log 2>&1 ||
    { tail -5 /tmp/nt-mpi-build.log; which mpirun mpicc; echo "nt-mpi not built: variant dropped"; VARIANTS=${VARIANTS/nt-mpi/}; }
fi
[[ " ${VARIANTS:-} " == *"-pad "* ]] && { cc -O2 -shared -fPIC -o /tmp/pad.so scripts/instruments/pad.c || exit 1; }
[[ " ${VARIANTS:-} " == *"-ct "* ]] && { cc -O2 -shared -fPIC -o /tmp/calltime.so scripts/instruments/calltime.c -ldl || exit 1; }
[[ " ${VARIANTS:-} " == *" nt-rest "* ]] && { cc -O2 -shared -fPIC -o /tmp/rest.so scripts/instruments/rest.c -ldl || exit 1; }
echo "built $((SECONDS-t0))s"
D=$OUT/diag; mkdir -p $D
{ echo "randomize_va_space $(cat /proc/sys/kernel/randomize_va_space)"; echo "thp $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
  setarch -R true && echo "setarch -R works"; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader; } > $D/host.txt 2>&1
plugin=$(ls $PWD/build-gpu/lib/gpu/nccl/libfabricbench-nccl-profiler.so)
NT=.nccl-tests/build/all_reduce_perf
nt=(-b 8 -e 1M -f 2 -n 40 -w 10 -g 1 -I 1)
fb0=(build-gpu/benchmarks/fabricbench --transport nccl --collective allreduce -b 8 -e 1M -f 2 -n 40 -w 10 --placement both
    --allow-single-rank --timer rank --per-op)
fb=("${fb0[@]}" --results-dir $D)
M=(mpirun -np 1 --bind-to none -x NCCL_NVLS_ENABLE=0)
run() {
  case $1 in
    fb) taskset -c 3 "${M[@]}" "${fb[@]}" --run-id fb-r$2 > $D/fb-r$2.log 2>&1 ;;
    fb-noplug) taskset -c 3 env NCCL_PROFILER_PLUGIN=/nonexistent/none.so "${M[@]}" -x NCCL_PROFILER_PLUGIN "${fb[@]}" --run-id fb-noplug-r$2 > $D/fb-noplug-r$2.log 2>&1 ;;
    nt) taskset -c 3 $NT "${nt[@]}" -J $D/nt-r$2.json > $D/nt-r$2.log 2>&1 ;;
    nt-plug) taskset -c 3 env NCCL_PROFILER_PLUGIN=$plugin $NT "${nt[@]}" -J $D/nt-plug-r$2.json > $D/nt-plug-r$2.log 2>&1 ;;
    fb-R) taskset -c 3 setarch -R "${M[@]}" "${fb[@]}" --run-id fb-R-r$2 > $D/fb-R-r$2.log 2>&1 ;;
    nt-R) taskset -c 3 setarch -R $NT "${nt[@]}" -J $D/nt-R-r$2.json > $D/nt-R-r$2.log 2>&1 ;;
    nt-mpi) taskset -c 3 "${M[@]}" .nccl-tests/build-mpi/all_reduce_perf "${nt[@]}" -J $D/nt-mpi-r$2.json > $D/nt-mpi-r$2.log 2>&1 ;;
    nt-malloc) taskset -c 3 env GLIBC_TUNABLES=glibc.malloc.trim_threshold=1099511627776:glibc.malloc.mmap_max=0 $NT "${nt[@]}" -J $D/nt-malloc-r$2.json > $D/nt-malloc-r$2.log 2>&1 ;;
    fb-noucx) taskset -c 3 "${M[@]}" --mca pml ob1 -x UCX_MEM_MALLOC_HOOKS=no -x UCX_MEM_EVENTS=no "${fb[@]}" --run-id fb-noucx-r$2 > $D/fb-noucx-r$2.log 2>&1 ;;
    fb-c1) taskset -c 3 "${M[@]}" -x CUDA_DEVICE_MAX_CONNECTIONS=1 "${fb[@]}" --run-id fb-c1-r$2 > $D/fb-c1-r$2.log 2>&1 ;;
    nt-c1) taskset -c 3 env CUDA_DEVICE_MAX_CONNECTIONS=1 $NT "${nt[@]}" -J $D/nt-c1-r$2.json > $D/nt-c1-r$2.log 2>&1 ;;
    nt-cpu) taskset -c 3 $NT "${nt[@]}" -C 1 -J $D/nt-cpu-r$2.json > $D/nt-cpu-r$2.log 2>&1 ;;
    nt-env) taskset -c 3 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV,NET,P2P,SHM NCCL_DEBUG_FILE=/tmp/ntenv.%h.%p.log \
      $NT "${nt[@]}" -J $D/nt-env-r$2.json > $D/nt-env-r$2.log 2>&1 ;;
    nt-c0) taskset -c 3 $NT "${nt[@]}" -c 0 -J $D/nt-c0-r$2.json > $D/nt-c0-r$2.log 2>&1 ;;
    fb-reuse) taskset -c 3 "${M[@]}" "${fb[@]}" --reuse-buffers --run-id fb-reuse-r$2 > $D/fb-reuse-r$2.log 2>&1 ;;
    fb-pin) "${M[@]}" taskset -c 3 "${fb[@]}" --run-id fb-pin-r$2 > $D/fb-pin-r$2.log 2>&1 ;;
    nt-rest) taskset -c 3 env LD_PRELOAD=/tmp/rest.so $NT "${nt[@]}" -J $D/nt-rest-r$2.json > $D/nt-rest-r$2.log 2>&1 ;;
    fb-shm) taskset -c 3 "${M[@]}" "${fb0[@]}" --results-dir /dev/shm/fbab --run-id fb-shm-r$2 > $D/fb-shm-r$2.log 2>&1
      mv /dev/shm/fbab/fb-shm-r$2 $D/ ;;
    fb-ct) taskset -c 3 "${M[@]}" -x LD_PRELOAD=/tmp/calltime.so -x CALLTIME_OUT=$D/ct-fb-r$2.csv "${fb[@]}" --run-id fb-ct-r$2 > $D/fb-ct-r$2.log 2>&1 ;;
    nt-ct) taskset -c 3 env LD_PRELOAD=/tmp/calltime.so CALLTIME_OUT=$D/ct-nt-r$2.csv $NT "${nt[@]}" -J $D/nt-ct-r$2.json > $D/nt-ct-r$2.log 2>&1 ;;
    fb-pad) taskset -c 3 "${M[@]}" -x LD_PRELOAD=/tmp/pad.so -x PAD_BYTES=random -x PAD_OUT=$D/pad-fb-pad-r$2.txt "${fb[@]}" --run-id fb-pad-r$2 > $D/fb-pad-r$2.log 2>&1 ;;
    nt-pad) taskset -c 3 env LD_PRELOAD=/tmp/pad.so PAD_BYTES=random PAD_OUT=$D/pad-nt-pad-r$2.txt $NT "${nt[@]}" -J $D/nt-pad-r$2.json > $D/nt-pad-r$2.log 2>&1 ;;
    fb-ntl) taskset -c 3 "${M[@]}" "${fb[@]/#rank/nccl-tests}" -a 1 --run-id fb-ntl-r$2 > $D/fb-ntl-r$2.log 2>&1 ;;
    nt-free) $NT "${nt[@]}" -J $D/nt-free-r$2.json > $D/nt-free-r$2.log 2>&1 ;;
    fb-rep1) taskset -c 3 "${M[@]}" "${fb[@]}" --repeat 1 --run-id fb-rep1-r$2 > $D/fb-rep1-r$2.log 2>&1 ;;
  esac
}
VARIANTS=${VARIANTS:-fb fb-noplug nt nt-plug}
if [ -n "${THREADS:-}" ]; then
  { echo "== mpirun child's allowed CPUs under taskset -c 3 mpirun --bind-to none:"
    taskset -c 3 "${M[@]}" grep Cpus_allowed_list /proc/self/status
    echo "== fb"; taskset -c 3 python3 scripts/instruments/threads.py fabricbench "${M[@]}" "${fb[@]}" --run-id thr-fb
    echo "== nt"; taskset -c 3 python3 scripts/instruments/threads.py all_reduce_perf $NT "${nt[@]}"
  } > $D/threads.txt 2>&1
  rm -rf $D/thr-fb
fi
# STRACE=1: one fb and one nt under strace -f -c (system calls by count and time, every thread): where does each
# process block between its loops?
if [ -n "${STRACE:-}" ]; then
  if command -v strace > /dev/null; then
    taskset -c 3 "${M[@]}" strace -f -c -o $D/strace-fb.txt "${fb[@]}" --run-id str-fb > /dev/null 2>&1
    taskset -c 3 strace -f -c -o $D/strace-nt.txt $NT "${nt[@]}" > /dev/null 2>&1
    rm -rf $D/str-fb
  else
    echo "no strace on this host" > $D/strace-fb.txt
  fi
fi
for r in $(seq 1 ${ROUNDS:-12}); do
  [ $((SECONDS-t0)) -gt ${BUDGET_S:-160} ] && break
  for v in $(printf "%s\n" $VARIANTS | shuf); do run $v $r; echo "$r $v" >> $D/order.txt; done
  echo "round $r done $((SECONDS-t0))s"
done
find $D -name plots -type d -prune -exec rm -rf {} +
find $D -name '*.log' -size +200k -delete
tar czf $OUT/diag.tgz -C $OUT diag && rm -rf $D; echo "done $((SECONDS-t0))s"

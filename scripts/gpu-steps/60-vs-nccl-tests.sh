#!/usr/bin/env bash
# FB_STEP_LIMIT=420
# Issue 33: fabricbench beside nccl-tests on this host, interleaved, the same process layout ($NP ranks,
# one GPU each), 8 B .. 1 GiB, AllReduce / AllGather / ReduceScatter / SendRecv (P2P ring), -n 40 -w 10:
#   round r = 1 .. ROUNDS (default 2):
#     fabricbench --timer nccl-tests -a 1;  nccl-tests (its host clock);
#     fabricbench --timer nccl-tests -a 1 -w 0 --repeat 1 (nccl-tests' sequence per size: no
#       warm-up batch at the size, one operation at position 0, then one timed batch);
#     fabricbench --timer rank --per-op;  nccl-tests -I 1 (CUDA events between iterations)
#   (fabricbench's nccl buffers move as nccl-tests' do by default: no --rotate-buffers needed; every
#   fabricbench run is checked to say timer nccl-tests / rank-events and buffers "moved by" in its rows)
# then scripts/vs_nccl_tests.py writes $OUT/results/<stamp>-<host>-vs-nccl-tests/{vs-nccl-tests.md,table.csv}:
# every size and placement, each round's fabricbench time / nccl-tests time (host clock; batch events
# vs -I mean; --per-op p50 vs -I p50), nccl-tests' own round-to-round ratio, and the bound (within 2 %
# or 0.5 us) per row. nccl-tests is a measuring instrument, never part
# of the product: built from its own source outside the tree (NCCL_TESTS=<folder with *_perf>, default
# .nccl-tests/build, an ignored folder). Its raw logs go to $OUT/nccl-tests/. Without it: skipped, exit 0.
# On more than one rank nccl-tests must be built with MPI=1 (it is then started with $MPI).
# PIN=<cpu list> (one rank only): both tools run under `taskset -c PIN`, so both main threads sit on the
# same cores; unpinned, a process's small-operation time on a VM varies with where it lands (5 vs 7 us).
set -u
NT=${NCCL_TESTS:-.nccl-tests/build}
if [ ! -x "$NT/all_reduce_perf" ]; then
  echo "skipped: no nccl-tests in $NT (build it: make MPI=0 CUDA_HOME=... NCCL_HOME=...; NCCL_TESTS=<its build>)"
  exit 0
fi
stamp=${FB_RUN_ID:-$(date -u +%Y%m%d)}
host=${FB_GPU_MODEL:-gpu}x${NGPU:-1}
cmp="$OUT/results/$stamp-$host-vs-nccl-tests"
logs="$OUT/nccl-tests"
mkdir -p "$logs" "$cmp"
sweep=(-b 8 -e 1G -f 2 -n 40 -w 10)
common=(--transport nccl --collective allreduce,allgather,reducescatter,p2pring "${sweep[@]}" --placement both
        --results-dir "$OUT/results" ${SINGLE:-})
ntl=()
[ "${NP:-1}" -gt 1 ] && ntl=($MPI)
pin=()
if [ -n "${PIN:-}" ]; then
  [ "${NP:-1}" -gt 1 ] && { echo "60-vs-nccl-tests: PIN is for one rank only (NP=${NP})" >&2; exit 2; }
  pin=(taskset -c "$PIN")
fi
tests=(all_reduce all_gather reduce_scatter sendrecv)
rc=0
# The GPU's clocks every 20 ms while both tools run (clocks.csv beside the tables): this H100 idles its SM
# clock at 345 MHz and takes ~0.3 s to reach 1980, and a one-rank SendRecv (a copy by a few SMs) runs at
# the SM clock; with the sampler running the clock stayed at 1980 MHz from the first run on (2026-12-06).
clk=""
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,pstate --format=csv -lms 20 > "$cmp/clocks.csv" 2>&1 &
  clk=$!
  trap '[ -n "$clk" ] && kill "$clk" 2>/dev/null' EXIT
fi
rounds=${ROUNDS:-2}
fbh=() fbg=() fbw=()
for r in $(seq 1 "$rounds"); do
  fbh+=("$OUT/results/$stamp-$host-fb-host-r$r") fbg+=("$OUT/results/$stamp-$host-fb-gpu-r$r")
  fbw+=("$OUT/results/$stamp-$host-fb-host-w0-r$r")
  "${pin[@]}" $MPI $B/benchmarks/fabricbench "${common[@]}" --timer nccl-tests -a 1 --run-id "$stamp-$host-fb-host-r$r" \
    > "$logs/fabricbench-host-r$r.log" 2>&1 || { echo "fabricbench nccl-tests timer r$r: exit $?"; rc=1; }
  for t in "${tests[@]}"; do
    "${pin[@]}" "${ntl[@]}" "$NT/${t}_perf" "${sweep[@]}" -g 1 > "$logs/$t-r$r.log" 2>&1 || { echo "$t r$r: exit $?"; rc=1; }
  done
  "${pin[@]}" $MPI $B/benchmarks/fabricbench "${common[@]}" --timer nccl-tests -a 1 -w 0 --repeat 1 --run-id "$stamp-$host-fb-host-w0-r$r" \
    > "$logs/fabricbench-host-w0-r$r.log" 2>&1 || { echo "fabricbench nccl-tests timer -w 0 r$r: exit $?"; rc=1; }
  "${pin[@]}" $MPI $B/benchmarks/fabricbench "${common[@]}" --timer rank --per-op --run-id "$stamp-$host-fb-gpu-r$r" \
    > "$logs/fabricbench-gpu-r$r.log" 2>&1 || { echo "fabricbench rank timer r$r: exit $?"; rc=1; }
  for t in "${tests[@]}"; do
    rm -f "$logs/$t-I-r$r.json"
    "${pin[@]}" "${ntl[@]}" "$NT/${t}_perf" "${sweep[@]}" -g 1 -I 1 -J "$logs/$t-I-r$r.json" > "$logs/$t-I-r$r.log" 2>&1 ||
      { echo "$t -I r$r: exit $?"; rc=1; }
  done
done
if [ -n "$clk" ]; then kill "$clk" 2>/dev/null; wait "$clk" 2>/dev/null; clk=""; fi
cmdline="${PIN:+PIN=$PIN }ROUNDS=$rounds NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-unset} bash scripts/gpu-steps/60-vs-nccl-tests.sh (B=$B MPI='$MPI' NP=${NP:-1}); fabricbench ${common[*]} --timer nccl-tests -a 1 [-w 0 --repeat 1] | --timer rank --per-op; nccl-tests <test>_perf ${sweep[*]} -g 1 [-I 1 -J]"
python3 scripts/vs_nccl_tests.py --out "$cmp" --command "$cmdline" --logs "$logs" \
  --fb-host "${fbh[@]}" --fb-gpu "${fbg[@]}" --fb-host-w0 "${fbw[@]}" || rc=$?
exit $rc

#!/usr/bin/env bash
# FB_STEP_LIMIT=200
# Issue 13: the two timers side by side on NVLink. nccl --path nvlink, the four collectives, 8 B .. 8 GiB,
# --repeat 3 (median and spread per row) and --per-op (p50/p99 from events between operations), once
# with --timer gpu (events per rank, max over ranks: -a 3) and once with --timer host (nccl-tests' method:
# barrier, host clock until the stream is synchronised, average over ranks: -a 1). Then fabricbench-report
# puts the two runs side by side (busbw per size, host / gpu ratio) in $OUT/results/timers-cmp/.
# Check: both runs exit 0, wrong = 0; every row says timer=gpu/rank_time=max resp. timer=host/avg with
# repeats=3; comparison.md has the host / gpu ratios. Expected ~60-120 s on 2xH200.
set -u
stamp=${FB_RUN_ID:-$(date -u +%Y%m%d)}
common=(--transport nccl --path nvlink --collective allreduce,allgather,reducescatter,p2pring
        -b 8 -e 8G -f 2 --placement out -n 20 -w 5 --repeat 3 --per-op --results-dir "$OUT/results")
rc=0
$MPI $B/benchmarks/fabricbench "${common[@]}" --timer gpu --run-id "$stamp-h200x2-timer-gpu" || rc=$?
echo "timer gpu: exit $rc"
rc2=0
$MPI $B/benchmarks/fabricbench "${common[@]}" --timer host --run-id "$stamp-h200x2-timer-host" || rc2=$?
echo "timer host: exit $rc2"
$B/tools/fabricbench-report "$OUT/results/$stamp-h200x2-timer-gpu" "$OUT/results/$stamp-h200x2-timer-host" \
  -o "$OUT/results/$stamp-h200x2-timers-cmp" --baseline "$stamp-h200x2-timer-gpu" || echo "fabricbench-report: exit $?"
[ -f "$OUT/results/$stamp-h200x2-timers-cmp/comparison.md" ] && sed -n '1,400p' "$OUT/results/$stamp-h200x2-timers-cmp/comparison.md"
exit $(( rc != 0 ? rc : rc2 ))

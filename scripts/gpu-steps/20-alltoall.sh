#!/usr/bin/env bash
# FB_STEP_LIMIT=150
# Issue 11: AllToAll over NCCL and over the raw CUDA IPC backend side by side in ONE run (2 ranks, one
# GPU each, NVLink), 8 B .. 1 GiB, x2 per row, out-of-place (AllToAll has no in-place form); then a
# short Broadcast run (root 1) over both. report.md of each run has the per-size ratios cuda / nccl
# (busbw, and time for the small sizes). Check: both runs exit 0 with wrong = 0 in every row; the
# alltoall report.md table 'ratios to NCCL' has one line per size. Expected ~40-80 s on 2xH200.
set -u
stamp=${FB_RUN_ID:-$(date -u +%Y%m%d)}
common=(--transport nccl,cuda --path nvlink --placement out -n 20 -w 5 --results-dir "$OUT/results")
rc=0
$MPI $B/benchmarks/fabricbench "${common[@]}" --collective alltoall -b 8 -e 1G -f 2 \
  --run-id "$stamp-h200x2-alltoall-cuda-vs-nccl" || rc=$?
echo "alltoall cuda vs nccl: exit $rc"
rc2=0
$MPI $B/benchmarks/fabricbench "${common[@]}" --collective broadcast --root 1 -b 8 -e 256M -f 4 \
  --run-id "$stamp-h200x2-broadcast-cuda-vs-nccl" || rc2=$?
echo "broadcast cuda vs nccl: exit $rc2"
for r in alltoall broadcast; do
  f="$OUT/results/$stamp-h200x2-$r-cuda-vs-nccl/report.md"
  [ -f "$f" ] && { echo "== $f"; sed -n '1,200p' "$f"; }
done
exit $(( rc != 0 ? rc : rc2 ))

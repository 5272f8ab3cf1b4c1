#!/usr/bin/env bash
# FB_STEP_LIMIT=150
# Issue 11: AllToAll over NCCL and over the raw CUDA IPC backend side by side in ONE run (2 ranks, one
# GPU each, NVLink), 8 B .. 1 GiB, x2 per row, out-of-place (AllToAll has no in-place form); then a
# short Broadcast run (root 1) over both. report.md of each run has the per-size ratios cuda / nccl
# (busbw, and time for the small sizes). Check: both runs exit 0 with wrong = 0 in every row; the
# alltoall report.md table 'ratios to NCCL' has one line per size. Expected ~40-80 s on 2xH200.
# On a 1-GPU host ($NP = 1) both run one rank (--allow-single-rank, path auto, 8 B .. 64 MiB): the data
# are verified, but one rank moves nothing between GPUs, so that run is no comparison of fabrics.
set -u
stamp=${FB_RUN_ID:-$(date -u +%Y%m%d)}-${FB_GPU_MODEL:-gpu}x${NP:-2}
if [ "${NP:-2}" = 1 ]; then
  common=(--transport nccl,cuda --path auto --placement out -n 20 -w 5 --results-dir "$OUT/results" $SINGLE)
  emax=64M bmax=64M
else
  common=(--transport nccl,cuda --path nvlink --placement out -n 20 -w 5 --results-dir "$OUT/results")
  emax=1G bmax=256M
fi
rc=0
$MPI $B/benchmarks/fabricbench "${common[@]}" --collective alltoall -b 8 -e $emax -f 2 \
  --run-id "$stamp-alltoall-cuda-vs-nccl" || rc=$?
echo "alltoall cuda vs nccl: exit $rc"
rc2=0
$MPI $B/benchmarks/fabricbench "${common[@]}" --collective broadcast --root $((${NP:-2} - 1)) -b 8 -e $bmax -f 4 \
  --run-id "$stamp-broadcast-cuda-vs-nccl" || rc2=$?
echo "broadcast cuda vs nccl: exit $rc2"
for r in alltoall broadcast; do
  f="$OUT/results/$stamp-$r-cuda-vs-nccl/report.md"
  [ -f "$f" ] && { echo "== $f"; sed -n '1,200p' "$f"; }
done
exit $(( rc != 0 ? rc : rc2 ))

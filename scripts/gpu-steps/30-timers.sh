#!/usr/bin/env bash
# FB_STEP_LIMIT=200
# Issue 13: the two timers side by side on NVLink. nccl --path nvlink, the four collectives, 8 B .. 8 GiB,
# --repeat 3 (median and spread per row) and --per-op (p50/p99 from events between operations), once
# with --timer rank (events per rank, max over ranks: -a 3) and once with --timer nccl-tests (nccl-tests' method:
# barrier, host clock until the stream is synchronised, average over ranks: -a 1). Then fabricbench-report
# puts the two runs side by side in $OUT/results/<stamp>-<gpu>x<np>-timers-cmp/, and a table (log only) gives
# per collective and size both busbw medians with their spread, host / gpu and p50/p99: README's table.
# Check: both runs exit 0, wrong = 0; console headers say timer=rank-events rank_time=max resp.
# timer=nccl-tests rank_time=avg, repeats=3; % of nominal on every row (NVLink links x rate); the first two
# runs' rows say buffers=moved by ... (the default), the third run's (--reuse-buffers) cache-warm.
# (Run ids keep their old names -timer-gpu / -timer-host so earlier results line up.) Expected ~90-150 s on 2xH200.
set -u
if [ "${NP:-2}" = 1 ]; then  # --path nvlink needs a second GPU; one rank's timers: 60-vs-nccl-tests
  echo "skipped: the timers on NVLink need 2 GPUs (this host runs 1 rank); one rank's timers are compared in 60-vs-nccl-tests"
  exit 0
fi
stamp=${FB_RUN_ID:-$(date -u +%Y%m%d)}
common=(--transport nccl --path nvlink --collective allreduce,allgather,reducescatter,p2pring
        -b 8 -f 2 --placement out -n 20 -w 5 --repeat 3 --per-op --results-dir "$OUT/results")
rc=0
$MPI $B/benchmarks/fabricbench "${common[@]}" -e 8G --timer rank --run-id "$stamp-${FB_GPU_MODEL:-gpu}x${NP:-2}-timer-gpu" || rc=$?
echo "timer rank: exit $rc"
rc2=0
$MPI $B/benchmarks/fabricbench "${common[@]}" -e 8G --timer nccl-tests --run-id "$stamp-${FB_GPU_MODEL:-gpu}x${NP:-2}-timer-host" || rc2=$?
echo "timer nccl-tests: exit $rc2"
# nccl-tests moves its buffers by one size per iteration, so no operation finds its data in L2 (60 MB on
# H200), and so do the runs above (the default). This run keeps one cache-warm buffer (--reuse-buffers)
# to show the difference; up to 256 MiB only (above, nothing fits in L2 anyway). The folder keeps its old name.
rc3=0
$MPI $B/benchmarks/fabricbench "${common[@]}" -e 256M --timer nccl-tests --reuse-buffers \
  --run-id "$stamp-${FB_GPU_MODEL:-gpu}x${NP:-2}-timer-host-rotate" || rc3=$?
echo "timer nccl-tests, one reused buffer: exit $rc3"
# Side by side (busbw per size, both runs as columns) by the report tool.
$B/tools/fabricbench-report "$OUT/results/$stamp-${FB_GPU_MODEL:-gpu}x${NP:-2}-timer-gpu" "$OUT/results/$stamp-${FB_GPU_MODEL:-gpu}x${NP:-2}-timer-host" \
  -o "$OUT/results/$stamp-${FB_GPU_MODEL:-gpu}x${NP:-2}-timers-cmp" --no-plots || echo "fabricbench-report: exit $?"
# The README table: per collective and size, busbw median [slowest-fastest batch] of each timer, host / gpu,
# and the time per operation (log only).
python3 - "$OUT/results/$stamp-${FB_GPU_MODEL:-gpu}x${NP:-2}-timer-gpu/table.csv" "$OUT/results/$stamp-${FB_GPU_MODEL:-gpu}x${NP:-2}-timer-host/table.csv" \
  "$OUT/results/$stamp-${FB_GPU_MODEL:-gpu}x${NP:-2}-timer-host-rotate/table.csv" <<'PY' || echo "table: python3 failed"
import csv, sys
def load(p):
    return {(r["coll"], int(r["size_bytes"])): r for r in csv.DictReader(open(p))}
g, h = load(sys.argv[1]), load(sys.argv[2])
try:
    rot = load(sys.argv[3])
except OSError:
    rot = {}
def bw(r):
    return f'{float(r["busbw_GBps"]):.2f} [{float(r["busbw_min_GBps"] or 0):.2f}-{float(r["busbw_max_GBps"] or 0):.2f}]'
def us(r):
    return f'{float(r["time_us"]):.2f} [{float(r["time_us_min"] or 0):.2f}-{float(r["time_us_max"] or 0):.2f}]'
def pct(r):
    return "/".join(f'{float(r[k]):.2f}' if r[k] else "-" for k in ("p50_us", "p99_us"))
def ratio(a, b):
    return f'{float(b["busbw_GBps"]) / float(a["busbw_GBps"]):.3f}' if a and b and float(a["busbw_GBps"]) > 0 else "-"
print("| coll | size | gpu -a 3: busbw GB/s [min-max] | host -a 1: busbw [min-max] | host / gpu | host -a 1 one reused buffer: busbw [min-max] | reused / gpu | time us gpu [min-max] | time us host [min-max] | p50/p99 us gpu | p50/p99 us host |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for k in sorted(g, key=lambda k: (k[0], k[1])):
    if k not in h:
        continue
    a, b, c = g[k], h[k], rot.get(k)
    print(f'| {k[0]} | {k[1]} | {bw(a)} | {bw(b)} | {ratio(a, b)} | {bw(c) if c else "-"} | {ratio(a, c)} '
          f'| {us(a)} | {us(b)} | {pct(a)} | {pct(b)} |')
PY
exit $(( rc != 0 ? rc : rc2 != 0 ? rc2 : rc3 ))

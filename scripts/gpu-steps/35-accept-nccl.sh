#!/usr/bin/env bash
# FB_STEP_LIMIT=150
# Issue 32: --accept's pair test over NCCL (ncclSend/ncclRecv on the training path). Two ranks as two
# nodes (--accept-ranks-as-nodes), each with its own NCCL_HOSTID so that NCCL treats them as separate
# nodes and connects them over its network transport; on a 1-GPU host both share GPU 0 (function,
# not speed). Collectives phase over tcp only. Check: exit 0; the console has "# pairs over nccl ("
# (measured, not skipped); acceptance.json's nccl path has a finite bandwidth and latency for the
# pair and no skip reason. Two processes on one GPU time-slice it: the figures are not the path's.
set -u
stamp=${FB_RUN_ID:-$(date -u +%Y%m%d)}-${FB_GPU_MODEL:-gpu}x${NP:-2}
id=$stamp-accept-nccl
rc=0
timeout 120 mpirun --oversubscribe --bind-to none -np 2 -x NCCL_NVLS_ENABLE=0 \
  bash -c 'NCCL_HOSTID=fb-accept-$OMPI_COMM_WORLD_RANK exec "$0" "$@"' "$B/benchmarks/fabricbench" \
  --accept --accept-ranks-as-nodes --accept-paths nccl,tcp --accept-bw-bytes 16M --accept-bw-iters 5 \
  --accept-lat-iters 50 --transport tcp --collective allreduce -b 8 -e 1M -f 8 -n 5 -w 1 \
  --results-dir "$OUT/results" --run-id "$id" > "$OUT/accept-nccl.log" 2>&1 || rc=$?
echo "accept over nccl,tcp (2 ranks as nodes): exit $rc"
grep -E "^# (pairs|acceptance|suspect)" "$OUT/accept-nccl.log" | sed 's/^/    /'
ok=1
[ "$rc" = 0 ] || ok=0
grep -q "^# pairs over nccl (" "$OUT/accept-nccl.log" || { echo "    no measured nccl pair line"; ok=0; }
python3 - "$OUT/results/$id/acceptance.json" <<'PY' || ok=0
import json, math, sys
a = json.load(open(sys.argv[1]))
p = [x for x in a["paths"] if x["path"] == "nccl"]
assert p, "no nccl path in acceptance.json"
p = p[0]
assert not p["skipped"], "nccl skipped: " + p["skipped"]
bw, lat = p["matrix_bw_GBps"][0][1], p["matrix_lat_us"][0][1]
assert bw is not None and math.isfinite(bw) and bw > 0, f"bandwidth {bw}"
assert lat is not None and math.isfinite(lat) and lat > 0, f"latency {lat}"
print(f"    nccl pair 0-1: {bw:.3f} GB/s each way, latency floor {lat:.1f} us; label: {p['label']}")
PY
[ "$ok" = 1 ] && echo "accept-nccl: pass" || { echo "accept-nccl: FAIL"; tail -30 "$OUT/accept-nccl.log"; exit 1; }

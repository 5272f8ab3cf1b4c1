#!/usr/bin/env bash
# FB_STEP_LIMIT=150
# The code the cuda and nccl collectives share (lib/collectives/gpu_ops.h: the --per-op event loop,
# the check's wrong-element count) and fabricbench-peer's result folder (lib/report/run_folder), on
# whatever GPUs the host has. 1) fabricbench over nccl and cuda, AllReduce and AllToAll, 8 B .. 16 MiB,
# --per-op (p50/p99 columns) with the check after every size; 2) the same once with one element
# the check must count wrong elements (--fb-test-corrupt 0:5: exit != 0, wrong > 0 on its rows); 3)
# fabricbench-peer --tests host,reduce (one GPU suffices) writing results/<id>/ with table.csv, run.json.
# Check: run 1 exit 0 and wrong = 0 on every row, p50/p99 present; run 2 exit != 0 with wrong > 0;
# run 3 exit 0 and its folder holds table.csv and run.json with a fingerprint; --gpus 0,7: exit 2, no folder.
set -u
stamp=${FB_RUN_ID:-$(date -u +%Y%m%d)}-${FB_GPU_MODEL:-gpu}x${NP:-2}
path=$([ "${NP:-2}" = 1 ] && echo auto || echo nvlink)
common=(--transport nccl,cuda --path $path --collective allreduce,alltoall -b 8 -e 16M -f 4 -n 10 -w 2
        --per-op --results-dir "$OUT/results" ${SINGLE:-})
rc=0
$MPI $B/benchmarks/fabricbench "${common[@]}" --run-id "$stamp-perop" || rc=$?
echo "per-op nccl,cuda: exit $rc"
python3 - "$OUT/results/$stamp-perop/table.csv" <<'PY' || rc=1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bad = [r for r in rows if r["wrong"] not in ("0",)]
cols = [c for c in rows[0] if "p50" in c or "p99" in c] if rows else []
print(f"per-op rows {len(rows)}, impls {sorted({r['impl'] for r in rows})}, rows with wrong != 0: {len(bad)}, p50/p99 columns: {cols}")
sys.exit(1 if bad or not rows or not cols else 0)
PY
rc2=0
$MPI $B/benchmarks/fabricbench "${common[@]}" --fb-test-corrupt 0:5 \
  --run-id "$stamp-perop-corrupt" > /dev/null 2>&1 || rc2=$?
python3 - "$OUT/results/$stamp-perop-corrupt/table.csv" <<'PY'
import csv, sys
try:
    rows = list(csv.DictReader(open(sys.argv[1])))
except OSError as e:
    sys.exit(f"no table: {e}")
print("corrupted run: rows", len(rows), "wrong per row:", [r["wrong"] for r in rows])
PY
echo "corrupted run: exit $rc2 (must not be 0)"
rc3=0
$B/benchmarks/peer/fabricbench-peer --tests host,reduce -b 64M -n 10 --results-dir "$OUT/results" \
  --run-id "$stamp-peer-folder" || rc3=$?
ls -la "$OUT/results/$stamp-peer-folder" 2>&1
echo "peer: exit $rc3"
# A GPU that does not exist is bad input: one line, exit 2, and no result folder.
rc4=0
$B/benchmarks/peer/fabricbench-peer --gpus 0,7 --results-dir "$OUT/results" --run-id "$stamp-peer-badgpu" || rc4=$?
[ -e "$OUT/results/$stamp-peer-badgpu" ] && { echo "peer --gpus 0,7: a result folder was made"; rc4=99; }
echo "peer --gpus 0,7: exit $rc4 (must be 2)"
[ "$rc" = 0 ] && [ "$rc2" != 0 ] && [ "$rc3" = 0 ] && [ "$rc4" = 2 ]

#!/usr/bin/env bash
# FB_STEP_LIMIT=300
# The main job over every path this GPU host has (README command 1 on a GPU node).
run_id=${FB_RUN_ID:-$(date -u +%Y%m%d)-${FB_GPU_MODEL:-gpu}x${NP:-2}-auto}
$MPI $B/benchmarks/fabricbench --transport auto --collective all -b 8 -e 256M -f 4 -n 10 -w 2 \
  --results-dir "$OUT/results" --run-id "$run_id" ${SINGLE:-}

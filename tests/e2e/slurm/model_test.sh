#!/usr/bin/env bash
# model_test.sh - the scaling model checked against the lab, short enough for CI: tcp AllReduce,
# AllGather and ReduceScatter on 2 and 3 lab nodes (one rank each), NICs shaped to 200 Mbit/s, sizes 2..16 MiB
# (per-step chunks above tc's 512 KB burst, which lets smaller chunks pass faster than the rate);
# fabricbench-model fits the 2-node run only and predicts the 3-node run: median |error| <= 5 %, every
# size within 15 % (validate --require; the committed validation holds the issue's 10 % per size: on a
# shared 2-core machine one delayed batch of a 16 MiB size was seen 12 % off). The full validation (1 Gbit/s and 200 Mbit/s, 2-4 nodes,
# 1 and 2 ranks per node, 4 KiB..64 MiB, mpi rows) is committed under results/ (see README).
# Needs root (exit 77 without, like every lab test). FB_TEST_BIN and FB_MODEL_BIN: the binaries.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespaces, tc)"; exit 77; }
MODEL=${FB_MODEL_BIN:-$SRC/build/tools/fabricbench-model}
[ -x "$MODEL" ] || { echo "FAIL: fabricbench-model not found: $MODEL"; exit 1; }
WORK=$(mktemp -d /tmp/fabricbench-modeltest.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
rc=0
# Progress as a user's run has it (auto: these 1-rank nodes spin); model-lab-runs.sh's full series blocks.
FB_PROGRESS=${FB_PROGRESS:-auto} FB_BIN=${FB_TEST_BIN:-$SRC/build/benchmarks/fabricbench} FB_TRANSPORTS=tcp FB_SIZES="-b 2M -e 16M -f 2" FB_ITERS=5 \
  FB_WARMUP=1 "$SRC/scripts/model-lab-runs.sh" 200mbit "$WORK/results" ci "2x1 3x1" || rc=$?
[ "$rc" = 77 ] && { echo "SKIP: the lab cannot run here (see above)"; exit 77; }
[ "$rc" = 0 ] || { echo "FAIL: lab runs exited $rc"; exit 1; }
"$MODEL" validate --inter "$WORK/results/ci-200mbit-2x1" --check "$WORK/results/ci-200mbit-3x1" --series tcp --band 2M:16M \
  --max-err 15 --median-err 5 --no-plots --require -o "$WORK/model" || { echo "FAIL: the model missed the bound (above)"; exit 1; }
grep -q "^projected," "$WORK/model/validation.csv" || { echo "FAIL: no projected rows in validation.csv"; exit 1; }
n=$(grep -c "^projected,.*,yes," "$WORK/model/validation.csv")
[ "$n" = 12 ] || { echo "FAIL: expected 12 rows in the band (3 collectives x 4 sizes), got $n"; exit 1; }
echo "RESULT: model passed (2-node fit predicts 3 nodes: median |error| <= 5 %, every size within 15 %)"

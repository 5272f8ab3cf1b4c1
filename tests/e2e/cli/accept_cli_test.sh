#!/usr/bin/env bash
# accept_cli_test.sh FABRICBENCH - fabricbench --accept end to end on this host: np 16, each rank
# a node (--accept-ranks-as-nodes), so the control plane (circle schedule over 16 units, 15 rounds
# of 8 pairs at once, retests, the collectives phase) runs at scale; acceptance.json holds every
# pair once per path, evidence.json's hashes match the files; --accept-baseline writes an
# expectation file, a baseline demanding 1000x fails with exit 1 naming the rows; bad input
# (unknown path, malformed expectation file, one node) is one line and exit 2 with no
# measurement; --doctor --require gpu on a host without a GPU fails naming the node.
# The timing numbers here are noise (2 shared cores): the exit is 0 or 1, never asserted as 0.
set -u
FB=$1
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
unset NCCL_SOCKET_IFNAME
MPIRUN="${FB_TEST_MPIRUN:-mpirun}"
NP=${FB_ACCEPT_NP:-16}
bad=0
fail() { echo "FAIL: $*"; bad=1; }
SMALL=(--accept-bw-bytes 256K --accept-bw-iters 3 --accept-lat-iters 20 --accept-retests 1 -b 8 -e 1K --collective allreduce -n 5 -w 1 --transport tcp)

start=$(date +%s)
timeout 120 "$MPIRUN" --oversubscribe --bind-to none -np "$NP" "$FB" --accept --accept-ranks-as-nodes "${SMALL[@]}" \
  --results-dir "$W" --run-id a16 > "$W/out1" 2>&1; rc=$?
echo "np $NP: exit $rc in $(( $(date +%s) - start )) s"
grep -E '^# (pairs|acceptance|suspect|tcp retest|mpi retest)' "$W/out1" | head -20
[ "$rc" = 0 ] || [ "$rc" = 1 ] || { tail -30 "$W/out1"; fail "np $NP: exit $rc, expected 0 or 1"; }
python3 - "$W/a16" "$NP" <<'PY' || fail "acceptance.json / evidence.json"
import hashlib, json, os, sys
d, n = sys.argv[1], int(sys.argv[2])
a = json.load(open(os.path.join(d, "acceptance.json")))
assert a["schema"] == "fabricbench-acceptance/1"
assert len(a["units"]) == n, len(a["units"])
s = a["schedule"]
assert s["rounds"] == (n - 1 if n % 2 == 0 else n) and s["pairs"] == n * (n - 1) // 2, s
assert len(s["round_ms"]) == s["rounds"], s["round_ms"]
paths = {p["path"]: p for p in a["paths"]}
for name in ("tcp", "mpi"):
    p = paths[name]
    assert p["skipped"] == "", p["skipped"]
    bw, lat = p["matrix_bw_GBps"], p["matrix_lat_us"]
    for i in range(n):
        for j in range(n):
            if i == j:
                assert bw[i][j] is None
                continue
            assert bw[i][j] is not None and bw[i][j] > 0, (name, i, j, bw[i][j])
            assert lat[i][j] is not None and lat[i][j] > 0, (name, i, j, lat[i][j])
            assert bw[i][j] == bw[j][i] and lat[i][j] == lat[j][i]
    assert p["bw"]["pairs"] == n * (n - 1) // 2
assert paths["verbs"]["skipped"] != "" or paths["verbs"].get("matrix_bw_GBps")
assert a["verdict"]["exit_code"] in (0, 1) and a["verdict"]["status"] in ("accepted", "not accepted")
assert a["collectives"]["exit_code"] == 0, a["collectives"]
assert os.path.exists(os.path.join(d, "collectives", "table.csv"))
assert os.path.exists(os.path.join(d, "doctor.json"))
md = open(os.path.join(d, "report.md")).read()
for need in ("## Thresholds used", "## Suspects", "## Pairs over tcp", "## Pairs over mpi", "unit x unit"):
    assert need in md, need
ev = json.load(open(os.path.join(d, "evidence.json")))
for rel in ("acceptance.json", "report.md", "doctor.json", "collectives/table.csv", "heatmap-tcp-bw.dat"):
    assert rel in ev["files"], rel
for rel, h in ev["files"].items():
    assert hashlib.sha256(open(os.path.join(d, rel), "rb").read()).hexdigest() == h, rel
print("acceptance.json: %d units, %d rounds, verdict %s, %d suspect(s); evidence: %d files hashed"
      % (n, s["rounds"], a["verdict"]["status"], len(a["suspects"]), len(ev["files"])))
PY

# "accept this as the baseline": expect.json from the folder; a copy demanding 1000x fails (exit 1)
"$MPIRUN" -np 1 "$FB" --accept-baseline "$W/a16" > "$W/out2" 2>&1; rc=$?
cat "$W/out2"
[ "$rc" = 0 ] && [ -s "$W/a16/expect.json" ] || fail "--accept-baseline: exit $rc"
python3 - "$W/a16/expect.json" "$W/greedy.json" <<'PY' || fail "expect.json"
import json, sys
e = json.load(open(sys.argv[1]))
assert e["schema"] == "fabricbench-expect/1" and e["pairs"] and e["collectives"], e.keys()
for p in e["pairs"]:
    if "min_GBps" in p: p["min_GBps"] *= 1000
e["pairs"] = [p for p in e["pairs"] if p["path"] == "tcp"]
e["collectives"] = e["collectives"][:1]
json.dump(e, open(sys.argv[2], "w"))
PY
timeout 90 "$MPIRUN" --oversubscribe --bind-to none -np 4 "$FB" --accept --accept-ranks-as-nodes "${SMALL[@]}" --accept-paths tcp \
  --expect "$W/greedy.json" --results-dir "$W" --run-id greedy > "$W/out3" 2>&1; rc=$?
grep -E '^# acceptance' "$W/out3"
[ "$rc" = 1 ] || fail "a baseline demanding 1000x: exit $rc, expected 1"
grep -q 'threshold failure' "$W/out3" || fail "no threshold failure named"
grep -q 'GB/s < expected' "$W/greedy/report.md" || fail "report.md names no failing row"

# bad input: exit 2, one line, before any measurement
printf '{"schema": "fabricbench-expect/1", "pairs": [{"path": "tcp", "bytes": 8}]}' > "$W/malformed.json"
timeout 60 "$MPIRUN" --oversubscribe -np 2 "$FB" --accept --accept-ranks-as-nodes --expect "$W/malformed.json" --results-dir "$W" --run-id m > "$W/out4" 2>&1; rc=$?
cat "$W/out4" | grep -v '^-\|^ \|^$\|mpirun\|Process\|Exit code\|Primary job\|non-zero' 
[ "$rc" = 2 ] || fail "malformed expectation file: exit $rc, expected 2"
grep -q "fabricbench: error: --expect .*malformed.json.*neither min_GBps nor max_latency_us" "$W/out4" || fail "no line naming the malformed file"
grep -q '# pairs over' "$W/out4" && fail "malformed expectation file: pairs were measured"
timeout 60 "$MPIRUN" --oversubscribe -np 2 "$FB" --accept --accept-paths tcp,ib --no-files > "$W/out5" 2>&1; rc=$?
[ "$rc" = 2 ] || fail "--accept-paths ib: exit $rc, expected 2"
grep -q "fabricbench: error: --accept-paths: unknown path 'ib'" "$W/out5" || { cat "$W/out5"; fail "no line naming the unknown path"; }
timeout 60 "$MPIRUN" --oversubscribe -np 2 "$FB" --accept --results-dir "$W" --run-id one > "$W/out6" 2>&1; rc=$?
[ "$rc" = 2 ] || fail "one node (2 ranks, one host): exit $rc, expected 2"
grep -q "fabricbench: error: --accept: 1 node(s): the pair test needs at least 2" "$W/out6" || { cat "$W/out6"; fail "no line for one node"; }
grep -q 'doctor' "$W/out6" && fail "one node: the doctor ran before the refusal"

# --doctor --require: gpu on a host without one fails naming the node; a bad value is exit 2
if ! command -v nvidia-smi > /dev/null 2>&1; then
  timeout 60 "$MPIRUN" -np 1 "$FB" --doctor --require gpu --no-files > "$W/out7" 2>&1; rc=$?
  [ "$rc" = 1 ] || fail "--doctor --require gpu without a GPU: exit $rc, expected 1"
  grep -q "^fabricbench --doctor: require.gpu failed on $(hostname)" "$W/out7" || { cat "$W/out7"; fail "no line naming the node"; }
else
  echo "(nvidia-smi present: --require gpu without a GPU not checked here)"
fi
timeout 60 "$MPIRUN" -np 1 "$FB" --doctor --require gpu,warpdrive --no-files > "$W/out8" 2>&1; rc=$?
[ "$rc" = 2 ] || fail "--require warpdrive: exit $rc, expected 2"
grep -q "fabricbench: error: --require: unknown 'warpdrive'" "$W/out8" || { cat "$W/out8"; fail "no line naming the bad --require"; }
[ $bad = 0 ] && echo "PASS: --accept np $NP (control plane, files, evidence), baseline + exit 1, bad input exit 2, --doctor --require"
exit $bad

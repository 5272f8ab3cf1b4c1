#!/usr/bin/env bash
# doctor_cli_test.sh FABRICBENCH - fabricbench --doctor end to end on this machine (mpirun, 2 ranks
# on one node): one checking rank, the table's columns, doctor.json with the fingerprint, exit code
# 0/1 as the verdicts say, 2 for bad input without a result folder, a variable naming a missing
# interface -> env.interfaces fail and exit 1.
set -u
FB=$1
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
unset NCCL_SOCKET_IFNAME NCCL_IB_HCA NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_IB_DISABLE
MPI=("${FB_TEST_MPIRUN:-mpirun}" --oversubscribe --bind-to none -np 2)
bad=0
fail() { echo "FAIL: $*"; bad=1; }

timeout 90 "${MPI[@]}" "$FB" --doctor --results-dir "$W" --run-id d1 > "$W/out1" 2>&1; rc=$?
cat "$W/out1"
grep -q '^check  *node(s)  *verdict  *evidence  *fix$' "$W/out1" || fail "no table header"
grep -q '1 node(s), one checking rank each' "$W/out1" || fail "2 ranks on one node must give one checking rank"
exp=0; grep -qE '^[a-z_.]+ +[^ ]+ +fail ' "$W/out1" && exp=1
[ "$rc" = "$exp" ] || fail "exit $rc, expected $exp from the verdicts"
python3 - "$W/d1/doctor.json" <<'PY' || fail "doctor.json"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "fabricbench-doctor/1", j.get("schema")
ids = {r["check"] for r in j["rows"]}
need = {"gpu.topology", "gpu.p2p", "gpu.mig", "gpu.nic_affinity", "gpu.gpudirect_rdma", "pcie.acs", "pcie.iommu",
        "pcie.link", "rdma.port", "rdma.mtu", "rdma.gid", "rdma.flow_control", "rdma.firmware", "limits.memlock",
        "limits.cgroup_rdma", "limits.shm", "software.versions", "env.interfaces", "env.disabled", "software.same",
        "net.reach"}
assert need <= ids, need - ids
assert all(r["verdict"] in ("pass", "warn", "fail", "skip") and r["source"] for r in j["rows"])
assert j["fingerprint"]["nhosts"] == 1 and j["fingerprint"]["ranks"] == 2
print("doctor.json: %d rows, counts %s" % (len(j["rows"]), j["counts"]))
PY
[ -s "$W/d1/doctor.txt" ] || fail "no doctor.txt"

NCCL_SOCKET_IFNAME=nosuchif0 timeout 90 "${MPI[@]}" -x NCCL_SOCKET_IFNAME "$FB" --doctor --no-files > "$W/out2" 2>&1; rc=$?
grep -E '^env.interfaces' "$W/out2"
[ "$rc" = 1 ] || fail "NCCL_SOCKET_IFNAME=nosuchif0: exit $rc, expected 1"
grep -qE '^env.interfaces +[^ ]+ +fail +NCCL_SOCKET_IFNAME=nosuchif0: no interface' "$W/out2" || fail "env.interfaces did not fail"

timeout 60 "${MPI[@]}" "$FB" --doctor --list --results-dir "$W" --run-id d2 > "$W/out3" 2>&1; rc=$?
cat "$W/out3"
[ "$rc" = 2 ] || fail "--doctor --list: exit $rc, expected 2"
[ ! -e "$W/d2" ] || fail "bad input left a result folder"
grep -q '^fabricbench: error: ' "$W/out3" || fail "no 'fabricbench: error:' line"
[ $bad = 0 ] && echo "PASS: --doctor table, doctor.json, exit codes 0/1/2"
exit $bad

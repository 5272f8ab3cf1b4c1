#!/usr/bin/env bash
# accept_lab.sh [TRIALS] [CASES...] - fabricbench --accept against injected faults in the project's
# Slurm lab (lab_up.sh): FBLAB_NODES (6) namespace nodes, every NIC shaped to BASE_RATE (500mbit) so
# the lab's 2 shared cores are not the bottleneck. Per trial: inject, srun one rank per node
# `fabricbench --accept` (tcp, mpi; no collectives), read acceptance.json, remove the fault.
#   clean     nothing injected: expect no suspect
#   halfnode  n3's NIC at half rate (tbf both directions): expect a node suspect n3
#   pair      n2<->n5 only at a quarter of the rate (htb + u32 on that pair's destination; this
#             kernel has no sch_netem, so loss/delay cannot be injected): expect a link suspect n2-n5
#   mtu       n4's eth0 MTU 1400 (the others 1500): expect a setting suspect n4
#   cpuhog    two busy loops started inside n2's namespaces (the lab's nodes share the host's cores:
#             a hog slows every node alike, so this case is expected NOT to single out n2 here)
# Writes $OUT/trials.tsv (case, trial, exit, detected, suspects, wall s) and the result folders.
# Needs root; the lab's own prefix/net (fba, 10.232.0) so it does not collide with another lab.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
export FBLAB_NODES=${FBLAB_NODES:-6} FBLAB_PREFIX=${FBLAB_PREFIX:-fba} FBLAB_NET=${FBLAB_NET:-10.232.0} \
       FBLAB_DIR=${FBLAB_DIR:-/tmp/fabricbench-lab-accept}
source "$HERE/lab_common.sh"
TRIALS=${1:-10}; shift || true
CASES=("$@"); [ ${#CASES[@]} -gt 0 ] || CASES=(clean halfnode pair mtu cpuhog)
BASE_RATE=${BASE_RATE:-500mbit}
BIN=${FB_TEST_BIN:-$SRC/build/benchmarks/fabricbench}
OUT=${OUT:-/tmp/fb-accept-lab}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0 \
       OMPI_MCA_btl_tcp_links=${OMPI_MCA_btl_tcp_links:-2}  # one connection per peer gives Open MPI half the link both ways (slurm-lab NOTES)
"$HERE/lab_up.sh" > /dev/null || { echo "lab_up failed"; exit 1; }
source "$DIR/env.sh"
trap '"$HERE/lab_down.sh" >/dev/null 2>&1' EXIT
"$HERE/lab_shape.sh" "$BASE_RATE"
half=$(echo "$BASE_RATE" | sed 's/mbit//'); half=$((half / 2))mbit
quarter=$(echo "$BASE_RATE" | sed 's/mbit//'); quarter=$((quarter / 4))mbit
ns() { ip netns exec "$P-n$1" "${@:2}"; }
ip_of() { echo "$NET.1$1"; }
pair_limit() {  # pair_limit A B RATE: traffic A->B capped on A's eth0 (htb, the rest at BASE_RATE)
  ns "$1" tc qdisc replace dev eth0 root handle 1: htb default 10
  ns "$1" tc class add dev eth0 parent 1: classid 1:10 htb rate "$BASE_RATE" burst 512kb
  ns "$1" tc class add dev eth0 parent 1: classid 1:20 htb rate "$3" burst 512kb
  ns "$1" tc filter add dev eth0 parent 1: protocol ip u32 match ip dst "$(ip_of "$2")/32" flowid 1:20
}
HOGS=()
inject() {
  case "$1" in
    clean) ;;
    halfnode) ns 3 tc qdisc replace dev eth0 root tbf rate "$half" burst 512kb latency 50ms
              tc qdisc replace dev "${P}h-n3" root tbf rate "$half" burst 512kb latency 50ms ;;
    pair) pair_limit 2 5 "$quarter"; pair_limit 5 2 "$quarter" ;;
    mtu) ns 4 ip link set eth0 mtu 1400 ;;
    cpuhog) for k in 1 2; do ip netns exec "$P-n2" sh -c 'exec timeout 300 sh -c "while :; do :; done"' & HOGS+=($!); done ;;
  esac
}
restore() {
  case "$1" in
    mtu) ns 4 ip link set eth0 mtu 1500 ;;
    cpuhog) for h in "${HOGS[@]}"; do kill "$h" 2>/dev/null; wait "$h" 2>/dev/null; done; HOGS=() ;;
  esac
  "$HERE/lab_shape.sh" "$BASE_RATE" 2>/dev/null
}
expected() {  # the suspect that names the fault: kind and units
  case "$1" in
    halfnode) echo "node n3" ;; pair) echo "link n2,n5" ;; mtu) echo "setting n4" ;; cpuhog) echo "node n2" ;; *) echo "none" ;;
  esac
}
[ -s "$OUT/trials.tsv" ] || printf 'case\ttrial\texit\tdetected\tfalse_positives\tsuspects\twall_s\n' > "$OUT/trials.tsv"
for c in "${CASES[@]}"; do
  for t in $(seq 1 "$TRIALS"); do
    id="$c-$t-$(date +%H%M%S)"
    inject "$c"
    t0=$(date +%s.%N)
    timeout 300 srun -N "$NODES" --ntasks-per-node=1 --mpi=pmix --kill-on-bad-exit=0 "$BIN" --accept \
      --accept-paths "${ACCEPT_PATHS:-tcp,mpi}" --accept-bw-bytes 4M --accept-bw-iters 4 --accept-lat-iters 50 --accept-no-collectives \
      --tcp-if eth0 --results-dir "$OUT" --run-id "$id" > "$OUT/$id.log" 2>&1
    rc=$?
    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    restore "$c"
    line=$(python3 - "$OUT/$id/acceptance.json" "$(expected "$c")" <<'PY'
import json, sys
try:
    a = json.load(open(sys.argv[1]))
except Exception as e:
    print("no\t-\tunreadable:%s" % e); sys.exit()
kind, *units = sys.argv[2].split(" ")
units = units[0].split(",") if units else []
sus = a["suspects"]
hit = [s for s in sus if s["kind"] == kind and sorted(s["units"]) == sorted(units)]
fp = [s for s in sus if s not in hit]
desc = "; ".join("%s:%s:%s%s" % (s["kind"], s["path"], "-".join(s["units"]),
                 (" [" + s["likely_cause"][0] + "]") if s["likely_cause"] else "") for s in sus) or "none"
print("%s\t%d\t%s" % ("yes" if (hit or (kind == "none" and not sus)) else "no", len(fp), desc))
PY
)
    printf '%s\t%s\t%s\t%s\t%s\n' "$c" "$t" "$rc" "$line" "$wall" | tee -a "$OUT/trials.tsv"
  done
done

#!/usr/bin/env bash
# accept_lab.sh [TRIALS] [CASES...] - fabricbench --accept against injected faults in the project's
# Slurm lab (lab_up.sh): FBLAB_NODES (6) namespace nodes, every NIC shaped to BASE_RATE (500mbit) so
# the lab's 2 shared cores are not the bottleneck. Per trial: inject, srun one rank per node
# `fabricbench --accept` (ACCEPT_PATHS, default tcp,mpi; no collectives), read acceptance.json,
# remove the fault.
#   clean     nothing injected: expect no suspect
#   halfnode  n3's NIC at half rate (tbf both directions): expect a node suspect n3, cause: its line
#             rate (the tc shaping) differs
#   pair      n2<->n5 only at a quarter of the rate (htb + u32 on that pair's destination): expect a
#             link suspect n2-n5
#   loss      n2<->n5 only losing LOSS_PCT (10) % of packets each way: an nftables rule in each of the
#             two nodes' namespaces (output hook, the other's address, numgen random mod 100 < N drop;
#             this kernel has no sch_netem): expect a link suspect n2-n5 (named by its stalled round trips),
#             cause: the two nodes' TCP RetransSegs above the median node's
#   mtu       n4's eth0 MTU 1400 (the others 1500): expect a setting suspect n4, cause: the MTU
#   cpuhog    two busy loops in n2's CPU cgroup (below): expect a node suspect n2, cause: the rank's
#             run-queue wait (/proc/self/task/*/schedstat) far above the other nodes'
#   baseline  an accepted clean run written as the baseline (--accept-baseline), then every NIC shaped
#             to half rate and --accept --expect that file: expect exit 1 and one threshold failure
#             naming each of the 15 pairs (the baseline demands more than the shaped rate)
#   require   --doctor --require gpu on every node (no lab node has a GPU): expect exit 1 and the line
#             naming all nodes; --require tcp (every node has eth0): expect exit 0
# A trial is correct when the expected suspect is there with its cause (where one is visible) and no
# suspect names another unit (false positives); clean: no suspect at all.
#
# CPU emulation: the lab's nodes share the host's cores, so a plain busy loop in n2's namespace slows
# every node alike. Each node therefore gets its own cgroup-v1 cpu group ($P-n<i>, quota 1 CPU per
# 100 ms period: "a node with one core"), holding its slurmd and so every process it starts; the hog
# runs inside n2's group, so it competes only with n2's rank, as on a real node. The groups' weight
# (cpu.shares 8192, 8x a process outside them) gives a node's rank its core ahead of the host's other
# work (builds), as a real node's core would be its own.
# Writes $OUT/trials.tsv (case, trial, exit, correct, false positives, suspects, wall s, load
# average) and the result folders. Needs root; the lab's own prefix/net (fba, 10.232.0).
set -uo pipefail
source "$(dirname "$0")/accept_lab_env.sh"  # HERE, SRC, the lab's FBLAB_* and lab_common.sh
TRIALS=${1:-10}; shift || true
CASES=("$@"); [ ${#CASES[@]} -gt 0 ] || CASES=(clean halfnode pair loss mtu cpuhog baseline require)
for c in "${CASES[@]}"; do
  case "$c" in clean|halfnode|pair|loss|mtu|cpuhog|baseline|require) ;; *) echo "accept_lab.sh: unknown case '$c'" >&2; exit 2 ;; esac
  [ "$c" != loss ] || command -v nft >/dev/null || { echo "accept_lab.sh: the loss case needs nft (apt-get install nftables)" >&2; exit 2; }
done
LOSS_PCT=${LOSS_PCT:-10}
BASE_RATE=${BASE_RATE:-500mbit}
BIN=${FB_TEST_BIN:-$SRC/build/benchmarks/fabricbench}
OUT=${OUT:-/tmp/fb-accept-lab}
mkdir -p "$OUT"
# one lab run at a time: a second one would share (and tear down) the same namespaces
exec 9>"/tmp/fb-accept-lab-$P.lock"
flock -n 9 || { echo "accept_lab.sh: another run holds /tmp/fb-accept-lab-$P.lock" >&2; exit 1; }
# The lab's nodes share the host's 2 cores, which no rank can see (each sees 2 cores and 1 local
# rank): FB_PROGRESS=block makes the tcp transport and the MPI bootstrap (mpi_bootstrap.h) sleep
# instead of spinning. Spinning, the latency floor of a pair was ~7 us when its ranks ran on two
# cores and ~15-30 us when they shared one (sticky across retests: false link suspects at 2.1x);
# sleeping, every pair pays two wake-ups, 13-26 us, whichever cores it runs on.
export FB_PROGRESS=${FB_PROGRESS:-block}
# The data-less fence that ends MPI_Init must be a real barrier: Slurm's default (tree) ran it
# node-local and a rank then crashed in MPI_Init (launch_loop.sh; slurm/acceptance.sbatch).
export SLURM_PMIX_FENCE=${SLURM_PMIX_FENCE:-ring}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0 \
       OMPI_MCA_btl_tcp_links=${OMPI_MCA_btl_tcp_links:-2}  # one connection per peer gives Open MPI half the link both ways (slurm-lab NOTES)
# The mpi path's 4 MiB both-ways exchange: with Open MPI's rendezvous (TCP eager limit 64 KiB) every
# pair ran at half the shaped rate each way (0.0317 GB/s; btl_tcp_links 1/2/4, socket buffers, ob1
# pipeline depth, a 5 ms tbf queue, sleeping waits: no change; ss showed one connection carrying both
# directions with 3.6 MB unsent). Sent eager (no handshake), every pair reached it (0.058-0.060): the
# limit covers the pair test's 4 MiB plus headers (the 8 B latency floor stays ~13-17 us).
export OMPI_MCA_btl_tcp_eager_limit=${OMPI_MCA_btl_tcp_eager_limit:-4325376} \
       OMPI_MCA_btl_tcp_rndv_eager_limit=${OMPI_MCA_btl_tcp_rndv_eager_limit:-4325376}
"$HERE/lab_up.sh" > /dev/null || { echo "lab_up failed"; exit 1; }
source "$DIR/env.sh"
trap '"$HERE/lab_down.sh" >/dev/null 2>&1; lab_cg_down' EXIT
lab_cg_up || echo "accept_lab.sh: no writable cgroup-v1 cpu controller at $CG: the cpuhog case cannot be confined to one node" >&2
"$HERE/lab_shape.sh" "$BASE_RATE"
rate_mbit=$(echo "$BASE_RATE" | sed 's/mbit//')
half=$((rate_mbit / 2))mbit
quarter=$((rate_mbit / 4))mbit
ns() { ip netns exec "$P-n$1" "${@:2}"; }
ip_of() { echo "$NET.1$1"; }
# Congestion control: the nodes' namespaces take this VM's default, bbr, and Open MPI's sockets
# follow it (fabricbench's tcp transport sets cubic on its own, tcp_options.cc). Under bbr the mpi
# path's both-ways 4 MiB exchanges stalled 15-50 ms in some exchanges (no retransmission), some
# pairs through every retest: 0.043-0.055 GB/s against 0.0597. So every node's route to the lab
# net gets LAB_CC (cubic, Linux's own default; "none" leaves the VM's): 2 passes over the 15 pairs,
# 6 exchanges each, slowest pair 0.0430 under bbr, 0.0594 under cubic. (A namespace may not set
# net.ipv4.tcp_congestion_control to cubic: not in the host's tcp_allowed_congestion_control.)
LAB_CC=${LAB_CC:-cubic}
if [ "$LAB_CC" != none ]; then
  for i in $(seq 1 "$NODES"); do
    ns "$i" ip route replace "$NET.0/24" dev eth0 src "$NET.$((10 + i))" congctl "$LAB_CC" ||
      { echo "accept_lab.sh: cannot set congestion control $LAB_CC on n$i" >&2; exit 1; }
  done
fi
pair_limit() {  # pair_limit A B RATE: traffic A->B capped on A's eth0 (htb, the rest at BASE_RATE)
  ns "$1" tc qdisc replace dev eth0 root handle 1: htb default 10
  ns "$1" tc class add dev eth0 parent 1: classid 1:10 htb rate "$BASE_RATE" burst 512kb
  ns "$1" tc class add dev eth0 parent 1: classid 1:20 htb rate "$3" burst 512kb
  ns "$1" tc filter add dev eth0 parent 1: protocol ip u32 match ip dst "$(ip_of "$2")/32" flowid 1:20
}
pair_loss() {  # pair_loss A B PCT: PCT % of A's packets to B dropped (A's output hook)
  ns "$1" nft add table inet fblab_loss
  ns "$1" nft add chain inet fblab_loss out '{ type filter hook output priority 0; }'
  ns "$1" nft add rule inet fblab_loss out ip daddr "$(ip_of "$2")" numgen random mod 100 '<' "$3" counter drop
}
HOGS=()
inject() {
  case "$1" in
    halfnode) ns 3 tc qdisc replace dev eth0 root tbf rate "$half" burst 512kb latency 50ms
              tc qdisc replace dev "${P}h-n3" root tbf rate "$half" burst 512kb latency 50ms ;;
    pair) pair_limit 2 5 "$quarter"; pair_limit 5 2 "$quarter" ;;
    loss) pair_loss 2 5 "$LOSS_PCT"; pair_loss 5 2 "$LOSS_PCT" ;;
    mtu) ns 4 ip link set eth0 mtu 1400 ;;
    cpuhog)  # two busy loops in n2's namespaces (those of its slurmd, as node_exec) and cpu group
      for k in 1 2; do
        nsenter --target "$(cat "$DIR/slurmd-n2.pid")" --net --mount --uts -- \
          sh -c "echo \$\$ > $CG/$P-n2/cgroup.procs; exec timeout 300 sh -c 'while :; do :; done'" &
        HOGS+=($!)
      done ;;
  esac
}
restore() {
  case "$1" in
    mtu) ns 4 ip link set eth0 mtu 1500 ;;
    loss) for i in 2 5; do  # the dropped-packet count goes to the trial's log
            echo "n$i: $(ns "$i" nft list table inet fblab_loss | grep -o 'counter packets [0-9]* bytes [0-9]*')" >> "$OUT/$id.log"
            ns "$i" nft delete table inet fblab_loss
          done ;;
    cpuhog) for h in "${HOGS[@]}"; do kill "$h" 2>/dev/null; wait "$h" 2>/dev/null; done; HOGS=() ;;
  esac
  "$HERE/lab_shape.sh" "$BASE_RATE" 2>/dev/null
}
expected() {  # kind, units, and a pattern the suspect's likely cause must match ("-": no cause visible)
  case "$1" in
    halfnode) echo "node n3 line.rate.here:.*tbf" ;;
    pair) echo "link n2,n5 -" ;;
    loss) echo "link n2,n5 RetransSegs" ;;  # the stall rule names it; the nodes' retransmissions are its evidence
    mtu) echo "setting n4 mtu" ;;
    cpuhog) echo "node n2 waited.for.a.CPU" ;;
    *) echo "none - -" ;;
  esac
}
accept() {  # accept ID [flags]: one acceptance run over the lab, its log in $OUT/ID.log
  local id=$1; shift
  timeout 300 srun -N "$NODES" --ntasks-per-node=1 --mpi=pmix --kill-on-bad-exit=0 "$BIN" --accept \
    --accept-paths "${ACCEPT_PATHS:-tcp,mpi}" --accept-bw-bytes 4M --accept-bw-iters 4 --accept-no-collectives \
    --tcp-if eth0 --results-dir "$OUT" --run-id "$id" "$@" > "$OUT/$id.log" 2>&1
}
judge() {  # judge ACCEPTANCE_JSON EXPECTED: "correct<TAB>false positives<TAB>suspects"
  python3 - "$1" "$2" <<'PY'
import json, re, sys
try:
    a = json.load(open(sys.argv[1]))
except Exception as e:
    print("no\t-\tunreadable:%s" % e); sys.exit()
kind, units, cause = sys.argv[2].split(" ")
units = [] if units == "-" else units.split(",")
sus = a["suspects"]
def named(s):  # the right kind and units, and the cause where one is visible
    return s["kind"] == kind and sorted(s["units"]) == sorted(units) and \
        (cause == "-" or any(re.search(cause, c) for c in s["likely_cause"]))
hit = [s for s in sus if named(s)]
# a false positive names a unit that is not the fault's (another suspect on the same unit(s) is not)
fp = [s for s in sus if not named(s) and not (units and set(s["units"]) <= set(units) and s["units"])]
ok = (not sus) if kind == "none" else (bool(hit) and not fp)
desc = "; ".join("%s:%s:%s%s" % (s["kind"], s["path"], "-".join(s["units"]),
                 (" [" + s["likely_cause"][0] + "]") if s["likely_cause"] else "") for s in sus) or "none"
print("%s\t%d\t%s" % ("yes" if ok else "no", len(fp) if kind != "none" else len(sus), desc))
PY
}
[ -s "$OUT/trials.tsv" ] || printf 'case\ttrial\texit\tcorrect\tfalse_positives\tsuspects\twall_s\tloadavg1\n' > "$OUT/trials.tsv"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/trials.tsv"; }
for c in "${CASES[@]}"; do
  for t in $(seq 1 "$TRIALS"); do
    id="$c-$t-$(date +%H%M%S)"
    t0=$(date +%s.%N)
    case "$c" in
      baseline)
        accept "$id-base"; rc0=$?
        "$BIN" --accept-baseline "$OUT/$id-base" > "$OUT/$id-base.baseline.log" 2>&1; brc=$?
        "$HERE/lab_shape.sh" "$half" 2>/dev/null
        accept "$id" --expect "$OUT/$id-base/expect.json"; rc=$?
        "$HERE/lab_shape.sh" "$BASE_RATE" 2>/dev/null
        line=$(python3 - "$OUT/$id/acceptance.json" "$rc0" "$brc" "$rc" "$NODES" <<'PY'
import itertools, json, re, sys
try:
    a = json.load(open(sys.argv[1]))
except Exception as e:
    print("no\t-\tunreadable:%s" % e); sys.exit()
rc0, brc, rc, n = map(int, sys.argv[2:6])
f = a["threshold_failures"]
want = {"n%d <-> n%d" % p for p in itertools.combinations(range(1, n + 1), 2)}
got = {m.group(1) for x in f for m in [re.search(r"(n\d+ <-> n\d+) \d+ B: .* GB/s < expected", x)] if m}
ok = rc0 == 0 and brc == 0 and rc == 1 and got == want
print("%s\t-\tbaseline run exit %d, --accept-baseline exit %d; %d threshold failures naming %d of %d pairs, e.g. %s"
      % ("yes" if ok else "no", rc0, brc, len(f), len(got & want), len(want), f[0] if f else "none"))
PY
) ;;
      require)
        srun -N "$NODES" --ntasks-per-node=1 --mpi=pmix "$BIN" --doctor --require gpu --results-dir "$OUT" --run-id "$id-gpu" > "$OUT/$id-gpu.log" 2>&1; rc=$?
        srun -N "$NODES" --ntasks-per-node=1 --mpi=pmix "$BIN" --doctor --require tcp --results-dir "$OUT" --run-id "$id-tcp" > "$OUT/$id-tcp.log" 2>&1; rc2=$?
        msg=$(grep -m1 'require.gpu failed on' "$OUT/$id-gpu.log")
        all=$(seq -s, 1 "$NODES" | sed 's/\([0-9]*\)/n\1/g')
        ok=no; [ "$rc" = 1 ] && [ "$rc2" = 0 ] && echo "$msg" | grep -q "failed on $all:" && ok=yes
        line=$(printf '%s\t-\t--require gpu exit %s: %s; --require tcp exit %s' "$ok" "$rc" "${msg:-no require line}" "$rc2") ;;
      *)
        inject "$c"
        accept "$id"; rc=$?
        restore "$c"
        line=$(judge "$OUT/$id/acceptance.json" "$(expected "$c")") ;;
    esac
    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    row "$c" "$t" "$rc" "$line" "$wall"
  done
done

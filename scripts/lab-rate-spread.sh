#!/usr/bin/env bash
# lab-rate-spread.sh - the lab's ground truth at 2 and more nodes: every node sends to the next one
# (a ring, as ring collectives load the links: one flow out and one flow in per node "NIC") with
# iperf3, all flows at once, REPS times per node count and congestion control; prints each flow's
# goodput as a share of the shaped rate's TCP goodput (1448/1514 of the rate), with the median, min and
# max per configuration, and the tbf drops. Run it on a lab that is up (tests/e2e/slurm/lab_up.sh with
# FBLAB_RATE), or it brings one up and down itself.
#
#   flock /work/locks/lab scripts/lab-rate-spread.sh 1gbit "2 3" "bbr reno" 3
# Arguments: RATE, NODE COUNTS ("2 3"), CONGESTION CONTROLS ("bbr"; each must be in net.ipv4.tcp_allowed_congestion_control to be set in a node's
# namespace for the run), REPS (3). SECS (5) per trial. Needs root (exit 77 without); 2 = bad input.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LAB=$HERE/../tests/e2e/slurm
SRATE=${1:-1gbit} COUNTS=${2:-"2 3"} CCS=${3:-"bbr"} REPS=${4:-3} SECS=${SECS:-5}
[[ $SRATE =~ ^([0-9.]+)([kmg]?)bit$ ]] || { echo "lab-rate-spread: bad rate '$SRATE'" >&2; exit 2; }
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "lab-rate-spread: bad REPS '$REPS'" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v iperf3 >/dev/null || { echo "SKIP: no iperf3"; exit 77; }
maxn=2
for c in $COUNTS; do [[ $c =~ ^[2-9]$ ]] || { echo "lab-rate-spread: bad node count '$c'" >&2; exit 2; }; [ "$c" -gt "$maxn" ] && maxn=$c; done
source "$LAB/lab_common.sh"
owned=0
if ! ip netns pids "$P-n$maxn" >/dev/null 2>&1; then
  FBLAB_NODES=$maxn FBLAB_RATE=$SRATE TBF_BURST=${TBF_BURST:-256kb} "$LAB/lab_up.sh" >/dev/null || exit 1
  owned=1
fi
cleanup() { pkill_ours; [ "$owned" = 1 ] && FBLAB_NODES=$maxn "$LAB/lab_down.sh" >/dev/null 2>&1; }
pids=()
pkill_ours() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; pids=(); }
trap cleanup EXIT
W=$(mktemp -d /tmp/lab-rate-spread.XXXXXX)
goodput=$(python3 -c "
import re,sys; m=re.fullmatch(r'([0-9.]+)([kmg]?)bit', sys.argv[1]); print(float(m.group(1))*{'':1,'k':1e3,'m':1e6,'g':1e9}[m.group(2)]*1448/1514)" "$SRATE")
drops() { local s=0 i d; for i in $(seq 1 "$maxn"); do
  d=$(ip netns exec "$P-n$i" tc -s qdisc show dev eth0 | sed -n 's/.*dropped \([0-9]*\).*/\1/p' | head -1); s=$((s + ${d:-0}))
  d=$(tc -s qdisc show dev "${P}h-n$i" | sed -n 's/.*dropped \([0-9]*\).*/\1/p' | head -1); s=$((s + ${d:-0})); done; echo "$s"; }
echo "# lab-rate-spread: $SRATE (TCP goodput $(python3 -c "print(f'{$goodput/1e9:.3f}')") Gbit/s), $SECS s per trial, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| nodes | cc | trial | flows Gbit/s | share of goodput (min-max) | tbf drops |"
echo "|---|---|---|---|---|---|"
for cc in $CCS; do
  for i in $(seq 1 "$maxn"); do ip netns exec "$P-n$i" sysctl -q -w net.ipv4.tcp_congestion_control="$cc" || exit 1; done
  for n in $COUNTS; do
    all=()
    for rep in $(seq 1 "$REPS"); do
      d0=$(drops)
      for i in $(seq 1 "$n"); do
        ip netns exec "$P-n$i" timeout $((SECS + 15)) iperf3 -s -1 -B "$NET.$((10 + i))" -p 5301 >/dev/null 2>&1 &
        pids+=($!)
      done
      sleep 0.5
      cl=()
      for i in $(seq 1 "$n"); do
        j=$(( i % n + 1 ))
        ip netns exec "$P-n$i" timeout $((SECS + 15)) iperf3 -c "$NET.$((10 + j))" -B "$NET.$((10 + i))" -p 5301 \
          -t "$SECS" -J > "$W/f$i.json" 2>/dev/null &
        cl+=($!)
      done
      for p in "${cl[@]}"; do wait "$p"; done
      pkill_ours
      rates=$(python3 - "$W" "$n" "$goodput" <<'PY'
import json, sys
w, n, gp = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
r = []
for i in range(1, n + 1):
    try:
        r.append(json.load(open(f"{w}/f{i}.json"))["end"]["sum_received"]["bits_per_second"])
    except Exception:
        r.append(float("nan"))
print(" ".join(f"{x / gp:.3f}" for x in r))
PY
)
      all+=($rates)
      echo "| $n | $cc | $rep | $(for x in $rates; do python3 -c "print(f'{$x*$goodput/1e9:.3f}', end=' ')"; done)| $(echo $rates | tr ' ' '\n' | sort -n | head -1)-$(echo $rates | tr ' ' '\n' | sort -n | tail -1) | $(( $(drops) - d0 )) |"
    done
    echo "| $n | $cc | median of all flows | | $(printf '%s\n' "${all[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2) " (" a[1] "-" a[NR] ")"}') | |"
  done
done
rm -rf "$W"

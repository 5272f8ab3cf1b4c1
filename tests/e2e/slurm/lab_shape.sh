#!/usr/bin/env bash
# lab_shape.sh RATE|off|show - cap every lab node's "NIC" to RATE in both directions with tc tbf:
# TX on the node's eth0, RX on the bridge-side veth end. Works while jobs run.
#   lab_shape.sh 1gbit     lab_shape.sh 200mbit     lab_shape.sh off     lab_shape.sh show
# TBF_BURST (default 512kb): must exceed one GSO packet on veth (up to 64 KiB); with 64kb the link
# loses 3-10 % and MPI up to 45 %. TBF_LATENCY (default 50ms): queue bound; no effect at 512kb.
# Delay/loss emulation would need sch_netem, which some CI kernels lack: not offered here.
# Exit: 0 done; 2 bad rate; 77 the kernel has no tbf (reason printed); 1 other failure.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lab_common.sh"
[ "$(id -u)" = 0 ] || { log "SKIP: needs root"; exit 77; }
RATE=${1:-show}
case "$RATE" in
  show|off) ;;
  *[0-9]*bit) ;;
  *) log "bad rate '$RATE': expected e.g. 200mbit, 1gbit, off or show"; exit 2 ;;
esac
found=0
for i in $(seq 1 "$NODES"); do
  ns=$P-n$i h=${P}h-n$i
  ip netns pids "$ns" >/dev/null 2>&1 || continue
  found=1
  case "$RATE" in
    show)
      echo "n$i TX: $(ip netns exec "$ns" tc qdisc show dev eth0 | head -1)"
      echo "n$i RX: $(tc qdisc show dev "$h" | head -1)" ;;
    off)
      ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null || true
      tc qdisc del dev "$h" root 2>/dev/null || true ;;
    *)
      if ! err=$(ip netns exec "$ns" tc qdisc replace dev eth0 root tbf rate "$RATE" \
                 burst "${TBF_BURST:-512kb}" latency "${TBF_LATENCY:-50ms}" 2>&1); then
        case "$err" in
          *"qdisc kind is unknown"*) log "SKIP: this kernel has no tbf qdisc (CONFIG_NET_SCH_TBF): $err"; exit 77 ;;
          *) log "tc tbf on n$i eth0 failed: $err"; exit 1 ;;
        esac
      fi
      tc qdisc replace dev "$h" root tbf rate "$RATE" burst "${TBF_BURST:-512kb}" latency "${TBF_LATENCY:-50ms}" ;;
  esac
done
[ "$found" = 1 ] || { log "no lab node namespaces ($P-n*): run lab_up.sh first"; exit 1; }
[ "$RATE" = show ] || log "node NICs: $RATE (both directions)"

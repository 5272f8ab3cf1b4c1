#!/usr/bin/env bash
# lab_down.sh - tear down what lab_up.sh built; idempotent, safe when nothing is up.
# Stops only processes it can attribute to the lab: PIDs from the lab's pid files and PIDs living in
# the lab's network namespaces (slurmd children, job steps, orted, ranks, iperf3). Then deletes the
# namespaces, links and $FBLAB_DIR, and checks that nothing is left (exit 1 and a list if something is).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lab_common.sh"
[ "$(id -u)" = 0 ] || { log "SKIP: needs root"; exit 77; }
T0=$(date +%s.%N)

stop_pids() {  # stop_pids <what> <pid>...: TERM all at once, wait up to 5 s, then KILL the rest
  local what=$1 p live=() still=(); shift
  for p in $(printf '%s\n' "$@" | sort -un); do
    [ "$p" != $$ ] && kill -0 "$p" 2>/dev/null && live+=("$p")
  done
  [ ${#live[@]} -gt 0 ] || return 0
  kill -TERM "${live[@]}" 2>/dev/null || true
  for _ in $(seq 1 50); do
    still=()
    for p in "${live[@]}"; do kill -0 "$p" 2>/dev/null && still+=("$p"); done
    [ ${#still[@]} -eq 0 ] && { log "stopped $what (${live[*]})"; return 0; }
    sleep 0.1
  done
  kill -KILL "${still[@]}" 2>/dev/null || true
  sleep 0.2
  log "killed $what after 5 s (${still[*]})"
}
pid_of() { [ -s "$1" ] && cat "$1" || true; }

# 1. every daemon (slurmd, slurmctld, our private munged) and every process inside a lab namespace,
#    all at once (each daemon takes ~2 s
#    to exit on SIGTERM; in parallel the whole teardown takes ~2 s instead of ~6 s)
pids=()
for f in "$DIR"/slurmd-*.pid "$DIR/slurmctld.pid" "$DIR/munge/munged.pid"; do [ -e "$f" ] && pids+=("$(pid_of "$f")"); done
for ns in $(lab_namespaces); do pids+=($(ip netns pids "$ns" 2>/dev/null)); done
stop_pids "slurm daemons and lab processes" "${pids[@]}"
# stragglers forked while we waited
pids=(); for ns in $(lab_namespaces); do pids+=($(ip netns pids "$ns" 2>/dev/null)); done
stop_pids "late lab processes" "${pids[@]}"

# 2. network: deleting a namespace deletes its veth end, and with it the peer
for ns in $(lab_namespaces); do ip netns del "$ns" || log "could not delete netns $ns"; done
for l in $(lab_links); do ip link del "$l" 2>/dev/null || true; done

# 3. files (only a directory that is clearly ours)
if [ -e "$DIR" ]; then
  if [ ! -e "$CONF" ] || head -1 "$CONF" | grep -qF "$MARK"; then rm -rf "$DIR"
  else log "not removing $DIR: $CONF is not ours"; fi
fi

if left=$(lab_anything_left); then log "LEFT BEHIND:$left"; exit 1; fi
log "down in $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')s; nothing left behind"

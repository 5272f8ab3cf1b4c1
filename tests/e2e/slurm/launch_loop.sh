#!/usr/bin/env bash
# launch_loop.sh N [CMD...] - N launches of `srun --mpi=pmix -N FBLAB_NODES CMD` (default:
# fabricbench --list) in the acceptance lab's set-up (accept_lab.sh: same prefix, per-node cpu
# groups, FB_PROGRESS=block), counting the launches that end on a signal. Made to chase a start-up
# SIGSEGV that came once in ~18 acceptance launches: Open MPI's handler is off
# (OMPI_MCA_opal_signal=) and cores go to $OUT/cores (core_pattern, restored at the end), so gdb
# gets every thread's stack.
#   OUT (/tmp/fb-launch-loop)  LOOP_HOG=1: two busy loops in n2's cpu group as in accept_lab's
#   cpuhog (the crash came ~6x as often with it)  LOOP_TIMEOUT (120 s): one launch at most
#   SRUN_ARGS: more srun options (--slurmd-debug=debug: the step's pmix plugin log in the launch log)
#   `touch $OUT/stop` ends the loop after the current launch.
#   Extra environment for the ranks: export it before calling (srun passes the caller's environment).
# Writes $OUT/launches.tsv (launch, exit, signal seen, wall s, load average) and one log per launch;
# prints "crashes C / launches N". Needs root.
set -uo pipefail
source "$(dirname "$0")/accept_lab_env.sh"  # HERE, SRC, the lab's FBLAB_* and lab_common.sh
N=${1:-50}; shift || true
case "$N" in '' | *[!0-9]*) echo "launch_loop.sh: N must be a number, got '$N'" >&2; exit 2 ;; esac
CMD=("$@"); [ ${#CMD[@]} -gt 0 ] || CMD=("${FB_TEST_BIN:-$SRC/build/benchmarks/fabricbench}" --list)
OUT=${OUT:-/tmp/fb-launch-loop}
mkdir -p "$OUT/cores"
exec 9>"/tmp/fb-accept-lab-$P.lock"   # the same lab as accept_lab.sh: one user at a time
flock -n 9 || { echo "launch_loop.sh: another run holds /tmp/fb-accept-lab-$P.lock" >&2; exit 1; }
export FB_PROGRESS=${FB_PROGRESS:-block} OMPI_MCA_opal_signal= \
       OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0
ulimit -c unlimited
old_pattern=$(cat /proc/sys/kernel/core_pattern)
"$HERE/lab_up.sh" > /dev/null || { echo "lab_up failed"; exit 1; }
source "$DIR/env.sh"
HOGS=()
cleanup() {
  for h in "${HOGS[@]}"; do kill "$h" 2>/dev/null; wait "$h" 2>/dev/null; done
  echo "$old_pattern" > /proc/sys/kernel/core_pattern
  rm -rf "$OUT/lab-log"; cp -r "$DIR/log" "$OUT/lab-log" 2>/dev/null   # slurmd/stepd logs (pmix plugin errors)
  "$HERE/lab_down.sh" >/dev/null 2>&1; lab_cg_down
}
trap cleanup EXIT
lab_cg_up || echo "launch_loop.sh: no cgroup-v1 cpu controller: launching without the per-node groups" >&2
echo "$OUT/cores/core.%e.%h.%p" > /proc/sys/kernel/core_pattern
if [ "${LOOP_HOG:-0}" = 1 ]; then
  for k in 1 2; do
    nsenter --target "$(cat "$DIR/slurmd-n2.pid")" --net --mount --uts -- \
      sh -c "echo \$\$ > $CG/$P-n2/cgroup.procs; exec timeout 3000 sh -c 'while :; do :; done'" &
    HOGS+=($!)
  done
fi
[ -s "$OUT/launches.tsv" ] || printf 'launch\texit\tsignal\twall_s\tloadavg1\n' > "$OUT/launches.tsv"
crashes=0
for k in $(seq 1 "$N"); do
  [ -e "$OUT/stop" ] && { N=$((k - 1)); rm -f "$OUT/stop"; break; }   # touch $OUT/stop: end after this launch
  t0=$(date +%s.%N)
  timeout "${LOOP_TIMEOUT:-120}" srun -N "$NODES" --ntasks-per-node=1 --mpi=pmix --kill-on-bad-exit=0 ${SRUN_ARGS:-} "${CMD[@]}" > "$OUT/launch-$k.log" 2>&1
  rc=$?
  sig=$(grep -m1 -oE 'task [0-9]+: (Segmentation fault|Aborted|Bus error)[^\n]*' "$OUT/launch-$k.log")
  [ -n "$sig" ] && crashes=$((crashes + 1))
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  printf '%s\t%s\t%s\t%s\t%s\n' "$k" "$rc" "${sig:--}" "$wall" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/launches.tsv"
done
echo "crashes $crashes / launches $N"

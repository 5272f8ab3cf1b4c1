# lab_common.sh - settings and helpers shared by lab_up.sh, lab_down.sh, lab_shape.sh and the
# slurm tests. Sourced, not run.
NODES=${FBLAB_NODES:-2}
CPUS=${FBLAB_CPUS:-$(nproc)}
MEM=${FBLAB_MEM_MB:-4000}
SHM_MB=${FBLAB_SHM_MB:-2048}
MIN_JOB_AGE=${FBLAB_MIN_JOB_AGE:-4}
NET=${FBLAB_NET:-10.231.0}
P=${FBLAB_PREFIX:-fbl}
DIR=${FBLAB_DIR:-/tmp/fabricbench-lab}
RATE=${FBLAB_RATE:-}
BR=${P}0
CONF=$DIR/slurm.conf
MUNGE_SOCKET=$DIR/munge/munge.socket
MARK="# fabricbench test lab (tests/slurm/lab_up.sh)"

log() { printf '[fblab %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# Every reason this machine cannot host the lab -> one line "SKIP: ..." and return 1. Changes nothing.
lab_check_prereqs() {
  if [ "$(id -u)" != 0 ]; then log "SKIP: needs root (network namespaces, veth, bridge, tc)"; return 1; fi
  local c missing=""
  for c in ip tc nsenter unshare mount munged munge unmunge slurmctld slurmd sbatch srun sinfo scontrol; do
    command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
  done
  if [ -n "$missing" ]; then
    log "SKIP: missing commands:$missing (apt-get install slurmd slurmctld slurm-client munge iproute2 util-linux)"
    return 1
  fi
  local err
  if ! err=$(unshare --net --mount --uts true 2>&1); then
    log "SKIP: cannot create network/mount/UTS namespaces: $err"; return 1
  fi
  if [ ! -d /sys/fs/cgroup ] || ! mountpoint -q /sys/fs/cgroup; then
    log "SKIP: no cgroup filesystem mounted on /sys/fs/cgroup (slurmd 22.05 refuses to start without it)"
    return 1
  fi
  return 0
}

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_file() {  # wait_file <file> <seconds>: until it exists and is non-empty
  local i
  for i in $(seq 1 $(($2 * 10))); do [ -s "$1" ] && return 0; sleep 0.1; done
  log "timed out after $2 s waiting for $1"; return 1
}

lab_healthy() {
  [ -f "$CONF" ] && alive "$DIR/munge/munged.pid" && alive "$DIR/slurmctld.pid" || return 1
  local i
  for i in $(seq 1 "$NODES"); do alive "$DIR/slurmd-n$i.pid" || return 1; done
  [ "$(SLURM_CONF=$CONF sinfo -h -N -o '%N %t' 2>/dev/null | grep -Ec ' (idle|mix|alloc)$')" = "$NODES" ]
}

lab_namespaces() { ip netns list 2>/dev/null | awk -v p="$P-" 'index($1, p) == 1 {print $1}'; }
lab_links() { ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^(${P}0|${P}h-.*)$" || true; }

# Anything of ours still there? Prints what, returns 0 if something is left.
lab_anything_left() {
  local left=""
  [ -e "$DIR" ] && left="$left dir:$DIR"
  local x
  for x in $(lab_namespaces); do left="$left netns:$x"; done
  for x in $(lab_links); do left="$left link:$x"; done
  [ -n "$left" ] || return 1
  echo "$left"
  return 0
}

# Run a command inside node n<i>'s namespaces (net + the slurmd's mount/UTS namespaces), as a job
# would see the node. Uses the running slurmd as the anchor.
node_exec() {  # node_exec <i> cmd...
  local i=$1; shift
  local pid; pid=$(cat "$DIR/slurmd-n$i.pid")
  nsenter --target "$pid" --net --mount --uts -- "$@"
}

# Per-node CPU: a cgroup-v1 cpu group $P-n<i> per node (quota 1 CPU per 100 ms, cpu.shares 8192)
# holding its slurmd and so every process it starts ("a node with one core"; accept_lab.sh says why).
# Returns 1 when there is no writable cgroup-v1 cpu controller.
CG=${FBLAB_CG:-/sys/fs/cgroup/cpu}
lab_cg_up() {
  [ -w "$CG/cgroup.procs" ] || return 1
  local i
  for i in $(seq 1 "$NODES"); do
    mkdir -p "$CG/$P-n$i"
    echo 100000 > "$CG/$P-n$i/cpu.cfs_period_us"
    echo 100000 > "$CG/$P-n$i/cpu.cfs_quota_us"
    echo 8192 > "$CG/$P-n$i/cpu.shares"
    cat "$DIR/slurmd-n$i.pid" > "$CG/$P-n$i/cgroup.procs"
  done
}
lab_cg_down() {  # move the groups' tasks back to the root group, remove the groups
  local i t
  for i in $(seq 1 "$NODES"); do
    [ -d "$CG/$P-n$i" ] || continue
    for t in $(cat "$CG/$P-n$i/tasks" 2>/dev/null); do echo "$t" > "$CG/tasks" 2>/dev/null; done
    rmdir "$CG/$P-n$i" 2>/dev/null
  done
}

#!/usr/bin/env bash
# lab_up.sh - fabricbench's own local Slurm cluster for tests: 2+ "nodes" on ONE Linux machine.
#
#   root netns   private munged (socket under $FBLAB_DIR, own key; the system's munge is untouched)
#                bridge ${P}0 with $NET.254/24         <- sbatch / srun / sinfo run from here
#     |-- veth -- netns ${P}-ctl  $NET.1    slurmctld  (own UTS ns, hostname "slurmctl")
#     |-- veth -- netns ${P}-n1   $NET.11   slurmd -N n1 (own UTS + mount ns, hostname "n1")
#     `-- veth -- netns ${P}-n2   $NET.12   slurmd -N n2 ...
#   No default route anywhere: traffic stays on $NET.0/24. Every node sees only lo + eth0, its own
#   /etc/hosts, /sys and /dev/shm; /tmp and the work tree stay shared (the "shared filesystem").
#   So ranks on different nodes really talk across the veths, and tc on them shapes the "NIC".
#
# Usage: lab_up.sh            -> prints "export SLURM_CONF=..." lines on stdout (also in $DIR/env.sh)
# Exit codes: 0 up; 77 this machine cannot host the lab (reason printed; nothing was changed);
#             1 bring-up failed (logs printed; lab_down.sh cleans up).
# Knobs: FBLAB_NODES (2), FBLAB_CPUS (nproc, advertised only: cores are shared), FBLAB_MEM_MB (4000),
#        FBLAB_NET (10.231.0), FBLAB_PREFIX (fbl), FBLAB_DIR (/tmp/fabricbench-lab), FBLAB_RATE (e.g.
#        1gbit: shape every node NIC, see lab_shape.sh), FBLAB_MIN_JOB_AGE (4).
# Nothing outside $FBLAB_DIR, /run/netns/${P}-* and the ${P}* links is created; /etc is not touched.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lab_common.sh"

T0=$(date +%s.%N)
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}'; }

# ------------------------------------------------------------------ can this machine host it?
lab_check_prereqs || exit 77

if lab_healthy; then
  log "already up ($NODES nodes, SLURM_CONF=$CONF)"
  [ -z "$RATE" ] || "$HERE/lab_shape.sh" "$RATE"
  cat "$DIR/env.sh"; exit 0
fi
if lab_anything_left; then
  log "partial or stale lab found: tearing it down first"
  "$HERE/lab_down.sh"
fi
if ip -4 route show | grep -q "^$NET\.0/24"; then
  log "SKIP: $NET.0/24 is already routed in this namespace; set FBLAB_NET to a free /24"; exit 77
fi

mkdir -p "$DIR"/{state,log,spool,tmp,munge,cgmove}
chmod 755 "$DIR/munge"   # munged insists: socket dir executable by all
fail() {
  log "FAILED at line $1 after $(elapsed)s"
  for f in "$DIR"/log/*; do [ -e "$f" ] && { echo "== $f"; tail -n 20 "$f"; } >&2; done
  "$HERE/lab_down.sh" || true   # a failed bring-up leaves nothing behind either
  exit 1
}
trap 'fail $LINENO' ERR

# ------------------------------------------------------------------ network
if ! ip link add "$BR" type bridge 2>"$DIR/log/bridge.err"; then
  log "SKIP: cannot create a bridge: $(cat "$DIR/log/bridge.err")"
  rm -rf "$DIR"; exit 77
fi
ip addr add "$NET.254/24" dev "$BR"
ip link set "$BR" up
{
  echo "127.0.0.1 localhost"
  echo "::1 localhost"
  echo "$NET.1 slurmctl"
  echo "$NET.254 labhost"
  for i in $(seq 1 "$NODES"); do echo "$NET.$((10 + i)) n$i"; done
} > "$DIR/hosts"

mkns() {  # mkns <short> <ip>: netns ${P}-<short>; veth ${P}h-<short> (bridge side) <-> eth0 inside
  local ns=$P-$1 h=${P}h-$1 p=${P}p-$1
  ip netns add "$ns"
  ip link add "$h" type veth peer name "$p"
  ip link set "$p" netns "$ns"
  ip -n "$ns" link set "$p" name eth0
  ip -n "$ns" addr add "$2/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
  ip link set "$h" master "$BR" up
}
mkns ctl "$NET.1"
for i in $(seq 1 "$NODES"); do mkns "n$i" "$NET.$((10 + i))"; done
if [ -n "$RATE" ]; then
  rc=0; "$HERE/lab_shape.sh" "$RATE" || rc=$?
  if [ "$rc" = 77 ]; then trap - ERR; "$HERE/lab_down.sh" || true; exit 77; fi
  [ "$rc" = 0 ] || fail $LINENO
fi

# ------------------------------------------------------------------ slurm.conf
{
  echo "$MARK ($DIR)"
  cat <<EOF
ClusterName=fblab
SlurmctldHost=slurmctl($NET.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
# per-node scratch: PMIx creates its client dirs under TmpFS, and the nodes share /tmp
TmpFS=$DIR/tmp/%n
# slurmd 22.05 needs a cgroup mount to start even with these (see lab_common.sh: node_exec)
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
# sbatch --wait polls every 2 s only while MinJobAge/2 > its interval; the default (300) makes it
# poll every 32 s. Cost: finished jobs vanish from squeue after ~4 s (read the job's output file).
MinJobAge=$MIN_JOB_AGE
EOF
  for i in $(seq 1 "$NODES"); do
    echo "NodeName=n$i NodeHostname=n$i NodeAddr=$NET.$((10 + i)) CPUs=$CPUS Boards=1 SocketsPerBoard=1 CoresPerSocket=$CPUS ThreadsPerCore=1 RealMemory=$MEM State=UNKNOWN"
  done
  echo "PartitionName=lab Nodes=ALL Default=YES MaxTime=60 State=UP OverSubscribe=NO"
} > "$CONF"
for i in $(seq 1 "$NODES"); do mkdir -p "$DIR/tmp/n$i" "$DIR/spool/n$i"; done
export SLURM_CONF=$CONF

# ------------------------------------------------------------------ daemons
# munged: private key + socket, so the lab neither needs nor disturbs a system munge
head -c 1024 /dev/urandom > "$DIR/munge/munge.key"
chmod 600 "$DIR/munge/munge.key"
munged --socket="$MUNGE_SOCKET" --key-file="$DIR/munge/munge.key" --pid-file="$DIR/munge/munged.pid" \
  --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed"
munge -S "$MUNGE_SOCKET" -n | unmunge -S "$MUNGE_SOCKET" >/dev/null

# slurmctld: own netns (port 6817 exists only on the bridge) + own UTS ns: gethostname() must be
# "slurmctl" to match SlurmctldHost, else "This host (...) not a valid controller" and it exits.
nsenter --net="/run/netns/$P-ctl" -- unshare --mount --uts --propagation private -- sh -ec "
  mount --bind '$DIR/hosts' /etc/hosts
  hostname slurmctl
  exec slurmctld -f '$CONF' -i" >"$DIR/log/slurmctld.start" 2>&1
wait_file "$DIR/slurmctld.pid" 5

# slurmd per node: own netns + mount ns + UTS ns. Plain `ip netns exec` cannot be used: it remounts
# /sys and hides /sys/fs/cgroup, and slurmd 22.05 then fails ("Unable to initialize cgroup plugin").
# So: fresh sysfs (only lo + eth0 in /sys/class/net) with the host's cgroup tree moved back on top.
for i in $(seq 1 "$NODES"); do
  nsenter --net="/run/netns/$P-n$i" -- unshare --mount --uts --propagation private -- sh -ec "
    mount --bind '$DIR/hosts' /etc/hosts
    mount --rbind /sys/fs/cgroup '$DIR/cgmove'
    mount -t sysfs sysfs /sys
    mount --move '$DIR/cgmove' /sys/fs/cgroup
    mount -t tmpfs -o mode=1777,size=${SHM_MB}m fblab-shm-n$i /dev/shm
    hostname n$i
    exec slurmd -f '$CONF' -N n$i" >"$DIR/log/slurmd-n$i.start" 2>&1
  wait_file "$DIR/slurmd-n$i.pid" 5
done

up=0
for _ in $(seq 1 300); do
  up=$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -c ' idle$' || true)
  [ "$up" = "$NODES" ] && break
  sleep 0.1
done
if [ "$up" != "$NODES" ]; then sinfo -N -l >&2 || true; log "nodes not idle after 30 s"; fail $LINENO; fi
trap - ERR
{ echo "export SLURM_CONF=$CONF"; echo "export FBLAB_NET=$NET FBLAB_PREFIX=$P FBLAB_DIR=$DIR"; } > "$DIR/env.sh"
log "up in $(elapsed)s: $NODES nodes idle ($(sinfo -h -N -o '%N' | sort -u | paste -sd,)); SLURM_CONF=$CONF"
cat "$DIR/env.sh"

#!/usr/bin/env bash
# model-lab-runs.sh - the measured runs that fabricbench-model's lab validation fits and checks:
# tcp + mpi AllReduce/AllGather/ReduceScatter on the namespace/Slurm lab (tests/e2e/slurm/lab_up.sh)
# with every node's "NIC" shaped by tc to RATE, one run folder per nodes x ranks-per-node shape.
#
#   flock /work/locks/lab scripts/model-lab-runs.sh RATE OUTDIR PREFIX [SHAPES]
#   e.g. flock /work/locks/lab scripts/model-lab-runs.sh 1gbit results 20261201-lab "2x1 3x1 4x1 1x2 2x2 3x2 4x2"
#
# Writes OUTDIR/PREFIX-RATE-<N>x<G>/ (table.csv, run.json, report.md: fabricbench's own folders,
# launched with sbatch --wait slurm/collectives.sbatch). Then fit and check with, for example:
#   fabricbench-model validate --fit OUTDIR/PREFIX-RATE-2x1 --check OUTDIR/PREFIX-RATE-3x1 ...
# Knobs (environment): FB_SIZES (-b 4K -e 64M -f 2), FB_ITERS (3), FB_WARMUP (1),
# FB_TRANSPORTS (tcp,mpi), FB_BIN (build/benchmarks/fabricbench), FB_PROGRESS (block), TBF_BURST
# (tc tbf bucket; default about 2 ms of RATE), LAB_SYSCTL ("key=value ...", set in every node's
# namespace, e.g. net.ipv4.tcp_slow_start_after_idle=0). Needs root (exit 77 without).
# Exit: 0 every run passed; 1 a run failed; 2 bad arguments; 77 the lab cannot run here.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
LAB=$SRC/tests/e2e/slurm
RATE=${1:-}
OUTDIR=${2:-}
PREFIX=${3:-}
SHAPES=${4:-"2x1 3x1 4x1"}
[ -n "$RATE" ] && [ -n "$OUTDIR" ] && [ -n "$PREFIX" ] || { echo "usage: $0 RATE OUTDIR PREFIX [\"2x1 3x1 ...\"]" >&2; exit 2; }
case "$RATE" in *[0-9]*bit) ;; *) echo "model-lab-runs: bad rate '$RATE' (e.g. 1gbit, 200mbit)" >&2; exit 2 ;; esac
maxn=1
for s in $SHAPES; do
  [[ "$s" =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] || { echo "model-lab-runs: bad shape '$s' (NxG, e.g. 3x1)" >&2; exit 2; }
  [ "${BASH_REMATCH[1]}" -gt "$maxn" ] && maxn=${BASH_REMATCH[1]}
done
[ "$maxn" -ge 2 ] || maxn=2
for kv in ${LAB_SYSCTL:-}; do
  [[ "$kv" =~ ^([a-z0-9_.]+)=([^=]+)$ && -e /proc/sys/${BASH_REMATCH[1]//.//} ]] ||
    { echo "model-lab-runs: error: LAB_SYSCTL entry '$kv' is not key=value with a key in /proc/sys" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the lab uses network namespaces and tc)"; exit 77; }
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
export FB_HOME=$SRC FB_BIN=${FB_BIN:-$SRC/build/benchmarks/fabricbench} FB_RESULTS_DIR=$OUTDIR FB_TCP_IF=eth0
export FB_LAUNCHER=${FB_LAUNCHER:-srun} FB_TRANSPORTS=${FB_TRANSPORTS:-tcp,mpi}
export FB_SIZES=${FB_SIZES:-"-b 4K -e 64M -f 2"} FB_ITERS=${FB_ITERS:-3} FB_WARMUP=${FB_WARMUP:-1}
export FB_EXTRA_ARGS="--placement out"
# The lab's nodes share this machine's few cores: ranks that spin would take the core a peer on
# another "node" needs (progress.h cannot see that from inside a namespace), so tcp ranks block.
export FB_PROGRESS=${FB_PROGRESS:-block}
# tc tbf bucket: about 2 ms of the rate (1gbit 256kb), at least 128kb (200mbit), unless TBF_BURST
# says otherwise. A full bucket lets the first bytes of every timed batch through at veth speed, and
# the pause between batches refills it, so with lab_shape.sh's 512 KB the 256 KiB..1 MiB rows ran
# faster than the rate by up to the bucket (2 nodes, tcp, 3 batches of 3: 200mbit 256 KiB ReduceScatter
# min 139 us against 5.2 ms; 1gbit 512 KiB AllGather busbw 0.172 GB/s of 0.125) and 2x2 shapes missed
# the model by +15..22 % at 1 MiB. Measured on 2 nodes, tcp, 256 KiB..32 MiB, busbw: 1gbit 256kb
# 0.117-0.121 GB/s but one 8 MiB AllGather row at 0.103; 200mbit 64kb 0.0234-0.0242 at every size
# (min/max within 3 %); 128kb at 1gbit 0.111-0.121; 32kb and 16kb at 1gbit 0.091-0.044, falling with size.
# The floor is 128kb, not 64kb: a bucket must exceed one GSO packet on veth (up to 64 KiB), and at
# 200mbit with 64kb 4 nodes lost rate that 2 nodes did not (ReduceScatter 1-4 MiB, tcp: 2 nodes 95 %
# of nominal, 4 nodes 86-90 %; with 128kb 96 % and 94-96 %), so 4-node runs fell 7-21 % (median)
# behind the 2-node fit.
if [ -z "${TBF_BURST:-}" ]; then
  TBF_BURST=$(python3 -c '
import math, re, sys
m = re.fullmatch(r"([0-9.]+)([kmg]?)bit", sys.argv[1].lower())
rate = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8  # bytes/s
print(max(128, 2 ** round(math.log2(rate * 0.002 / 1024))), end="kb")  # 2 ms, a power of two
' "$RATE") || { echo "model-lab-runs: cannot read rate '$RATE'" >&2; exit 2; }
fi
export TBF_BURST
export FBLAB_NODES=$maxn
WORK=$(mktemp -d /tmp/fb-model-lab.XXXXXX)
cleanup() { "$LAB/lab_down.sh" >/dev/null 2>&1 || echo "model-lab-runs: lab_down.sh failed" >&2; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' TERM INT HUP
rc=0; FBLAB_RATE=$RATE "$LAB/lab_up.sh" > "$WORK/env.sh" || rc=$?
[ "$rc" = 77 ] && { echo "SKIP: the lab cannot run here (see above)"; exit 77; }
[ "$rc" = 0 ] || { echo "model-lab-runs: lab_up.sh exited $rc" >&2; exit 1; }
source "$WORK/env.sh"
for kv in ${LAB_SYSCTL:-}; do
  for i in $(seq 1 "$maxn"); do
    ip netns exec "$FBLAB_PREFIX-n$i" sysctl -q -w "$kv" ||
      { echo "model-lab-runs: error: sysctl $kv failed in n$i" >&2; exit 1; }
  done
  echo "model-lab-runs: $kv in n1..n$maxn"
done
"$LAB/lab_shape.sh" show
echo "model-lab-runs: FB_PROGRESS=$FB_PROGRESS TBF_BURST=$TBF_BURST"
failed=0
for s in $SHAPES; do
  n=${s%x*} g=${s#*x}
  id=$PREFIX-$RATE-$s
  rm -rf "${OUTDIR:?}/$id"
  t0=$SECONDS
  echo "== $id: $n node(s) x $g rank(s), $FB_TRANSPORTS, $FB_SIZES, -n $FB_ITERS -w $FB_WARMUP"
  (cd "$SRC" && FB_RUN_ID=$id timeout 1500 sbatch --wait --time=25 -N "$n" --ntasks-per-node="$g" \
     -o "$WORK/%x-%j.out" slurm/collectives.sbatch allreduce,allgather,reducescatter) > "$WORK/sbatch.out" 2>&1
  jrc=$?
  grep -hE '^(\+ |fabricbench job)' "$WORK"/*.out 2>/dev/null | tail -2
  if [ "$jrc" != 0 ]; then
    echo "model-lab-runs: $id FAILED (sbatch exit $jrc)" >&2
    tail -n 30 "$WORK"/*.out >&2
    failed=1
  else
    echo "== $id: $(($(wc -l < "$OUTDIR/$id/table.csv") - 1)) rows in $((SECONDS - t0)) s"
  fi
  rm -f "$WORK"/*.out
done
exit $failed

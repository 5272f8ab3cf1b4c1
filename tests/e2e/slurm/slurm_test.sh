#!/usr/bin/env bash
# slurm_test.sh CASE - one end-to-end test on the project's own local Slurm lab (lab_up.sh): brings
# the lab up, runs CASE, tears the lab down (nothing left behind), exits 0 pass / 1 fail / 77 skip.
#
#   lab               lab up: srun sees n1,n2 with their own hostname and NIC; lab down leaves nothing
#   sbatch-srun       sbatch --wait slurm/allreduce.sbatch, 2 nodes x 2 ranks, srun --mpi=pmix
#   sbatch-mpirun     the same with mpirun inside the allocation
#   sbatch-srun-pmi2  sbatch --wait slurm/allreduce.sbatch with FB_MPI_LAUNCH=pmi2: srun --mpi=pmi2 starts
#                     a build against MPICH (FB_TEST_BIN from build-mpich/; Slurm's pmi2 plugin serves
#                     MPICH's PMI client); 2 nodes x 2 ranks, tcp and mpi rows, MPICH in run.json
#   collectives       slurm/collectives.sbatch (all six collectives), 2 nodes x 2 ranks
#   shaped RATE       NICs shaped with tc tbf to RATE (1gbit, 200mbit); iperf3 goodput n2->n1 is the
#                     ground truth; 1 rank per node, 64 MiB tcp AllReduce and P2P ring busbw must be
#                     90-100 % of it; mpi reference rows in the same table
#   install-requeue   cmake --install to a prefix; from <prefix>/share/fabricbench, with no FB_HOME, FB_BIN
#                     or build tree in the environment, sbatch slurm/allreduce.sbatch: the installed binary
#                     runs; the finished job is requeued once (scontrol requeuehold, then release) and runs again: both
#                     runs' result folders are kept (<job>.<step> and <job>.<step>-2), the first unchanged
#   kill LAUNCHER WHAT  SIGKILL mid-run to the job's processes on n2: WHAT = ranks (the fabricbench
#                     processes) or all (also slurmstepd and orted: the node is gone for the job).
#                     The job must fail within 60 s, its log must name n2, and the rows written
#                     before are intact. LAUNCHER: srun or mpirun.
#   doctor            fabricbench --doctor by srun on both nodes, alike and then with n2 made to differ
#                     (NCCL_SOCKET_IFNAME naming a missing interface, FB_DOCTOR_TEST_VERSIONS)
#
# Needs: root, namespaces, slurmd/slurmctld/slurm-client/munge (+ iperf3 for shaped), Open MPI,
# python3 and the fabricbench binary: FB_TEST_BIN=<build>/benchmarks/fabricbench (ctest sets it).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
CASE=${1:?case}
source "$HERE/lab_common.sh"

T0=$(date +%s.%N)
now() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
say() { echo "[slurm-test $CASE +$(now)s] $*"; }
fail() { say "FAIL: $*"; FAILED=1; }
skip() { echo "SKIP: $*"; exit 77; }

# ---- can it run here? (skip = 77 with the reason; never a pass)
msg=$(lab_check_prereqs 2>&1) || { echo "${msg#*] }"; exit 77; }
for c in mpirun python3; do command -v "$c" >/dev/null || skip "missing $c (apt-get install openmpi-bin python3)"; done
[ "$CASE" != shaped ] || command -v iperf3 >/dev/null || skip "missing iperf3 (apt-get install iperf3)"
BIN=${FB_TEST_BIN:-$SRC/build/benchmarks/fabricbench}
[ -x "$BIN" ] || { echo "FAIL: fabricbench binary not found: $BIN (set FB_TEST_BIN)"; exit 1; }

WORK=$(mktemp -d /tmp/fabricbench-slurmtest.XXXXXX)
FAILED=0
SKIPPED=""
cleanup() {
  local rc=$?
  # an exit that neither failed nor skipped on purpose (a script error, set -u) is a failure
  if [ "$rc" != 0 ] && [ "$FAILED" = 0 ] && [ -z "$SKIPPED" ]; then
    say "FAIL: the test stopped early (exit $rc)"; FAILED=1
  fi
  if [ "$FAILED" != 0 ] || [ "$rc" != 0 ]; then
    for f in "$WORK"/*.out; do [ -e "$f" ] && { echo "==== job log $f"; tail -n 60 "$f"; }; done
    for f in "$DIR"/log/slurmctld.log "$DIR"/log/slurmd-n*.log; do [ -e "$f" ] && { echo "==== $f"; tail -n 15 "$f"; }; done
  fi
  "$HERE/lab_down.sh" || { echo "FAIL: lab_down.sh left something behind"; FAILED=1; }
  rm -rf "$WORK"
  if [ "$FAILED" != 0 ]; then echo "RESULT: $CASE FAILED"; exit 1; fi
  if [ -n "$SKIPPED" ]; then echo "SKIP: $SKIPPED"; exit 77; fi
  echo "RESULT: $CASE passed in $(now) s"
  exit 0
}
trap cleanup EXIT
trap 'fail "interrupted (signal)"; exit 1' TERM INT HUP

rate=""; [ "$CASE" != shaped ] || rate=${2:-}
FBLAB_RATE=$rate "$HERE/lab_up.sh" >/dev/null
rc=$?
[ "$rc" = 77 ] && { trap - EXIT; rm -rf "$WORK"; skip "the lab cannot run here (see above)"; }
[ "$rc" = 0 ] || { fail "lab_up.sh exited $rc"; exit 1; }
source "$DIR/env.sh"
say "lab up"

# The job's settings: the binary under test, results in the test's own folder (job ids restart at 1
# in every lab), the tcp baseline on the node's eth0; everything else is slurm/fabricbench.env as
# shipped (Open MPI finds eth0 by itself: each node has only lo and eth0).
export FB_HOME=$SRC FB_BIN=$BIN FB_RESULTS_DIR=$WORK/results FB_TCP_IF=eth0
CHECK="python3 $HERE/check_run.py"

# The folder fabricbench chose for job $1 (its default run id is <job>.<step>, -2 when taken); with
# $2 = N, the N-th one (1 = the first run).
result_dir() { ls -d "$FB_RESULTS_DIR/$1" "$FB_RESULTS_DIR/$1".* 2>/dev/null | sort -V | sed -n "${2:-1}p"; }

# submit <sbatch args...>: sbatch --wait from the repository root, as a user would; sets JOB, JRC, JLOG
submit() {
  local out
  out=$(cd "$SRC" && sbatch --parsable --time=3 -o "$WORK/%x-%j.out" "$@" 2>&1) || { fail "sbatch: $out"; return 1; }
  JOB=${out%%;*}
  JRC=0
  # --wait is given as its own call so that JOB is known while the job runs (the kill case needs it)
  return 0
}
wait_job() {  # wait_job <seconds>: until JOB has finished; JRC = its exit code (from slurmctld)
  local t=$1 i line=""
  JRC=unknown
  for i in $(seq 1 $((t * 5))); do
    line=$(scontrol -o show job "$JOB" 2>/dev/null)
    case "$line" in *JobState=PENDING*|*JobState=RUNNING*|*JobState=COMPLETING*|*JobState=CONFIGURING*) ;;
      *) break ;; esac
    sleep 0.2
  done
  JSTATE=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<< "$line")
  JRC=$(sed -n 's/.* ExitCode=\([0-9]*\):.*/\1/p' <<< "$line")
  JLOG=$(ls "$WORK"/*-"$JOB".out 2>/dev/null | head -1)
  [ -n "$JRC" ] || JRC=unknown
  case "$JSTATE" in PENDING|RUNNING|COMPLETING|CONFIGURING)
    JRC="still $JSTATE after $t s"; scancel "$JOB" 2>/dev/null ;; esac
}
sbatch_wait() {  # sbatch_wait <sbatch args...>: the user's path, `sbatch --wait`; JRC = its exit code
  local t=$(date +%s.%N)
  (cd "$SRC" && timeout 200 sbatch --wait --time=3 -o "$WORK/%x-%j.out" "$@" > "$WORK/sbatch.stdout" 2>&1)
  JRC=$?
  JOB=$(sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' "$WORK/sbatch.stdout")
  JLOG=$(ls "$WORK"/*-"$JOB".out 2>/dev/null | head -1)
  say "sbatch --wait $* -> exit $JRC in $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s (job $JOB)"
  [ -n "$JLOG" ] && grep -E '^(\+ |fabricbench job)' "$JLOG"
}

case "$CASE" in
  lab)
    hosts=$(srun -N2 --ntasks-per-node=1 hostname | sort | paste -sd,)
    [ "$hosts" = "n1,n2" ] || fail "srun -N2 hostname gave '$hosts', expected n1,n2"
    nics=$(srun -N2 --ntasks-per-node=1 sh -c 'echo $(hostname):$(ls /sys/class/net | paste -sd+)' | sort | paste -sd,)
    [ "$nics" = "n1:eth0+lo,n2:eth0+lo" ] || fail "node NICs '$nics', expected n1:eth0+lo,n2:eth0+lo"
    addr=$(srun -N1 -w n2 ip -4 -o addr show dev eth0 | awk '{print $4}')
    [ "$addr" = "$NET.12/24" ] || fail "n2 eth0 address '$addr', expected $NET.12/24"
    say "srun: hosts $hosts, NICs $nics, n2 eth0 $addr"
    "$HERE/lab_down.sh" || fail "lab_down.sh failed"
    if left=$(lab_anything_left); then fail "left behind after lab_down.sh:$left"; fi
    pgrep -f "munged --socket=$MUNGE_SOCKET( |$)" >/dev/null && fail "our munged still runs"
    ;;

  sbatch-srun|sbatch-mpirun)
    export FB_LAUNCHER=${CASE#sbatch-} FB_SIZES="-b 8 -e 4M -f 32" FB_ITERS=5 FB_WARMUP=2
    sbatch_wait slurm/allreduce.sbatch
    [ "$JRC" = 0 ] || fail "job exited $JRC"
    R=$(result_dir "$JOB")
    [ -s "$R/table.csv" ] && [ -s "$R/run.json" ] || fail "no $R/table.csv or run.json"
    $CHECK hosts "$R" n1,n2 || fail "fingerprint hosts"
    $CHECK rows "$R" 4 2 || fail "rows"
    impls=$(awk -F, 'NR>1{print $5}' "$R/table.csv" | sort -u | paste -sd,)
    colls=$(awk -F, 'NR>1{print $4}' "$R/table.csv" | sort -u | paste -sd,)
    say "rows: $(($(wc -l < "$R/table.csv") - 1)), collectives: $colls, impls: $impls"
    [ "$colls" = allreduce ] || fail "collectives '$colls', expected allreduce"
    case ",$impls," in *,tcp,*) ;; *) fail "no tcp rows (impls: $impls)";; esac
    case ",$impls," in *,mpi,*) ;; *) fail "no mpi rows (impls: $impls)";; esac
    grep -q "launcher $FB_LAUNCHER" "$JLOG" || fail "the job did not use $FB_LAUNCHER"
    # The lab has no GPU: the GPU paths are reported as skipped, each with its reason.
    for b in nccl cuda; do
      line=$(grep -m1 -E "^# skipped $b: .{8,}" "$JLOG") || { fail "the job log does not say why $b was skipped"; continue; }
      say "GPU path: $line"
    done
    ;;

  sbatch-srun-pmi2)
    ldd "$BIN" | grep -q libmpich || { SKIPPED="$BIN is not linked against MPICH (this case runs from the MPICH build, build-mpich/)"; exit 77; }
    export FB_LAUNCHER=srun FB_MPI_LAUNCH=pmi2 FB_SIZES="-b 8 -e 4M -f 32" FB_ITERS=5 FB_WARMUP=2 FB_TRANSPORTS=tcp,mpi
    sbatch_wait slurm/allreduce.sbatch
    [ "$JRC" = 0 ] || fail "job exited $JRC"
    grep -q -- "^+ srun --mpi=pmi2 " "$JLOG" || fail "the job did not launch with srun --mpi=pmi2"
    R=$(result_dir "$JOB")
    [ -s "$R/table.csv" ] && [ -s "$R/run.json" ] || fail "no $R/table.csv or run.json"
    $CHECK hosts "$R" n1,n2 || fail "fingerprint hosts"
    $CHECK rows "$R" 4 2 || fail "rows"
    impls=$(awk -F, 'NR>1{print $5}' "$R/table.csv" | sort -u | paste -sd,)
    [ "$impls" = mpi,tcp ] || fail "impls '$impls', expected mpi,tcp"
    mpilib=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))).count("MPICH"))' "$R/run.json")
    [ "$mpilib" -gt 0 ] || fail "run.json does not name MPICH"
    say "rows: $(($(wc -l < "$R/table.csv") - 1)), impls: $impls, srun --mpi=pmi2, run.json names MPICH $mpilib time(s)"
    ;;

  collectives)
    export FB_SIZES="-b 1K -e 1M -f 32" FB_ITERS=3 FB_WARMUP=1 FB_TRANSPORTS=tcp,mpi
    sbatch_wait slurm/collectives.sbatch
    [ "$JRC" = 0 ] || fail "job exited $JRC"
    R=$(result_dir "$JOB")
    $CHECK hosts "$R" n1,n2 || fail "fingerprint hosts"
    $CHECK rows "$R" 4 2 >/dev/null || fail "rows"
    colls=$(awk -F, 'NR>1{print $4}' "$R/table.csv" | sort -u | paste -sd,)
    say "collectives: $colls"
    [ "$colls" = "allgather,allreduce,alltoall,broadcast,p2pring,reducescatter" ] || fail "collectives '$colls'"
    ;;

  shaped)
    RATE=${2:?rate}
    "$HERE/lab_shape.sh" show
    # ground truth: TCP goodput n2 -> n1 across the shaped veths, first second (slow start) omitted
    node_exec 1 timeout 20 iperf3 -s -1 -B "$NET.11" -p 5211 >/dev/null 2>&1 &
    srv=$!
    sleep 0.5
    node_exec 2 timeout 20 iperf3 -c "$NET.11" -B "$NET.12" -p 5211 -t 4 -O 1 -J > "$WORK/iperf.json"
    wait "$srv"
    GOODPUT=$(python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['end']; print('%.2f' % (e['sum_received']['bits_per_second']/8e6))" "$WORK/iperf.json") \
      || { fail "iperf3 gave no result"; exit 1; }
    say "iperf3 n2->n1 goodput at $RATE: $GOODPUT MB/s (iperf3 -c $NET.11 -B $NET.12 -t 4 -O 1)"
    export FB_LAUNCHER=srun FB_TRANSPORTS=tcp,mpi FB_SIZES="-b 64M -e 64M" FB_ITERS=2 FB_WARMUP=1 \
           FB_EXTRA_ARGS="--placement out"
    ctr=/sys/class/net/${P}h-n2/statistics   # n2's veth, bridge side: rx = sent by n2, tx = to n2
    rx0=$(cat $ctr/rx_bytes) tx0=$(cat $ctr/tx_bytes)
    sbatch_wait --ntasks-per-node=1 slurm/collectives.sbatch allreduce,p2pring
    [ "$JRC" = 0 ] || fail "job exited $JRC"
    # each of the 4 rows made n2 send and receive >= 64 MiB per operation, >= 3 operations
    # (warm-up + 2 timed): the traffic must have crossed n2's veth, not loopback
    sent=$(( ($(cat $ctr/rx_bytes) - rx0) >> 20 )) recv=$(( ($(cat $ctr/tx_bytes) - tx0) >> 20 ))
    say "n2's veth carried $sent MiB out and $recv MiB in during the job"
    [ "$sent" -ge 768 ] && [ "$recv" -ge 768 ] || fail "less than 4 x 3 x 64 MiB crossed n2's veth"
    R=$(result_dir "$JOB")
    $CHECK hosts "$R" n1,n2 || fail "fingerprint hosts"
    $CHECK rows "$R" 2 2 >/dev/null || fail "rows"
    # The physical limit: tbf meters whole Ethernet frames (MTU + 14 B header); TCP carries MSS =
    # MTU - 40 (IP+TCP) - 12 (timestamps) bytes of payload in each. 1gbit: 119.55 MB/s.
    mtu=$(cat /sys/class/net/${P}h-n1/mtu)
    LIMIT=$(awk -v r="$RATE" -v m="$mtu" 'BEGIN{ v = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u);
      f = (u == "gbit") ? 1e9 : (u == "mbit") ? 1e6 : (u == "kbit") ? 1e3 : 1;
      printf "%.2f", v * f / 8 * (m - 52) / (m + 14) / 1e6 }')
    say "TCP goodput limit at $RATE, MTU $mtu: $LIMIT MB/s; iperf3 measured $GOODPUT MB/s"
    # lower bound: 90 % of what iperf3 measured; upper bound: the limit + 1 % (tbf's 512 KB burst is
    # 0.4 % of a 2 x 64 MiB timed batch; timer and scheduling jitter on a shared machine)
    $CHECK bw "$R" $((64 << 20)) "$GOODPUT" "$LIMIT" 0.90 1.01 tcp:allreduce,tcp:p2pring \
      || fail "tcp busbw out of range"
    # % of nominal: against the tbf rate on eth0 (1gbit = 125 MB/s), named as the basis
    RATE_BPS=$(awk -v r="$RATE" 'BEGIN{ v = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u);
      f = (u == "gbit") ? 1e9 : (u == "mbit") ? 1e6 : (u == "kbit") ? 1e3 : 1; printf "%.0f", v * f / 8 }')
    $CHECK nominal "$R" "$RATE_BPS" tcp:allreduce,tcp:p2pring || fail "tcp % of nominal"
    grep -q "tc tbf" "$R/report.md" || fail "report.md does not show the tcp nominal basis (tc tbf)"
    say "mpi reference rows (reported, not bounded: Open MPI's tcp BTL, see slurm/fabricbench.env):"
    $CHECK bw "$R" $((64 << 20)) "$GOODPUT" "$LIMIT" 0 100 mpi:allreduce,mpi:p2pring || fail "mpi rows missing"
    ;;

  require_gpu)
    # GPUs given to the job (Slurm sets SLURM_GPUS_ON_NODE; faked here: the lab has no GPUs) make a
    # GPU path required: tcp/mpi rows alone end "partial", exit 4. FB_REQUIRE_GPU=0 turns it off.
    export FB_SIZES="-b 1K -e 1K" FB_ITERS=2 FB_WARMUP=1 FB_TRANSPORTS=tcp,mpi
    SLURM_GPUS_ON_NODE=2 sbatch_wait --export=ALL,SLURM_GPUS_ON_NODE=2 slurm/allreduce.sbatch
    [ "$JRC" = 4 ] || fail "job with GPUs and no GPU path exited $JRC, expected 4 (partial)"
    grep -q -- "--require gpu" "$JLOG" || fail "the job did not pass --require gpu"
    grep -q "PARTIAL" "$JLOG" || fail "the job log does not say PARTIAL"
    grep -q "^# partial: .*measured: tcp, mpi" "$JLOG" || fail "no final 'partial' line listing what was measured"
    FB_REQUIRE_GPU=0 sbatch_wait --export=ALL,SLURM_GPUS_ON_NODE=2 slurm/allreduce.sbatch
    [ "$JRC" = 0 ] || fail "FB_REQUIRE_GPU=0: job exited $JRC"
    sbatch_wait slurm/allreduce.sbatch
    [ "$JRC" = 0 ] || fail "job without GPUs exited $JRC"
    ;;

  kill)
    "$HERE/lab_shape.sh" 1gbit; rc=$?
    [ "$rc" = 77 ] && { SKIPPED="the kernel cannot shape the lab's links (see above)"; exit 77; }
    [ "$rc" = 0 ] || { fail "lab_shape.sh 1gbit exited $rc"; exit 1; }
    WHAT=${3:-ranks}
    case "$WHAT" in ranks|all) ;; *) fail "kill: what is '$WHAT'? (ranks or all)"; exit 1;; esac
    export FB_LAUNCHER=${2:-srun} FB_TRANSPORTS=tcp FB_SIZES="-b 256K -e 1G -f 2" FB_ITERS=3 FB_WARMUP=1 \
           FB_EXTRA_ARGS="--placement out"
    submit slurm/allreduce.sbatch || exit 1
    say "job $JOB submitted; waiting for 3 rows in $FB_RESULTS_DIR/$JOB*/table.csv"
    for _ in $(seq 1 300); do
      R=$(result_dir "$JOB")
      [ -n "$R" ] && [ -s "$R/table.csv" ] && [ "$(($(wc -l < "$R/table.csv") - 1))" -ge 3 ] && break
      sleep 0.2
    done
    before=$(($(wc -l < "$R/table.csv" 2>/dev/null || echo 1) - 1))
    [ "$before" -ge 3 ] || { fail "the job wrote $before rows in 60 s"; scancel "$JOB"; exit 1; }
    slurmd2=$(cat "$DIR/slurmd-n2.pid")
    victims=$(ip netns pids "$P-n2" | grep -vx "$slurmd2" | paste -sd' ')
    if [ "$WHAT" = ranks ]; then   # only the benchmark's ranks on n2 (as the OOM killer would)
      victims=$(for p in $victims; do [ "$(cat /proc/$p/comm 2>/dev/null)" = fabricbench ] && echo "$p"; done | paste -sd' ')
    fi
    [ -n "$victims" ] || { fail "no job processes found on n2"; exit 1; }
    say "$before rows written; SIGKILL to the job's $WHAT on n2 (pids $victims: $(ps -o comm= -p ${victims// /,} | sort | uniq -c | awk '{print $2"x"$1}' | paste -sd' '))"
    tk=$(date +%s.%N)
    kill -KILL $victims
    wait_job 90
    dt=$(awk -v a="$tk" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    say "job $JOB ended $dt s after the kill, exit $JRC"
    # the lines that name the lost node (fabricbench's own, srun's or mpirun's)
    named=$(grep -vE '^(\+ |#|fabricbench job [0-9]+: allreduce on)' "$JLOG" | grep -nw n2)
    say "job log lines naming n2:"; echo "$named" | head -n 8
    [ "$JRC" != 0 ] || fail "the job passed although n2's processes were killed"
    awk -v d="$dt" 'BEGIN{exit !(d <= 60)}' || fail "the job took $dt s (> 60 s) to fail"
    [ -n "$named" ] || fail "no line of the job log names the lost node n2"
    grep -q "^fabricbench job $JOB: FAILED" "$JLOG" || fail "the job log does not say FAILED"
    $CHECK intact "$R" "$before" || fail "rows written before the kill are not intact"
    ;;

  install-requeue)
    BUILD=${FB_TEST_BUILD_DIR:-$SRC/build}
    PREFIX=$WORK/prefix
    cmake --install "$BUILD" --prefix "$PREFIX" > "$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; fail "cmake --install failed"; exit 1; }
    for f in bin/fabricbench bin/fabricbench-report share/fabricbench/slurm/allreduce.sbatch \
             share/fabricbench/slurm/collectives.sbatch share/fabricbench/slurm/fabricbench_job.sh \
             share/fabricbench/slurm/fabricbench.env; do
      [ -e "$PREFIX/$f" ] || fail "cmake --install did not install $f"
    done
    say "installed: $(cd "$PREFIX" && find bin share -type f | sort | paste -sd' ')"
    "$PREFIX/bin/fabricbench" --version | head -n 1 | grep -q '^fabricbench ' || fail "installed fabricbench --version"
    # A user of the install: no FB_HOME/FB_BIN, the build tree nowhere in PATH; the results go to the
    # submit directory's results/.
    unset FB_HOME FB_BIN FB_RESULTS_DIR
    export FB_LAUNCHER=srun FB_TRANSPORTS=tcp,mpi FB_SIZES="-b 8 -e 1M -f 32" FB_ITERS=3 FB_WARMUP=1
    SUB=$PREFIX/share/fabricbench
    FB_RESULTS_DIR=$SUB/results   # only for result_dir below (not exported)
    out=$(cd "$SUB" && sbatch --parsable --requeue --open-mode=append --time=3 -o "$WORK/%x-%j.out" slurm/allreduce.sbatch 2>&1) \
      || { fail "sbatch: $out"; exit 1; }
    JOB=${out%%;*}
    say "job $JOB submitted from $SUB"
    wait_job 120
    # Requeue the finished job at once (it must still be known: MinJobAge is short in the lab), held:
    # slurmd revoked the job's credential when it ended, and a relaunch whose credential is dated in
    # that same second is killed ("Killing non-startable batch JobId: Job credential revoked", seen
    # in CI). Released after 2 s, the new credential is younger than the revocation.
    scontrol requeuehold "$JOB" || { fail "scontrol requeuehold $JOB failed (first run: state $JSTATE, exit $JRC)"; exit 1; }
    sleep 2
    scontrol release "$JOB" || { fail "scontrol release $JOB failed"; exit 1; }
    [ "$JRC" = 0 ] || fail "first run: job state $JSTATE, exit $JRC"
    R1=$(result_dir "$JOB" 1)
    [ -n "$R1" ] && [ -s "$R1/table.csv" ] || { fail "first run left no results in $SUB/results/$JOB*"; exit 1; }
    grep -q "^+ .* $PREFIX/bin/fabricbench " "$JLOG" || fail "the job did not run the installed binary ($(grep '^+ ' "$JLOG"))"
    sum1=$(cat "$R1"/table.csv "$R1"/run.json | md5sum)
    rows1=$(($(wc -l < "$R1/table.csv") - 1))
    say "first run: $rows1 rows in $R1"
    scontrol update jobid="$JOB" StartTime=now >/dev/null 2>&1 || true
    for _ in $(seq 1 100); do   # until the requeued run has started (or finished)
      st=$(scontrol -o show job "$JOB" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
      rc_=$(scontrol -o show job "$JOB" 2>/dev/null | sed -n 's/.* Restarts=\([0-9]*\).*/\1/p')
      [ "${rc_:-0}" -ge 1 ] && [ "$st" != PENDING ] && break
      sleep 0.2
    done
    say "requeued: Restarts=${rc_:-?}, state $st"
    wait_job 120
    [ "$JRC" = 0 ] || fail "requeued run: job state $JSTATE, exit $JRC"
    R2=$(result_dir "$JOB" 2)
    [ -n "$R2" ] && [ -s "$R2/table.csv" ] || fail "the requeued run left no second result folder (have: $(ls "$SUB/results"))"
    rows2=$(($(wc -l < "$R2/table.csv" 2>/dev/null || echo 1) - 1))
    say "requeued run: $rows2 rows in $R2; folders: $(ls "$SUB/results" | paste -sd' ')"
    [ "$(cat "$R1"/table.csv "$R1"/run.json | md5sum)" = "$sum1" ] || fail "the first run's results changed"
    [ "$rows1" -ge 8 ] && [ "$rows2" = "$rows1" ] || fail "rows: first run $rows1, requeued run $rows2"
    grep -q "requeued run 1" "$JLOG" || fail "the job log does not mention the requeued run"
    $CHECK rows "$R1" 4 2 >/dev/null || fail "first run's rows"
    $CHECK rows "$R2" 4 2 >/dev/null || fail "requeued run's rows"
    ;;

  doctor)
    # fabricbench --doctor across the two lab nodes, launched by srun: first as the lab is (both
    # nodes alike, each reaches the other on eth0), then with n2 made to differ: NCCL_SOCKET_IFNAME
    # names an interface n2 does not have, and FB_DOCTOR_TEST_VERSIONS (the doctor's documented
    # test hook) makes n2 report another MPI version. The tables are kept in $FB_DOCTOR_KEEP if set.
    mkdir -p "$FB_RESULTS_DIR"
    run_doctor() {  # run_doctor <run-id> <extra env for n2>; DRC = exit code, DOUT = output
      local id=$1 n2env=$2
      DOUT=$(timeout 120 srun -N2 --ntasks-per-node=2 --mpi=pmix --kill-on-bad-exit=0 bash -c \
        "if [ \"\$(hostname)\" = n2 ]; then export $n2env; fi; exec $BIN --doctor --results-dir $FB_RESULTS_DIR --run-id $id" 2>&1)
      DRC=$?
      echo "$DOUT"
      [ -z "${FB_DOCTOR_KEEP:-}" ] || { mkdir -p "$FB_DOCTOR_KEEP"; echo "$DOUT" > "$FB_DOCTOR_KEEP/lab-$id.txt"; }
    }
    # want <run-id> <check> <nodes> <verdict> <text>: doctor.json has that row (nodes "n1,n2" or "n2")
    want() {
      python3 - "$FB_RESULTS_DIR/$1/doctor.json" "$2" "$3" "$4" "$5" <<'PY' || fail "doctor $1: no row $2 [$3] $4 with '$5'"
import json, sys
path, check, nodes, verdict, text = sys.argv[1:]
rows = [r for r in json.load(open(path))["rows"] if r["check"] == check]
for r in rows:
    if ",".join(r["nodes"]) == nodes and r["verdict"] == verdict and text in r["evidence"]:
        sys.exit(0)
print("rows of %s: %s" % (check, json.dumps(rows)))
sys.exit(1)
PY
    }
    run_doctor alike "FB_DOCTOR_NOTHING=1"
    say "doctor, nodes alike: exit $DRC"
    echo "$DOUT" | grep -q '2 node(s), one checking rank each' || fail "expected 2 nodes with one checking rank each (4 ranks)"
    want alike net.reach n1,n2 pass "every node reached every other: n1->n2"
    want alike software.same n1,n2 pass "the same on all 2 nodes"
    want alike env.interfaces n1,n2 pass "none of NCCL_SOCKET_IFNAME"
    grep -qE '^[a-z_.]+ +[^ ]+ +fail ' <<< "$DOUT" && exp=1 || exp=0
    [ "$DRC" = "$exp" ] || fail "exit $DRC, expected $exp from the verdicts"
    python3 -c "
import json,sys; j=json.load(open(sys.argv[1])); h=sorted(x['hostname'] for x in j['fingerprint']['hosts']); assert h==['n1','n2'], h" \
      "$FB_RESULTS_DIR/alike/doctor.json" || fail "doctor.json fingerprint hosts"

    run_doctor differ "NCCL_SOCKET_IFNAME=eth9 FB_DOCTOR_TEST_VERSIONS='mpi=Open MPI v9.9.9 (test override)'"
    say "doctor, n2 made to differ: exit $DRC"
    [ "$DRC" = 1 ] || fail "exit $DRC, expected 1"
    want differ env.interfaces n2 fail "NCCL_SOCKET_IFNAME=eth9: no interface starting with 'eth9' on this node"
    want differ env.interfaces n1 pass "none of NCCL_SOCKET_IFNAME"
    want differ software.same n1,n2 fail "mpi: 'Open MPI v4.1.4' on n1 vs 'Open MPI v9.9.9 (test override)' on n2"
    want differ net.reach n1,n2 fail "n2: NCCL_SOCKET_IFNAME=eth9 matches no interface"
    echo "$DOUT" | grep -q '^env.interfaces  *n2 (differs) fail ' || fail "the table does not flag env.interfaces on n2"
    echo "$DOUT" | grep -q '^nodes differ:' || fail "no 'nodes differ' list"
    ;;

  *) echo "unknown case $CASE"; FAILED=1 ;;
esac
exit 0  # the case ran to its end: FAILED holds its verdict (cleanup reports it)

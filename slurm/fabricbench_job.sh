# fabricbench_job.sh - what every slurm/*.sbatch does inside the job. Sourced, then
#   fb_job <collective>
# runs fabricbench once across the whole allocation and exits with its status:
#   0 = every row ran and passed its data check; non-zero = wrong data, a lost rank or node, or a
#   setup error (2 = bad settings, found before anything was launched); 4 = partial: rows are right
#   but a path that was asked for was not measured (a named transport skipped, or GPUs were
#   requested and no GPU path ran: see FB_REQUIRE_GPU in fabricbench.env).
# Settings come from slurm/fabricbench.env (see there).

# The sbatch script runs from a copy in slurmd's spool directory, so its own path says nothing about
# where the repository is. FB_HOME: exported by the user, else the submit directory (or its parent,
# when submitted from inside slurm/; or <dir>/share/fabricbench, an install prefix), else the
# directory of the script as Slurm recorded it. In an install, FB_HOME is <prefix>/share/fabricbench.
fb_find_home() {
  local d cmd
  for d in "${FB_HOME:-}" "${SLURM_SUBMIT_DIR:-}" "${SLURM_SUBMIT_DIR:-.}/.." "${SLURM_SUBMIT_DIR:-.}/share/fabricbench"; do
    [ -n "$d" ] && [ -f "$d/slurm/fabricbench.env" ] && { (cd "$d" && pwd); return 0; }
  done
  cmd=$(scontrol show job "${SLURM_JOB_ID:-0}" 2>/dev/null | sed -n 's/^ *Command=\([^ ]*\).*/\1/p')
  if [ -n "$cmd" ] && [ -f "$(dirname "$cmd")/fabricbench.env" ]; then
    (cd "$(dirname "$cmd")/.." && pwd); return 0
  fi
  return 1
}

fb_die() { echo "fabricbench job: $*" >&2; exit 2; }

# fb_load_modules "cuda nccl openmpi": `module load` of each name, in order (FB_MODULES in
# fabricbench.env). Batch shells often lack the module function: Lmod's and Environment Modules'
# init scripts are tried first. A name that fails to load ends the job, one line, exit 2.
fb_load_modules() {
  local mods=${1:-} m out f
  [ -n "$mods" ] || return 0
  if ! declare -F module >/dev/null && ! command -v module >/dev/null 2>&1; then
    for f in "${MODULESHOME:-/nonexistent}/init/bash" /usr/share/lmod/lmod/init/bash /etc/profile.d/lmod.sh \
             /usr/share/Modules/init/bash /etc/profile.d/modules.sh; do
      # shellcheck disable=SC1090
      [ -r "$f" ] && { source "$f" >/dev/null 2>&1; break; }
    done
  fi
  declare -F module >/dev/null || command -v module >/dev/null 2>&1 \
    || fb_die "FB_MODULES='$mods' but this node has no 'module' command (Lmod or Environment Modules): load them before sbatch and leave FB_MODULES empty"
  local log rc
  log=$(mktemp "${TMPDIR:-/tmp}/fabricbench-modules.XXXXXX") || fb_die "mktemp failed"
  for m in $mods; do
    module load "$m" >"$log" 2>&1; rc=$?
    # Environment Modules 3 returns 0 even when the load failed: its "ERROR:" text says so.
    if [ "$rc" != 0 ] || grep -qiE "error|unable to locate" "$log"; then
      out=$(grep -v '^[[:space:]]*$' "$log" | head -n 1 | tr -s ' ' | cut -c1-160); rm -f "$log"
      fb_die "FB_MODULES: module '$m' cannot be loaded (module load exit $rc${out:+: $out})"
    fi
  done
  rm -f "$log"
  echo "fabricbench job: modules loaded: $mods"
}

# Prints what the job was given in GPUs ("" when none): Slurm sets these in jobs that requested GPUs.
fb_gpus_requested() {
  local v
  for v in "${SLURM_GPUS_PER_NODE:-}" "${SLURM_GPUS:-}" "${SLURM_JOB_GPUS:-}" "${SLURM_GPUS_ON_NODE:-}"; do
    case "$v" in ""|0|none|"(null)") ;; *) echo "$v"; return 0 ;; esac
  done
  return 1
}

fb_job() {
  local coll=${1:?collective}
  set -uo pipefail
  [ -n "${SLURM_JOB_ID:-}" ] || fb_die "not inside a Slurm job (submit with: sbatch slurm/<script>.sbatch)"
  FB_HOME=$(fb_find_home) || fb_die "cannot find the fabricbench repository: submit from its root or export FB_HOME"
  export FB_HOME
  # shellcheck source=fabricbench.env
  source "$FB_HOME/slurm/fabricbench.env"
  [ -x "$FB_BIN" ] || fb_die "binary not found or not executable: FB_BIN=$FB_BIN (install it: cmake --install build --prefix <prefix>, or put fabricbench in PATH, or build it: cmake --preset default && cmake --build build --target fabricbench; or set FB_BIN in slurm/fabricbench.env)"

  local nnodes=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}
  local rpn=${FB_RANKS_PER_NODE:-}
  [ -n "$rpn" ] || rpn=${SLURM_NTASKS_PER_NODE:-}
  [ -n "$rpn" ] || rpn=${SLURM_TASKS_PER_NODE%%[(,]*}      # "2(x2)" -> 2
  [[ "$rpn" =~ ^[1-9][0-9]*$ ]] || fb_die "bad ranks per node '$rpn' (FB_RANKS_PER_NODE or --ntasks-per-node)"
  local np=$((nnodes * rpn))
  # The run id: fabricbench's default (<job>.<step>, with -2, -3... when a rerun or a requeued job
  # finds it taken), unless FB_RUN_ID names one (then FB_RESUME=1 adds the missing rows to it).

  local -a launch args mpiflag
  case "${FB_MPI_LAUNCH:-pmix}" in
    pmix|pmi2) mpiflag=(--mpi="$FB_MPI_LAUNCH") ;;
    none) mpiflag=() ;;
    *) fb_die "bad FB_MPI_LAUNCH '$FB_MPI_LAUNCH' (expected pmix, pmi2 or none; srun --mpi=list shows what this Slurm has)" ;;
  esac
  [[ " $FB_SRUN_ARGS " != *" --mpi"* ]] || mpiflag=()   # an --mpi= in FB_SRUN_ARGS wins
  # srun --mpi=pmix: Slurm ran the data-less fence that ends MPI_Init node-local, so a rank could message
  # a peer still in its modex and crash it (SIGSEGV in MPI_Init); the ring fence is a real barrier
  # (doc/acceptance.md). A site's own SLURM_PMIX_FENCE wins.
  if [ "${FB_MPI_LAUNCH:-pmix}" = pmix ]; then export SLURM_PMIX_FENCE=${SLURM_PMIX_FENCE:-ring}; fi
  case "$FB_LAUNCHER" in
    srun)   launch=(srun "${mpiflag[@]}" $FB_SRUN_ARGS --nodes="$nnodes" --ntasks-per-node="$rpn" --ntasks="$np") ;;
    mpirun) launch=(mpirun -np "$np" --map-by "ppr:$rpn:node" $FB_MPIRUN_ARGS) ;;
    *)      fb_die "bad FB_LAUNCHER '$FB_LAUNCHER' (expected srun or mpirun)" ;;
  esac
  # fb_job accept: fabricbench --accept (doctor, every node pair, then the collectives FB_ACCEPT_COLLECTIVES)
  local -a mode=(--collective "$coll")
  if [ "$coll" = accept ]; then
    mode=(--accept --collective "${FB_ACCEPT_COLLECTIVES:-allreduce,allgather,reducescatter}")
    [ -z "${FB_EXPECT:-}" ] || mode+=(--expect "$FB_EXPECT")
  fi
  args=("${mode[@]}" --transport "$FB_TRANSPORTS" $FB_SIZES -n "$FB_ITERS" -w "$FB_WARMUP"
        -c "$FB_CHECK" --dtype "$FB_DTYPE" --results-dir "$FB_RESULTS_DIR")
  [ -z "${FB_RUN_ID:-}" ] || args+=(--run-id "$FB_RUN_ID")
  [ "${FB_RESUME:-0}" = 0 ] || args+=(--resume)
  [ -z "$FB_TCP_IF" ] || args+=(--tcp-if "$FB_TCP_IF")
  local gpus=""
  case "${FB_REQUIRE_GPU:-auto}" in
    auto) if gpus=$(fb_gpus_requested); then args+=(--require gpu); fi ;;
    1) args+=(--require gpu); gpus=required ;;
    0) ;;
    *) fb_die "bad FB_REQUIRE_GPU '$FB_REQUIRE_GPU' (expected auto, 1 or 0)" ;;
  esac
  args+=($FB_EXTRA_ARGS)

  echo "fabricbench job $SLURM_JOB_ID: $coll on $nnodes node(s) [$SLURM_JOB_NODELIST] x $rpn rank(s)," \
       "launcher $FB_LAUNCHER, batch host $(hostname), $(date -u +%FT%TZ)${gpus:+, GPUs: $gpus (a GPU path is required)}"
  echo "+ ${launch[*]} $FB_BIN ${args[*]}"
  [ "${SLURM_RESTART_COUNT:-0}" = 0 ] || echo "fabricbench job $SLURM_JOB_ID: requeued run $SLURM_RESTART_COUNT (earlier results are kept)"
  local t0=$SECONDS rc=0 log
  log=$(mktemp "${TMPDIR:-/tmp}/fabricbench-job-$SLURM_JOB_ID.XXXXXX") || fb_die "mktemp failed"
  "${launch[@]}" "$FB_BIN" "${args[@]}" | tee "$log"
  rc=${PIPESTATUS[0]}
  # The folder fabricbench chose, from its header line "# results: <dir>/ (...)".
  local out
  out=$(sed -n 's|^# results: \(.*\)/ (.*|\1|p' "$log" | head -n 1)
  rm -f "$log"
  [ -n "$out" ] || out=$FB_RESULTS_DIR/${FB_RUN_ID:-"<none>"}
  if [ "$rc" = 0 ] && [ "$coll" != accept ] && [ ! -s "$out/table.csv" ]; then
    echo "fabricbench job $SLURM_JOB_ID: FAILED: fabricbench exited 0 but wrote no $out/table.csv" >&2
    rc=1
  fi
  if [ "$coll" = accept ]; then
    case "$rc" in
      0) echo "fabricbench job $SLURM_JOB_ID: ACCEPTED in $((SECONDS - t0)) s; report: $(dirname "$out")/report.md" ;;
      1) echo "fabricbench job $SLURM_JOB_ID: NOT ACCEPTED (exit 1: a threshold or a suspect; see the suspect lines above) after $((SECONDS - t0)) s; report: $(dirname "$out")/report.md" >&2 ;;
      4) echo "fabricbench job $SLURM_JOB_ID: PARTIAL (exit 4: a required path absent) after $((SECONDS - t0)) s; report: $(dirname "$out")/report.md" >&2 ;;
      *) echo "fabricbench job $SLURM_JOB_ID: FAILED (exit $rc) after $((SECONDS - t0)) s" >&2 ;;
    esac
    exit "$rc"
  fi
  if [ "$rc" = 0 ]; then
    echo "fabricbench job $SLURM_JOB_ID: PASSED in $((SECONDS - t0)) s; results in $out/"
  elif [ "$rc" = 4 ]; then
    echo "fabricbench job $SLURM_JOB_ID: PARTIAL (exit 4: rows right, a requested path not measured; see the last lines above) after $((SECONDS - t0)) s; results in $out/" >&2
  else
    echo "fabricbench job $SLURM_JOB_ID: FAILED (exit $rc) after $((SECONDS - t0)) s; rows written so far: $out/table.csv" >&2
  fi
  exit "$rc"
}

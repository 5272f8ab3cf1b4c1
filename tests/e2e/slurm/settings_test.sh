#!/usr/bin/env bash
# settings_test.sh - slurm/fabricbench.env's site settings without a cluster: fb_job runs with a fake
# Slurm job environment, a fake srun (records its arguments, writes a one-row table) and a fake
# `module` command. Checks: FB_MPI_LAUNCH pmix/pmi2/none reach srun as --mpi=... (or none), an
# --mpi in FB_SRUN_ARGS wins, a bad FB_MPI_LAUNCH, a module that does not exist and FB_MODULES
# without a module command each end the job before launch with exactly one line and exit 2; srun --mpi=pmix
# gets SLURM_PMIX_FENCE=ring unless the site set it (none with pmi2);
# FB_MODULES names are loaded in order. Fast (label unit); no root, no lab.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }

mkdir -p "$W/bin" "$W/modbin"
cat > "$W/bin/srun" <<'SH'
#!/usr/bin/env bash
printf '%s\n' "$@" > "$FB_T_SRUN_ARGS"
echo "${SLURM_PMIX_FENCE-unset}" > "$FB_T_SRUN_ARGS.fence"
mkdir -p "$FB_RESULTS_DIR/fake"; echo "collective,bytes" > "$FB_RESULTS_DIR/fake/table.csv"
echo "# results: $FB_RESULTS_DIR/fake/ (fake srun)"
SH
# module: loads names listed in FB_T_MODULES_KNOWN (appends them to a log), else fails like Lmod.
cat > "$W/modbin/module" <<'SH'
#!/usr/bin/env bash
[ "$1" = load ] || exit 1
for k in $FB_T_MODULES_KNOWN; do [ "$k" = "$2" ] && { echo "$2" >> "$FB_T_MODULE_LOG"; exit 0; }; done
echo "Lmod has detected the following error:  The following module(s) are unknown: \"$2\"" >&2
exit 1
SH
chmod +x "$W/bin/srun" "$W/modbin/module"

# job ENV...: runs fb_job allreduce in a clean shell; sets $rc, $out (stdout), $err (stderr).
job() {
  rm -f "$W/srun.args" "$W/srun.args.fence" "$W/module.log"
  env -i HOME="$W" PATH="$W/bin:/usr/bin:/bin" TMPDIR="$W" MODULESHOME=/nonexistent \
      SLURM_JOB_ID=42 SLURM_JOB_NUM_NODES=1 SLURM_NTASKS_PER_NODE=2 SLURM_JOB_NODELIST=n1 \
      FB_HOME="$SRC" FB_BIN=/bin/true FB_RESULTS_DIR="$W/results" FB_T_SRUN_ARGS="$W/srun.args" \
      FB_T_MODULE_LOG="$W/module.log" FB_T_MODULES_KNOWN="cuda/12.4 nccl openmpi" "$@" \
      bash -c 'source "$FB_HOME/slurm/fabricbench_job.sh"; fb_job "${FB_T_COLL:-allreduce}"' > "$W/out" 2> "$W/err"
  rc=$?; out=$(cat "$W/out"); err=$(cat "$W/err")
}
# expect_bad NAME NEEDLE ENV...: exit 2, one stderr line containing NEEDLE, nothing launched.
expect_bad() {
  local name=$1 needle=$2; shift 2
  job "$@"
  [ "$rc" = 2 ] || fail "$name: exit $rc, expected 2 (stderr: $err)"
  [ "$(grep -c . <<<"$err")" = 1 ] || fail "$name: expected one line on stderr, got: $err"
  grep -qF -- "$needle" <<<"$err" || fail "$name: stderr does not name '$needle': $err"
  [ ! -e "$W/srun.args" ] || fail "$name: srun was launched"
  echo "ok   $name: $err"
}
mpi_flags() { grep -- '^--mpi' "$W/srun.args" 2>/dev/null | tr '\n' ' '; }

job
[ "$rc" = 0 ] || fail "default: exit $rc ($err)"
[ "$(mpi_flags)" = "--mpi=pmix " ] || fail "default: srun got '$(mpi_flags)', expected --mpi=pmix"
echo "ok   default: srun $(tr '\n' ' ' < "$W/srun.args")"
job FB_MPI_LAUNCH=pmi2
[ "$rc" = 0 ] && [ "$(mpi_flags)" = "--mpi=pmi2 " ] || fail "pmi2: exit $rc, srun got '$(mpi_flags)'"
echo "ok   FB_MPI_LAUNCH=pmi2: $(mpi_flags)"
job FB_MPI_LAUNCH=none
[ "$rc" = 0 ] && [ -z "$(mpi_flags)" ] || fail "none: exit $rc, srun got '$(mpi_flags)'"
echo "ok   FB_MPI_LAUNCH=none: no --mpi"
job FB_MPI_LAUNCH=pmi2 FB_SRUN_ARGS="--mpi=pmix --kill-on-bad-exit=1"
[ "$rc" = 0 ] && [ "$(mpi_flags)" = "--mpi=pmix " ] || fail "FB_SRUN_ARGS --mpi: srun got '$(mpi_flags)'"
echo "ok   --mpi in FB_SRUN_ARGS wins: $(mpi_flags)"
# srun --mpi=pmix gets the ring fence (a real barrier at the end of MPI_Init); a site's value wins; pmi2 none.
fence() { cat "$W/srun.args.fence" 2>/dev/null; }
job
[ "$(fence)" = ring ] || fail "pmix: SLURM_PMIX_FENCE='$(fence)', expected ring"
job SLURM_PMIX_FENCE=tree
[ "$(fence)" = tree ] || fail "site SLURM_PMIX_FENCE=tree: srun saw '$(fence)'"
job FB_MPI_LAUNCH=pmi2
[ "$(fence)" = unset ] || fail "pmi2: SLURM_PMIX_FENCE='$(fence)', expected unset"
echo "ok   SLURM_PMIX_FENCE: ring with pmix, the site's own value kept, unset with pmi2"
expect_bad "FB_MPI_LAUNCH=pmi3" "bad FB_MPI_LAUNCH 'pmi3'" FB_MPI_LAUNCH=pmi3
expect_bad "FB_MPI_LAUNCH=pmi3 with mpirun" "bad FB_MPI_LAUNCH 'pmi3'" FB_MPI_LAUNCH=pmi3 FB_LAUNCHER=mpirun

job PATH="$W/bin:$W/modbin:/usr/bin:/bin" FB_MODULES="cuda/12.4 nccl openmpi"
[ "$rc" = 0 ] || fail "FB_MODULES: exit $rc ($err)"
[ "$(tr '\n' ' ' < "$W/module.log" 2>/dev/null)" = "cuda/12.4 nccl openmpi " ] || fail "FB_MODULES: loaded '$(cat "$W/module.log" 2>/dev/null)'"
grep -q "modules loaded: cuda/12.4 nccl openmpi" <<<"$out" || fail "FB_MODULES: no 'modules loaded' line: $out"
echo "ok   FB_MODULES loaded in order: $(tr '\n' ' ' < "$W/module.log")"
expect_bad "FB_MODULES missing module" "module 'nosuch/1.0' cannot be loaded" \
  PATH="$W/bin:$W/modbin:/usr/bin:/bin" FB_MODULES="cuda/12.4 nosuch/1.0 openmpi"
expect_bad "FB_MODULES without module command" "no 'module' command" FB_MODULES="cuda"

# slurm/acceptance.sbatch's fb_job accept: fabricbench --accept with the collectives and FB_EXPECT
job FB_T_COLL=accept FB_EXPECT=/site/promise.json FB_ACCEPT_COLLECTIVES=allreduce
args=$(tr '\n' ' ' < "$W/srun.args" 2>/dev/null)
[ "$rc" = 0 ] || fail "accept: exit $rc ($err)"
grep -q -- "--accept --collective allreduce --expect /site/promise.json" <<<"$args" || fail "accept: srun got '$args'"
grep -q "ACCEPTED" <<<"$out" || fail "accept: no ACCEPTED line: $out"
echo "ok   fb_job accept: srun $args"

[ "$bad" = 0 ] && echo "RESULT: slurm settings passed" || echo "RESULT: slurm settings FAILED"
exit "$bad"

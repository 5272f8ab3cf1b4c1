#!/usr/bin/env bash
# host_vs_mpi_lab.sh - host_vs_mpi.sh's comparison on the namespace/Slurm lab (tests/e2e/slurm/lab_up.sh):
# the host baseline (tcp) against Open MPI (tcp btl over the same eth0), interleaved point by point
# in one job (build/benchmarks/host_vs_mpi, launched with srun --mpi=pmix), every node's "NIC" shaped
# by tc tbf to each RATE. Per rate, shape (NxG: N nodes x G ranks per node) and run, one job; a
# point's ratio in the tables is the median of its RUNS runs' ratios (each run's ratio: the median
# over ROUNDS rounds of each round's best batch, as host_vs_mpi.sh). Writes OUT/table.md: per rate,
# tcp time / Open MPI time per collective and size with the algorithm tcp chose, and per shape the
# geometric mean, the worst ratio and the points above 1.05. Each job also writes its fingerprint
# (every lab node, as fabricbench's run.json has it) beside its output: RATE/SHAPE.runK.fingerprint.json.
#
#   bash benchmarks/host_vs_mpi_lab.sh                                  # 2 rates x 6 shapes x 3 runs (hours)
#   RATES=1gbit SHAPES="2x2 3x2" RUNS=3 bash benchmarks/host_vs_mpi_lab.sh
# Environment: RATES ("1gbit 500mbit"), SHAPES ("2x1 3x1 4x1 2x2 3x2 4x2"), MIN (4K), MAX (64M),
# FACTOR (2), RUNS (3), ROUNDS (3), PAIRS (3), BATCH_MS (20), COLLS (allreduce,allgather,
# reducescatter,p2pring), BUILD (build), OUT (new folder under /tmp), TBF_BURST (default about 2 ms of
# the rate, at least 128kb: scripts/model-lab-runs.sh says why), FB_PROGRESS (block: the lab's ranks
# share the machine's cores), OMPI_MCA_btl_tcp_links (2, as slurm/fabricbench.env), TABLE_ONLY (1:
# tables from OUT's files only).
# Needs root (exit 77 without, or where the lab cannot run); 2 = bad input; 1 = a job failed.
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
LAB=$SRC/tests/e2e/slurm
RATES=${RATES:-"1gbit 500mbit"}
SHAPES=${SHAPES:-"2x1 3x1 4x1 2x2 3x2 4x2"}
MIN=${MIN:-4K} MAX=${MAX:-64M} FACTOR=${FACTOR:-2}
# Batches of 20 ms, 10x the tbf bucket (about 2 ms of the rate), so the tokens one implementation's
# batch leaves unused do not decide the next one's time.
RUNS=${RUNS:-3} ROUNDS=${ROUNDS:-3} PAIRS=${PAIRS:-3} BATCH_MS=${BATCH_MS:-20}
COLLS=${COLLS:-allreduce,allgather,reducescatter,p2pring}
BUILD=${BUILD:-build}
BIN=$SRC/$BUILD/benchmarks/host_vs_mpi
die2() { echo "host_vs_mpi_lab.sh: error: $*" >&2; exit 2; }
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die2 "RUNS='$RUNS' is not a whole number of runs (1 or more)"
maxn=2
for s in $SHAPES; do
  [[ $s =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] || die2 "bad shape '$s' (NxG, e.g. 3x2)"
  [ "${BASH_REMATCH[1]}" -gt "$maxn" ] && maxn=${BASH_REMATCH[1]}
done
for r in $RATES; do [[ $r =~ ^[0-9.]+[kmg]?bit$ ]] || die2 "bad rate '$r' (e.g. 1gbit, 500mbit)"; done
OUT=${OUT:-$(mktemp -d /tmp/host_vs_mpi_lab.XXXXXX)}
mkdir -p "$OUT"
if [[ ${TABLE_ONLY:-0} != 1 ]]; then
  [[ -x $BIN ]] || die2 "$BIN not built (cmake --build $BUILD --target host_vs_mpi)"
  [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the lab uses network namespaces and tc)"; exit 77; }
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0
  # As slurm/fabricbench.env and the lab's other jobs: one connection per peer gives Open MPI half the
  # shaped link both ways (tests/e2e/slurm/accept_lab.sh), so two.
  export OMPI_MCA_btl_tcp_links=${OMPI_MCA_btl_tcp_links:-2}
  export FB_PROGRESS=${FB_PROGRESS:-block} FB_TCP_CC=system
  export FBLAB_NODES=$maxn
  cleanup() { "$LAB/lab_down.sh" >/dev/null 2>&1 || echo "host_vs_mpi_lab.sh: lab_down.sh failed" >&2; }
  trap cleanup EXIT
  trap 'exit 1' TERM INT HUP
  echo "# host_vs_mpi_lab.sh: $(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg); output in $OUT"
  for rate in $RATES; do
    burst=${TBF_BURST:-$(python3 -c '
import math, re, sys
m = re.fullmatch(r"([0-9.]+)([kmg]?)bit", sys.argv[1].lower())
rate = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8
print(max(128, 2 ** round(math.log2(rate * 0.002 / 1024))), end="kb")' "$rate")}
    rc=0; TBF_BURST=$burst FBLAB_RATE=$rate "$LAB/lab_up.sh" > "$OUT/env.sh" || rc=$?
    [ "$rc" = 77 ] && { echo "SKIP: the lab cannot run here (see above)"; exit 77; }
    [ "$rc" = 0 ] || { echo "host_vs_mpi_lab.sh: lab_up.sh exited $rc" >&2; exit 1; }
    source "$OUT/env.sh"
    TBF_BURST=$burst "$LAB/lab_shape.sh" "$rate" 2>/dev/null
    "$LAB/lab_shape.sh" show | sed 's/^/# /'
    mkdir -p "$OUT/$rate"
    for run in $(seq 1 "$RUNS"); do
      for s in $SHAPES; do
        n=${s%x*} g=${s#*x}
        f=$OUT/$rate/$s.run$run.txt
        echo "# $rate $s run $run of $RUNS ($(date -u +%T), load $(cut -d' ' -f1 /proc/loadavg))"
        # A second try when a job fails: under load Open MPI's tcp btl sometimes fails to connect
        # ("connect() ... Operation now in progress") and the job dies; said in the output.
        for try in 1 2; do
          timeout 3000 srun --mpi=pmix -N "$n" --ntasks-per-node="$g" --ntasks=$((n * g)) "$BIN" --transport tcp \
            --tcp-if eth0 --collective "$COLLS" -b "$MIN" -e "$MAX" -f "$FACTOR" --rounds "$ROUNDS" --pairs "$PAIRS" \
            --batch-ms "$BATCH_MS" --fingerprint "${f%.txt}.fingerprint.json" > "$f" 2> "$f.err" && break
          echo "# $rate $s run $run: try $try failed ($(grep -m1 -iE 'error|fail' "$f.err" | cut -c1-120))"
          [ "$try" = 2 ] && { echo "host_vs_mpi_lab.sh: $rate $s run $run failed twice (see $f, $f.err)" >&2; exit 1; }
        done
      done
    done
  done
  echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
python3 - "$OUT" "$RATES" "$SHAPES" <<'PY' | tee "$OUT/table.md"
import glob, math, os, statistics, sys
out, rates, shapes = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def fmt_size(b):
    for u, s in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= s:
            return f"{b / s:g} {u}"
    return f"{b} B"
for rate in rates:
    rows, order, runs = {}, [], {}
    for s in shapes:
        files = sorted(glob.glob(f"{out}/{rate}/{s}.run*.txt"))
        runs[s] = len(files)
        for line in (l for fn in files for l in open(fn)):
            if line.startswith("#") or not line.strip():
                continue
            f = line.split()
            # np coll bytes algo ops tcp_us*R mpi_us*R tcp_us mpi_us ratio tcp_med mpi_med ratio_med wrong_tcp wrong_mpi
            coll, size = f[1], int(f[2])
            if int(f[-2]) or int(f[-1]):
                sys.exit(f"{rate} {s} {coll} {size}: wrong elements: tcp {f[-2]}, mpi {f[-1]}")
            # the algorithm may have spaces ("hierarchical (ring)"): it ends before ops, the first number
            i = next(j for j in range(4, len(f)) if f[j].isdigit())
            algo = " ".join(f[3:i])
            key = (coll, 1 << (size - 1).bit_length() if size > 1 else size)
            if key not in rows:
                rows[key] = {}
                order.append(key)
            v = rows[key].setdefault(s, ([], algo))
            v[0].append(float(f[-6]))
    print(f"\n### {rate}: tcp time / Open MPI time (median of runs: " +
          ", ".join(f"{s}: {runs[s]}" for s in shapes) + ")\n")
    print("| collective | size | " + " | ".join(f"{s} ratio (tcp algorithm)" for s in shapes) + " |")
    print("|---|---|" + "---|" * len(shapes))
    stats = {}
    colls = list(dict.fromkeys(c for c, _ in order))
    for key in sorted(order, key=lambda k: (colls.index(k[0]), k[1])):
        cells = []
        for s in shapes:
            v = rows[key].get(s)
            if not v:
                cells.append("-")
                continue
            r = statistics.median(v[0])
            stats.setdefault(s, []).append(r)
            cells.append(f"{r:.2f}{' **>1.05**' if r > 1.05 else ''} ({v[1]})")
        print(f"| {key[0]} | {fmt_size(key[1])} | " + " | ".join(cells) + " |")
    print("\n| shape | points | geometric mean | worst | points > 1.05 |")
    print("|---|---|---|---|---|")
    for s in shapes:
        rs = stats.get(s)
        if not rs:
            print(f"| {s} | 0 | - | - | - |")
            continue
        g = math.exp(sum(math.log(r) for r in rs) / len(rs))
        print(f"| {s} | {len(rs)} | {g:.3f} | {max(rs):.2f} | {sum(r > 1.05 for r in rs)} |")
PY

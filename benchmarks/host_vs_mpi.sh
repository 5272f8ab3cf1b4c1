#!/usr/bin/env bash
# The host baseline against Open MPI over the same TCP loopback, side by side (a benchmark, not a
# test: its figures depend on the machine and its load). For each rank count, one mpirun of
# build/benchmarks/host_vs_mpi with `--mca btl tcp,self`: per collective and size, both
# implementations are checked element by element, then measured in ROUNDS rounds (3) of PAIRS
# alternating short batches (tcp, mpi, mpi, tcp, ...); a round's time of each is its best batch
# (and, in the second table, its median batch); the point's time is the median of the rounds.
# Prints the tables of tcp time / mpi time per size, collective and np (markdown), with the
# geometric mean and the worst ratio per column, and the load average before and after.
#
#   bash benchmarks/host_vs_mpi.sh                 # np 2 3 4, 8 B .. 64 MiB, factor 2, 3 runs (~30 min)
#   RUNS=1 bash benchmarks/host_vs_mpi.sh          # one run (~10 min)
#   NPS="2 4" MAX=1M FACTOR=4 bash benchmarks/host_vs_mpi.sh
# Environment: BUILD (build), NPS, MIN (8), MAX (64M), FACTOR (2), RUNS (3), ROUNDS (3), PAIRS (9),
# BATCH_MS (3), IF (lo: interface of both tcp and Open MPI's btl), TRANSPORT (tcp), CC (cubic: the
# congestion control of both stacks, see below; system: the host's), OUT (a new
# folder under /tmp: raw output per np with each run's fingerprint, the tables in table.md),
# TABLE_ONLY (1: tables from OUT).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
NPS=${NPS:-"2 3 4"}
MIN=${MIN:-8} MAX=${MAX:-64M} FACTOR=${FACTOR:-2}
ROUNDS=${ROUNDS:-3} PAIRS=${PAIRS:-9} BATCH_MS=${BATCH_MS:-3} RUNS=${RUNS:-3}
IF=${IF:-lo} TRANSPORT=${TRANSPORT:-tcp}
BIN=$BUILD/benchmarks/host_vs_mpi
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "host_vs_mpi.sh: error: RUNS='$RUNS' is not a whole number of runs (1 or more)" >&2; exit 2; }
[[ -x $BIN ]] || { echo "host_vs_mpi.sh: error: $BIN not built (cmake --build $BUILD --target host_vs_mpi)" >&2; exit 2; }
CC=${CC:-cubic}  # congestion control of both stacks, see below
if [[ $CC != system ]] && ! grep -qwF -- "$CC" /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null; then
  echo "host_vs_mpi.sh: error: CC='$CC' is not a congestion control this kernel offers ($(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null); or 'system')" >&2
  exit 2
fi
OUT=${OUT:-$(mktemp -d /tmp/host_vs_mpi.XXXXXX)}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "# host_vs_mpi.sh: $(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg); output in $OUT"
# Congestion control: both stacks run under the same one, CC (default cubic, Linux's own default),
# since on loopback it decides much (np 2, P2P ring 64 MiB: Open MPI 32.6 ms under this VM's bbr,
# 15.0 ms under cubic). Open MPI's btl has no setting for it, so the host's default is set to CC for
# the run (root only) and put back on exit; tcp then follows the host too (FB_TCP_CC=system).
# CC=system keeps the host's default for both. Where it cannot be set, both run under the host's
# default, said here.
CC_FILE=/proc/sys/net/ipv4/tcp_congestion_control
HOST_CC=$(cat "$CC_FILE" 2>/dev/null || echo unknown)
if [[ $CC != system && $CC != "$HOST_CC" && ${TABLE_ONLY:-0} != 1 ]]; then
  if echo "$CC" 2>/dev/null > "$CC_FILE"; then
    trap 'echo "$HOST_CC" > "$CC_FILE"' EXIT
    trap 'exit 1' TERM INT HUP
  else
    echo "# could not set the host's congestion control to $CC (not root, or not allowed here): both stacks use $HOST_CC"
  fi
fi
export FB_TCP_CC=system
echo "# congestion control: $(cat "$CC_FILE" 2>/dev/null || echo unknown) for both tcp (FB_TCP_CC=system) and Open MPI (the host's default; it was $HOST_CC before this run)"
# TABLE_ONLY=1: only print the tables from the np*.txt already in OUT (e.g. runs made separately).
# RUNS (3) whole runs, one after the other (np 2, 3, 4, then again): each point's ratio in the
# tables is the median of its RUNS ratios (np<N>.run<K>.txt).
for run in $(seq 1 "$RUNS"); do
  for np in $NPS; do
    [[ ${TABLE_ONLY:-0} == 1 ]] && break 2
    f="$OUT/np$np.run$run.txt"
    echo "# run $run of $RUNS, np $np"
    mpirun --oversubscribe -np "$np" --mca btl tcp,self --mca btl_tcp_if_include "$IF" \
      "$BIN" --transport "$TRANSPORT" --tcp-if "$IF" -b "$MIN" -e "$MAX" -f "$FACTOR" \
      --rounds "$ROUNDS" --pairs "$PAIRS" --batch-ms "$BATCH_MS" --fingerprint "${f%.txt}.fingerprint.json" |
      tee "$f" | grep '^#' || {
      echo "host_vs_mpi.sh: np $np failed in run $run (see $f)" >&2
      exit 1
    }
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT" $NPS <<'EOF' | tee "$OUT/table.md"
import glob, math, statistics, sys
out, nps = sys.argv[1], [int(x) for x in sys.argv[2:]]
rows = {}  # (coll, requested size) -> np -> ([ratio per run], [ratio_medbatch per run], algo)
order, shown = [], {}
runs = {}
for np_ in nps:
    files = sorted(glob.glob(f"{out}/np{np_}.run*.txt")) or [f"{out}/np{np_}.txt"]  # (older folders: one run)
    runs[np_] = len(files)
    for line in (l for fn in files for l in open(fn)):
        if line.startswith("#") or not line.strip():
            continue
        # np coll bytes algo ops tcp_us*R mpi_us*R tcp_us mpi_us ratio tcp_med mpi_med ratio_med wrong_tcp wrong_mpi
        f = line.split()
        coll, size, algo = f[1], int(f[2]), f[3]
        if int(f[-2]) or int(f[-1]):
            sys.exit(f"np {np_} {coll} {size}: wrong elements: tcp {f[-2]}, mpi {f[-1]}")
        # allgather/reducescatter round the size down to a multiple of 4 np (a sweep of powers of
        # two: the requested size is the next power of two); a size with no element is absent.
        key = (coll, 1 << (size - 1).bit_length() if size > 1 else size)
        if key not in rows:
            rows[key] = {}
            order.append(key)
            shown[key] = key[1]
        v = rows[key].setdefault(np_, ([], [], algo))
        v[0].append(float(f[-6]))
        v[1].append(float(f[-3]))
def fmt_size(b):
    for u, s in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= s:
            return f"{b / s:g} {u}"
    return f"{b} B"
def table(idx, title):
    print(f"\n### {title}\n")
    print("| collective | size (requested) | " + " | ".join(f"np {n} tcp/mpi (algorithm)" for n in nps) + " |")
    print("|---|---|" + "---|" * len(nps))
    stats = {}
    for coll in dict.fromkeys(c for c, _ in order):
        for key in [k for k in order if k[0] == coll]:
            cells = []
            for n in nps:
                v = rows[key].get(n)
                if v is None:
                    cells.append("-")
                    continue
                r = statistics.median(v[0] if idx == 0 else v[1])
                stats.setdefault((coll, n), []).append(r)
                cells.append(f"{r:.2f}{' **>1.05**' if r > 1.05 else ''} ({v[2]})")
            print(f"| {coll} | {fmt_size(shown[key])} | " + " | ".join(cells) + " |")
    print("\n| collective | np | points | geometric mean | worst | points > 1.05 |")
    print("|---|---|---|---|---|---|")
    allr = []
    for (coll, n), rs in stats.items():
        allr += rs
        g = math.exp(sum(math.log(r) for r in rs) / len(rs))
        print(f"| {coll} | {n} | {len(rs)} | {g:.3f} | {max(rs):.2f} | {sum(r > 1.05 for r in rs)} |")
    g = math.exp(sum(math.log(r) for r in allr) / len(allr))
    print(f"| all | {','.join(map(str, nps))} | {len(allr)} | {g:.3f} | {max(allr):.2f} | {sum(r > 1.05 for r in allr)} |")
n_runs = ", ".join(f"np {n}: {runs[n]}" for n in nps)
table(0, f"tcp time / mpi time: median over runs ({n_runs}) of the median over rounds of each round's best batch")
table(1, f"tcp time / mpi time: median over runs ({n_runs}) of the median over rounds of each round's median batch (shows the load)")
EOF

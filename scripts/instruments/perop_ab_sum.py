# Summarise perop_ab.sh's diag folder: per variant and size, the median over rounds of each run's p50 (us)
# (nccl-tests -J per-iteration figures, fabricbench run.json per_op_us, p50 = sorted[n/2] in both), then
# paired differences by (size, round) and how many sizes' medians are within 2 % or 0.5 us of nccl-tests'.
import glob, importlib.util, json, os, statistics, sys

D = sys.argv[1]
spec = importlib.util.spec_from_file_location("v", os.path.join(os.path.dirname(__file__), "..", "vs_nccl_tests.py"))
v = importlib.util.module_from_spec(spec)
spec.loader.exec_module(v)
data = {}  # variant -> (bytes, placement) -> {round: p50}
pooled = {}  # variant -> bytes -> every out-of-place operation's time (us), all rounds
by_index = {}  # variant -> operation index -> every out-of-place time (us) at that index, all sizes and rounds
for p in sorted(glob.glob(f"{D}/nt*-r*.json")):
    var, rnd = os.path.basename(p)[: -len(".json")].rsplit("-r", 1)
    for (coll, b, pl), val in v.nccl_tests_json(p, "p50_us").items():
        data.setdefault(var, {}).setdefault((b, pl), {})[int(rnd)] = val
    for r in json.load(open(p)).get("results", []):  # the per-iteration times vs_nccl_tests.py does not return
        t = r.get("out_of_place_per_iter", {}).get("times_us")
        if t:
            pooled.setdefault(var, {}).setdefault(int(r["size"]), []).extend(t)
            for i, x in enumerate(t):
                by_index.setdefault(var, {}).setdefault(i, []).append(x)
for run in sorted(glob.glob(f"{D}/fb*-r*/run.json")):
    var, rnd = os.path.basename(os.path.dirname(run)).rsplit("-r", 1)
    doc = json.load(open(run))
    for row in doc.get("rows", doc.get("results", [])):
        ops = row.get("per_op_us")
        if ops and row.get("coll") == "allreduce":
            s = sorted(ops)
            data.setdefault(var, {}).setdefault((int(row["size_bytes"]), row["placement"]), {})[int(rnd)] = s[len(s) // 2]
            if row["placement"] == "out":
                pooled.setdefault(var, {}).setdefault(int(row["size_bytes"]), []).extend(ops)
                for i, x in enumerate(ops):
                    by_index.setdefault(var, {}).setdefault(i, []).append(x)
vars_ = sorted(data)
keys = sorted(data.get("nt", {}), key=lambda k: (k[1], k[0]))
print("size placement | " + " | ".join(vars_))
for k in keys:
    med = {x: statistics.median(data[x][k].values()) for x in vars_ if k in data[x]}
    print(f"{k[0]:>8} {k[1]:>12} | " + " | ".join(f"{med.get(x, float('nan')):5.2f}" for x in vars_))
print()
PAIRS = (("fb", "fb-noplug"), ("nt-plug", "nt"), ("fb", "nt"), ("fb", "nt-plug"), ("fb-R", "nt-R"), ("fb-R", "fb"),
         ("nt-R", "nt"), ("fb-rep1", "fb"), ("fb-rep1", "nt"),
         ("nt-mpi", "nt"), ("nt-malloc", "nt"), ("fb-noucx", "fb"), ("fb", "nt-mpi"), ("fb", "nt-malloc"),
         ("fb-c1", "nt-c1"), ("fb-c1", "fb"), ("nt-c1", "nt"), ("nt-env", "nt"), ("fb", "nt-env"),
         ("nt-c0", "nt"), ("fb", "nt-c0"), ("fb-reuse", "fb"), ("fb-reuse", "nt"),
         ("nt-rest", "nt"), ("fb", "nt-rest"), ("fb-pin", "fb"), ("nt-free", "nt"),
         ("fb-shm", "fb"), ("fb-shm", "nt"), ("fb-ct", "nt-ct"), ("fb-ct", "fb"), ("nt-ct", "nt"),
         ("fb-pad", "nt-pad"), ("fb-pad", "fb"), ("nt-pad", "nt"), ("fb-ntl", "nt"), ("fb-ntl", "fb"))
for a, b in PAIRS:
    if a not in data or b not in data:
        continue
    for pl in ("in", "out"):
        # paired by round: the same round's two processes
        ds = [data[a][k][r] - data[b][k][r] for k in data[a] if k[1] == pl and k in data[b]
              for r in data[a][k] if r in data[b][k]]
        if ds:
            print(f"{a} - {b} {'in place' if pl == 'in' else 'out of place'}: median {statistics.median(ds):+.2f} us, "
                  f"{a} higher in {sum(d > 0 for d in ds)} of {len(ds)} (size, round) pairs")
print()
for a, b in (("fb", "nt"), ("fb-noplug", "nt"), ("fb-R", "nt-R"), ("fb-rep1", "nt"), ("fb", "nt-mpi"), ("fb", "nt-malloc"),
             ("fb-noucx", "nt"), ("fb-c1", "nt-c1"), ("fb", "nt-env"), ("fb", "nt-c0"), ("fb-reuse", "nt"),
             ("nt-c0", "nt"), ("nt-env", "nt"), ("fb-reuse", "fb"), ("fb", "nt-rest"), ("nt-rest", "nt"), ("fb-ct", "nt-ct"), ("fb-pad", "nt-pad"), ("fb-ntl", "nt")):
    if a not in data or b not in data:
        continue
    ok, bad = 0, []
    for k in keys:
        if k not in data[a]:
            continue
        if k not in data[b]:
            continue
        x, y = statistics.median(data[a][k].values()), statistics.median(data[b][k].values())
        if abs(x - y) <= max(0.5, 0.02 * y):
            ok += 1
        else:
            bad.append(f"{k[0]} B {k[1]}: {x - y:+.2f}")
    print(f"{a} vs {b}: {ok} of {ok + len(bad)} sizes within 2 % or 0.5 us; outside: " + ", ".join(bad))
print()
# Process-to-process spread, out of place: each round's level (median p50 over sizes) and how far a size's p50
# moves from one round to the next (median |change| over sizes and consecutive rounds).
for x in vars_:
    outs = [k for k in data[x] if k[1] == "out"]
    rounds = sorted(set(r for k in outs for r in data[x][k]))
    levels = [statistics.median(data[x][k][r] for k in outs if r in data[x][k]) for r in rounds]
    moves = [abs(data[x][k][r2] - data[x][k][r1]) for k in outs for r1, r2 in zip(rounds, rounds[1:])
             if r1 in data[x][k] and r2 in data[x][k]]
    if levels and moves:
        print(f"{x} out of place: round levels {min(levels):.2f}-{max(levels):.2f} us "
              f"(median {statistics.median(levels):.2f}), median round-to-round move {statistics.median(moves):.2f} us")
print()
# Each process runs in one of two modes (out-of-place levels about 2 us apart, in both tools, picked at random per
# process): split the processes' levels by 2-means and compare the variants inside each mode.
lv = {}
for x in vars_:
    outs = [k for k in data[x] if k[1] == "out"]
    for r in sorted(set(r for k in outs for r in data[x][k])):
        lv[(x, r)] = statistics.median(data[x][k][r] for k in outs if r in data[x][k])
if len(lv) >= 2:
    lo, hi = min(lv.values()), max(lv.values())
    for _ in range(50):
        cut = (lo + hi) / 2
        f, s = [v for v in lv.values() if v <= cut], [v for v in lv.values() if v > cut]
        if not f or not s:
            break
        lo, hi = statistics.mean(f), statistics.mean(s)
    print(f"modes: fast about {lo:.2f} us, slow about {hi:.2f} us (split at {cut:.2f})")
    for x in vars_:
        f = [v for (y, r), v in lv.items() if y == x and v <= cut]
        s = [v for (y, r), v in lv.items() if y == x and v > cut]
        med = lambda a: f"{statistics.median(a):.2f}" if a else "-"
        print(f"{x}: fast {len(f)} processes, median level {med(f)} us; slow {len(s)}, median level {med(s)} us")

# pad.c's variants: each process's out-of-place level beside the bytes its heap was shifted by, and the spread of the
# levels against the same tool unshifted (a layout effect widens it).
for x, base in (("fb-pad", "fb"), ("nt-pad", "nt")):
    pads = {}
    for p in glob.glob(f"{D}/pad-{x}-r*.txt"):
        pads[int(p[: -len(".txt")].rsplit("-r", 1)[1])] = int(open(p).read().split()[0])
    pts = sorted((pads[r], v) for (y, r), v in lv.items() if y == x and r in pads)
    if not pts:
        continue
    sd = lambda a: f"{statistics.pstdev(a):.2f}" if len(a) > 1 else "-"
    print(f"{x}: level us by heap shift bytes: " + ", ".join(f"{b}:{v:.2f}" for b, v in pts))
    print(f"{x}: spread of process levels (pstdev) {sd([v for _, v in pts])} us against {base}'s "
          f"{sd([v for (y, r), v in lv.items() if y == base])}")

# Every operation of every round pooled, out of place: the lower quartile (a process's loop without its jitter) and the
# share of operations above 1.4 x it (session 21: nccl-tests' quartile rose from 64 KiB, and it had 2-4 x fb's spikes).
if pooled:
    print()
    print("out of place, all operations pooled: lower quartile us / % above 1.4 x it")
    vs = sorted(pooled)
    print("    size | " + " | ".join(f"{x:>14}" for x in vs))
    for b in sorted({b for x in vs for b in pooled[x]}):
        cells = []
        for x in vs:
            t = sorted(pooled[x].get(b, []))
            if not t:
                cells.append(f"{'-':>14}")
                continue
            q = t[len(t) // 4]
            cells.append(f"{q:6.2f} / {100 * sum(y > 1.4 * q for y in t) / len(t):4.1f}%")
        print(f"{b:>8} | " + " | ".join(cells))

# By operation index, out of place: the median over sizes and rounds at each index, each variant against fb (a
# warm-up shows as a difference at the first indices only).
if "fb" in by_index:
    print()
    for x in sorted(by_index):
        if x == "fb":
            continue
        n = sorted(set(by_index[x]) & set(by_index["fb"]))
        d = [statistics.median(by_index[x][i]) - statistics.median(by_index["fb"][i]) for i in n]
        if d:
            rest = sorted(d[1:]) or d
            print(f"{x} - fb by operation index, out of place: first {d[0]:+.2f} us, the others {rest[0]:+.2f} to "
                  f"{rest[-1]:+.2f}, median of all {len(d)} {statistics.median(d):+.2f}; {x} higher at {sum(v > 0 for v in d)}")

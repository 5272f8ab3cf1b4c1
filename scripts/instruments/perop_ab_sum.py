# Summarise perop_ab.sh's diag folder: per variant and size, the median over rounds of each run's p50 (us)
# (nccl-tests -J per-iteration figures, fabricbench run.json per_op_us, p50 = sorted[n/2] in both), then
# paired differences by (size, round) and how many sizes' medians are within 2 % or 0.5 us of nccl-tests'.
import glob, importlib.util, json, os, statistics, sys

D = sys.argv[1]
spec = importlib.util.spec_from_file_location("v", os.path.join(os.path.dirname(__file__), "..", "vs_nccl_tests.py"))
v = importlib.util.module_from_spec(spec)
spec.loader.exec_module(v)
data = {}  # variant -> (bytes, placement) -> {round: p50}
for p in sorted(glob.glob(f"{D}/nt*-r*.json")):
    var, rnd = os.path.basename(p)[: -len(".json")].rsplit("-r", 1)
    for (coll, b, pl), val in v.nccl_tests_json(p, "p50_us").items():
        data.setdefault(var, {}).setdefault((b, pl), {})[int(rnd)] = val
for run in sorted(glob.glob(f"{D}/fb*-r*/run.json")):
    var, rnd = os.path.basename(os.path.dirname(run)).rsplit("-r", 1)
    doc = json.load(open(run))
    for row in doc.get("rows", doc.get("results", [])):
        ops = row.get("per_op_us")
        if ops and row.get("coll") == "allreduce":
            s = sorted(ops)
            data.setdefault(var, {}).setdefault((int(row["size_bytes"]), row["placement"]), {})[int(rnd)] = s[len(s) // 2]
vars_ = sorted(data)
keys = sorted(data.get("nt", {}), key=lambda k: (k[1], k[0]))
print("size placement | " + " | ".join(vars_))
for k in keys:
    med = {x: statistics.median(data[x][k].values()) for x in vars_ if k in data[x]}
    print(f"{k[0]:>8} {k[1]:>12} | " + " | ".join(f"{med.get(x, float('nan')):5.2f}" for x in vars_))
print()
for a, b in (("fb", "fb-noplug"), ("nt-plug", "nt"), ("fb", "nt"), ("fb", "nt-plug")):
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
for a in ("fb", "fb-noplug"):
    if a not in data or "nt" not in data:
        continue
    ok, bad = 0, []
    for k in keys:
        if k not in data[a]:
            continue
        x, y = statistics.median(data[a][k].values()), statistics.median(data["nt"][k].values())
        if abs(x - y) <= max(0.5, 0.02 * y):
            ok += 1
        else:
            bad.append(f"{k[0]} B {k[1]}: {x - y:+.2f}")
    print(f"{a} vs nt: {ok} of {ok + len(bad)} sizes within 2 % or 0.5 us; outside: " + ", ".join(bad))

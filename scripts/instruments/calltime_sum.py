# Summarise calltime.c's rows from perop_ab.sh's fb-ct / nt-ct variants (ct-fb-rN.csv, ct-nt-rN.csv in DIR):
# per tool, size and placement, the median over rounds of each process's p50 (us) of the ncclAllReduce call, the
# cudaEventRecord before it, the application's own time between the two and between the allreduce before and that
# record, and their sum (one loop turn; a size's first turn also holds the code between sizes); then
# fb - nt paired by (size, placement, round) for each part. Usage: python3 calltime_sum.py DIR
import csv, glob, os, statistics, sys

D = sys.argv[1]
PARTS = ("allreduce_ns", "record_ns", "gap_ns", "before_ns", "turn")
data = {}  # tool -> (count, placement) -> part -> {round: p50 us}
for p in sorted(glob.glob(f"{D}/ct-*-r*.csv")):
    tool, rnd = os.path.basename(p)[3: -len(".csv")].rsplit("-r", 1)
    by = {}
    for r in csv.DictReader(open(p)):
        v = {k: int(r[k]) / 1e3 for k in PARTS[:4]}
        if v["before_ns"] < 0:  # the first operation a process timed
            continue
        v["turn"] = sum(v.values())
        by.setdefault((int(r["count"]), "in" if r["in_place"] == "1" else "out"), []).append(v)
    for k, vs in by.items():
        for part in PARTS:
            s = sorted(x[part] for x in vs)
            data.setdefault(tool, {}).setdefault(k, {}).setdefault(part, {})[int(rnd)] = s[len(s) // 2]
if not data:
    sys.exit(f"no ct-*-r*.csv in {D}")
tools = sorted(data)
print("count placement | " + " | ".join(f"{t}: " + " / ".join(p.replace("_ns", "") for p in PARTS) for t in tools))
keys = sorted(set().union(*(data[t] for t in tools)), key=lambda k: (k[1], k[0]))
for k in keys:
    cells = []
    for t in tools:
        d = data[t].get(k)
        cells.append(" / ".join(f"{statistics.median(d[p].values()):5.2f}" if d else "  -  " for p in PARTS))
    print(f"{k[0]:>8} {k[1]:>4} | " + " | ".join(cells))
if "fb" in data and "nt" in data:
    print()
    for pl in ("in", "out"):
        for part in PARTS:
            ds = [data["fb"][k][part][r] - data["nt"][k][part][r] for k in data["fb"] if k[1] == pl and k in data["nt"]
                  for r in data["fb"][k][part] if r in data["nt"][k][part]]
            if ds:
                print(f"fb - nt {pl:>3} {part:>12}: median {statistics.median(ds):+.3f} us, fb higher in "
                      f"{sum(d > 0 for d in ds)} of {len(ds)} (size, round) pairs")

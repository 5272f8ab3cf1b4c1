#!/usr/bin/env bash
# Instrument (issue 33): user-space instructions and cycles a one-rank AllReduce costs in each tool's process, by
# difference of two runs that differ only in -n (scripts/instruments/pcount.c; counters inherited by every thread).
# Run after scripts/instruments/perop_ab.sh in the same call (it uses that script's build-gpu/ and nccl-tests
# build). 128 KiB - 512 KiB, both placements, pinned to CPU 3; fabricbench as a singleton with --repeat 1 (one
# timed batch and the --per-op batch: 2 n operations a size and placement), nccl-tests -I 1 (n a placement).
# Writes $OUT/count.txt: one line per process, then per tool the cost of one operation.
set -u
source .gpu-node/activate.sh
export NCCL_NVLS_ENABLE=0
cc -O2 -o /tmp/pcount scripts/instruments/pcount.c || exit 1
C=$OUT/count.txt
: > $C
NT=.nccl-tests/build/all_reduce_perf
for rep in 1 2 3; do
  for n in 200 2000; do
    for tool in fb nt; do
      if [ $tool = fb ]; then
        cmd=(build-gpu/benchmarks/fabricbench --transport nccl --collective allreduce -b 128K -e 512K -f 2 -n $n -w 10
             --placement both --allow-single-rank --timer rank --per-op --repeat 1 --results-dir /tmp/pc-fb)
      else
        cmd=($NT -b 128K -e 512K -f 2 -n $n -w 10 -g 1 -I 1)
      fi
      line=$(taskset -c 3 /tmp/pcount -- "${cmd[@]}" 2>&1 >/dev/null | grep '^instructions')
      echo "$tool n=$n rep=$rep $line" | tee -a $C
    done
  done
done
python3 - "$C" <<'EOF'
import re, statistics, sys
runs = {}
for l in open(sys.argv[1]):
    m = re.match(r"(\w+) n=(\d+) rep=\d+ instructions (-?\d+) cycles (-?\d+) task_clock_ns (-?\d+)", l)
    if m:
        runs.setdefault((m[1], int(m[2])), []).append([int(m[3]), int(m[4]), int(m[5])])
# operations per process that -n scales: 3 sizes x 2 placements x (2 n for fabricbench, n for nccl-tests)
per_n = {"fb": 12, "nt": 6}
with open(sys.argv[1], "a") as out:
    for tool in ("fb", "nt"):
        lo, hi = runs.get((tool, 200), []), runs.get((tool, 2000), [])
        if not lo or not hi:
            continue
        ops = per_n[tool] * 1800
        cols = []
        for i, name in enumerate(("instructions", "cycles", "task_clock_us")):
            a, b = statistics.median(r[i] for r in lo), statistics.median(r[i] for r in hi)
            scale = 1e-3 if name == "task_clock_us" else 1
            cols.append(f"{name} {(b - a) / ops * scale:.1f}" if a >= 0 and b >= 0 else f"{name} n/a")
        s = f"{tool}: per operation (median of 3 at n=2000 minus n=200, / {ops} operations): " + ", ".join(cols)
        print(s)
        out.write(s + "\n")
EOF

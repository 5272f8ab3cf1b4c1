#!/usr/bin/env python3
"""Soak benchmark (not CI): mixed small collectives over tcp at np 4 for a fixed time, with every
rank's resident memory (VmRSS) and open file descriptors sampled; then the job is ended with
SIGTERM (as Slurm's time limit would) and the figures are summarised: growth after the warm-up, as
a linear fit over the samples, per rank.

  python3 benchmarks/soak.py [--minutes 30] [--np 4] [--fabricbench build/benchmarks/fabricbench]
                             [--out soak-out]

One fabricbench process per rank runs all the time: all six collectives, five dtypes, in- and
out-of-place, every size from 8 B to 64 KiB in steps of 256 B (8,960 rows, --force), -n 500 --repeat 3 -w 2
(Google Benchmark needs minutes to start tens of thousands of benchmarks, so the sweep stays below 10k),
--no-files (the result files keep every row in memory by design; the soak measures the transport,
collective and runner path). Samples every --every seconds go to <out>/samples.csv; the summary to
stdout and <out>/summary.txt.
"""
import argparse
import os
import signal
import subprocess
import sys
import time
import uuid
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e", "mpi"))
import ranks  # noqa: E402 (tests/e2e/mpi/ranks.py)


def rank_pids(mark):
    return ranks.rank_pids("FB_SOAK_MARK", mark)


def sample(pid):
    rss = None
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss, fds


def slope(points):
    """Least-squares slope of (t, y)."""
    n = len(points)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (y - my) for t, y in points) / den if den else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--every", type=float, default=30)
    ap.add_argument("--warmup-minutes", type=float, default=3)
    ap.add_argument("--fabricbench", default="build/benchmarks/fabricbench")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--out", default="soak-out")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    mark = uuid.uuid4().hex[:12]
    e = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", FB_SOAK_MARK=mark)
    cmd = [a.mpirun, "--oversubscribe", "-np", str(a.np), "-x", "FB_SOAK_MARK", a.fabricbench, "--transport", "tcp",
           "--tcp-if", "lo", "--collective", "all", "--dtype", "float32,float64,int32,float16,bfloat16",
           "--placement", "both", "-b", "8", "-e", "64K", "-i", "256", "-n", "500", "--repeat", "3", "-w", "2", "--timeout", "60",
           "--force", "--no-files"]
    log = open(os.path.join(a.out, "fabricbench.log"), "w")
    t0 = time.time()
    proc = subprocess.Popen(cmd, env=e, stdout=log, stderr=subprocess.STDOUT)
    samples = []  # (t, rank, rss_kB, fds)
    with open(os.path.join(a.out, "samples.csv"), "w") as out:
        out.write("t_s,rank,rss_kB,open_fds\n")
        while time.time() - t0 < a.minutes * 60 and proc.poll() is None:
            t = time.time() - t0
            for r, pid in sorted(rank_pids(mark).items()):
                try:
                    rss, fds = sample(pid)
                except OSError:
                    continue
                samples.append((t, r, rss, fds))
                out.write(f"{t:.0f},{r},{rss},{fds}\n")
            out.flush()
            time.sleep(a.every)
    alive = proc.poll() is None
    if alive:
        os.kill(proc.pid, signal.SIGTERM)  # mpirun forwards it to the ranks
    try:
        rc = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "killed after 60 s"
    log.close()
    text = open(os.path.join(a.out, "fabricbench.log"), errors="replace").read()
    rows = sum(1 for l in text.splitlines() if l.startswith("  ") and l.split()[0].isdigit())
    # The wrong column, counted from the end of the header (impl/path holds spaces).
    header = next((l.lstrip("#").split() for l in text.splitlines() if "size(B)" in l and "wrong" in l), [])
    k = len(header) - header.index("wrong") if "wrong" in header else 2
    wrong = sum(1 for l in text.splitlines()
                if l.startswith("  ") and l.split()[0].isdigit() and l.split()[-k] not in ("0", "N/A"))
    lines = [f"soak: {a.np} ranks over tcp (lo), {time.time() - t0:.0f} s, {rows} rows measured, rows with wrong "
             f"elements: {wrong}; job {'ran until the end and was sent SIGTERM' if alive else 'ENDED EARLY'}; "
             f"mpirun exit {rc}"]
    warm = a.warmup_minutes * 60
    for r in sorted({s[1] for s in samples}):
        mine = [s for s in samples if s[1] == r]
        after = [s for s in mine if s[0] >= warm] or mine
        rss_fit = slope([(s[0] / 3600.0, s[2] / 1024.0) for s in after])
        fds = [s[3] for s in after]
        lines.append(f"rank {r}: RSS {mine[0][2] / 1024:.1f} MiB at {mine[0][0]:.0f} s, {after[0][2] / 1024:.1f} MiB "
                     f"at {after[0][0]:.0f} s, {mine[-1][2] / 1024:.1f} MiB at {mine[-1][0]:.0f} s; fit after "
                     f"the warm-up {rss_fit:+.2f} MiB/h; open fds {min(fds)}..{max(fds)} after the warm-up "
                     f"({len(after)} samples)")
    summary = "\n".join(lines)
    print(summary)
    open(os.path.join(a.out, "summary.txt"), "w").write(summary + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""CLI tests: the conventions users bring (nccl-tests and Google Benchmark flags, --version, --help,
results never overwritten, progress, headline, install, plots, time-outs, README examples).

One case per issue-15 item; each launches the real binaries (fabricbench under mpirun on localhost
over tcp, fabricbench-report on committed results) and checks what they printed and wrote.
Exit 0 = pass, 1 = fail.
"""
import argparse
import csv
import hashlib
import json
import os
import pty
import re
import select
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time

A = None
SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FAILS = []


def env(extra=None):
    e = dict(os.environ)
    e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             OMPI_MCA_rmaps_base_oversubscribe="1")
    for k in list(e):
        if k.startswith("SLURM_"):
            del e[k]
    if extra:
        e.update(extra)
    return e


def run(cmd, timeout=120, extra_env=None, **kw):
    print("$", " ".join(shlex.quote(c) for c in cmd), flush=True)
    return subprocess.run(cmd, env=env(extra_env), capture_output=True, text=True, timeout=timeout, **kw)


def fb1(args, **kw):
    """fabricbench as one plain process (parse-only cases)."""
    return run([A.fabricbench] + args, **kw)


def fb(np_, args, xenv=None, **kw):
    cmd = [A.mpirun, "-q", "--oversubscribe", "-np", str(np_)]
    for k in (xenv or {}):
        cmd += ["-x", k]
    return run(cmd + [A.fabricbench] + args, extra_env=xenv, **kw)


def check(cond, msg):
    if not cond:
        print("FAIL:", msg, flush=True)
        FAILS.append(msg)
    return cond


def bad_input(p, needle, what):
    """Exit 2 and exactly one stderr line 'fabricbench: error: ...' containing needle."""
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == 2, f"{what}: exit {p.returncode}, expected 2 (stderr: {p.stderr.strip()[:300]})")
    check(len(lines) == 1 and lines[0].startswith("fabricbench: error: "),
          f"{what}: expected one 'fabricbench: error:' line, got {lines}")
    check(needle.lower() in p.stderr.lower(), f"{what}: message lacks '{needle}': {p.stderr.strip()}")


def rows_of(folder):
    with open(os.path.join(folder, "table.csv"), newline="") as f:
        return list(csv.DictReader(f))


def digest(folder):
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(folder)):
        for n in sorted(files):
            with open(os.path.join(root, n), "rb") as f:
                h.update(n.encode() + f.read())
    return h.hexdigest()


TCP = ["--transport", "tcp", "--tcp-if", "lo", "--collective", "allreduce", "--placement", "out"]


# ---------------------------------------------------------------- 1. nccl-tests flags
def case_nccl_flags(d):
    p = fb(2, TCP + ["-d", "half", "-o", "sum", "-T", "30", "-c", "1", "-n", "3", "-w", "1", "-b", "8", "-e", "1K",
                     "-f", "4", "-G", "0", "--results-dir", d, "--run-id", "nt", "--progress", "0"])
    check(p.returncode == 0, f"nccl-tests flags run: exit {p.returncode}: {p.stderr[-500:]}")
    rows = rows_of(os.path.join(d, "nt"))
    check([int(r["size_bytes"]) for r in rows] == [8, 32, 128, 512], f"-b 8 -e 1K -f 4 sizes: {[r['size_bytes'] for r in rows]}")
    check(all(r["type"] == "float16" and r["iters"] == "3" and r["wrong"] == "0" for r in rows),
          f"-d half / -n 3 / -c 1: {[(r['type'], r['iters'], r['wrong']) for r in rows]}")
    cfg = json.load(open(os.path.join(d, "nt", "run.json")))["config"]
    check(cfg.get("timeout_s") == 30 and cfg.get("warmup") == 1 and cfg.get("op") == "sum", f"-T 30 / -w 1 / -o sum: {cfg}")
    # -d all and nccl-tests' type names; -i (step bytes); long forms
    p = fb1(TCP + ["-d", "all", "-b", "8", "-e", "8", "--benchmark_list_tests"])
    types = sorted({n.split("/")[3] if n.count("/") >= 3 else "float32" for n in p.stdout.split()})
    check(p.returncode == 0 and types == ["bfloat16", "float16", "float32", "float64", "int32"], f"-d all: {p.stdout}")
    p = fb1(TCP + ["--datatype", "double", "-b", "100", "-e", "300", "-i", "100", "--benchmark_list_tests"])
    check(p.stdout.split() == [f"allreduce/tcp/{b}/float64" for b in (100, 200, 300)], f"--datatype double -i 100: {p.stdout}")
    p = fb1(TCP + ["-G", "1", "--op", "all", "--benchmark_list_tests"])
    check(p.returncode == 0, f"-G 1 / --op all accepted: {p.stderr}")
    # unsupported nccl-tests flags: one line naming what to use instead
    for flag, hint in [("-t", "mpirun -np"), ("-g", "one rank per GPU"), ("-m", "-n"), ("-N", "--repeat"),
                       ("-p", "nothing to choose"), ("-z", "asynchronous"), ("-y", "stream"),
                       ("-C", "--timer"), ("-R", "registers"), ("-J", "--benchmark_out")]:
        bad_input(fb1([flag, "1"]), hint, f"nccl-tests {flag}")
    bad_input(fb1(["-d", "int8"]), "unknown dtype 'int8'", "-d int8")
    bad_input(fb1(["-o", "median"]), "-o/--op 'median'", "-o median")
    # nccl-tests' -r is the broadcast root; -o takes every operator the backends have
    p = fb1(TCP + ["--collective", "broadcast", "-r", "0", "-o", "max", "-b", "8", "-e", "8", "--benchmark_list_tests"])
    check(p.returncode == 0 and p.stdout.split() != [], f"-r 0 / -o max accepted: {p.returncode} {p.stderr.strip()}")
    bad_input(fb1(["-G", "4"]), "-G 4", "-G 4")


# ---------------------------------------------------------------- 2. --version
def case_version(d):
    p = fb1(["--version"])
    check(p.returncode == 0, f"--version exit {p.returncode}")
    out = p.stdout
    for needle in ["fabricbench ", "git revision:", "NCCL", "CUDA", "MPI", "rdma-core", "compiler"]:
        check(needle in out, f"--version lacks '{needle}': {out}")
    check(re.search(r"MPI\s+Open MPI \d+\.\d+\.\d+|MPI\s+MPICH", out), f"--version MPI version: {out}")
    p2 = fb(2, ["--version"])
    check(p2.returncode == 0 and p2.stdout.count("git revision:") == 1, f"--version at np 2 printed {p2.stdout.count('git revision:')} times")


# ---------------------------------------------------------------- 3. repeated scalar flags
def case_repeated(d):
    p = fb(2, TCP + ["-n", "2", "-b", "1K", "-e", "64", "-n", "4", "-b", "64", "--iters", "5", "-w", "0",
                     "--results-dir", d, "--run-id", "rep", "--progress", "0"])
    check(p.returncode == 0, f"repeated flags: exit {p.returncode}: {p.stderr[-400:]}")
    rows = rows_of(os.path.join(d, "rep"))
    check([(r["size_bytes"], r["iters"]) for r in rows] == [("64", "5")], f"last one wins: {[(r['size_bytes'], r['iters']) for r in rows]}")
    # list flags still add up
    p = fb1(["--transport", "tcp", "--collective", "allreduce", "--collective", "allgather", "-b", "8", "-e", "8",
             "--placement", "in", "--placement", "out", "--benchmark_list_tests"])
    check(p.stdout.split() == ["allreduce/tcp/8", "allgather/tcp/8"], f"list flags accumulate / placement last wins: {p.stdout}")


# ---------------------------------------------------------------- 4. --help
def case_help(d):
    p = fb1(["--help"])
    h = p.stdout
    check(p.returncode == 0, f"--help exit {p.returncode}")
    check("Examples:" in h and "Exit codes:" in h, "--help lacks examples or exit codes")
    for code in ["0 every row", "1 wrong data", "2 bad input", "3 nothing ran"]:
        check(code in h, f"--help exit codes lack '{code}'")
    check("--gpu-memory" not in h, "--help offers --gpu-memory, which is refused")
    for f in ["--nthreads", "--ngpus", "--agg_iters", "--fb-test-corrupt"]:
        check(f not in h, f"--help offers {f}")
    # every example in --help is accepted as written (checked through --benchmark_list_tests)
    n = 0
    for line in h.splitlines():
        m = re.match(r"\s+mpirun -np \d+ fabricbench (.*?)(\s+#.*)?$", line)
        if not m:
            continue
        n += 1
        q = fb1(shlex.split(m.group(1)) + ["--benchmark_list_tests"], cwd=d)
        check(q.returncode == 0, f"--help example '{m.group(1)}': exit {q.returncode}: {q.stderr.strip()}")
    check(n >= 3, f"only {n} runnable examples in --help")
    # every option --help lists is accepted (none is refused just for being given)
    opts = set(re.findall(r"^\s+(?:-\w,)?(--[a-z][\w-]*)", h, re.M))
    values = {"--minbytes": "8", "--maxbytes": "8", "--stepfactor": "2", "--stepbytes": "8", "--counts": "4",
              "--iters": "1", "--warmup": "0", "--check": "1", "--collective": "allreduce", "--transport": "tcp",
              "--dtype": "float", "--op": "sum", "--placement": "out", "--path": "auto", "--cudagraph": "0",
              "--tcp-if": "lo", "--ib-dev": "x", "--ib-port": "1", "--gid-index": "0", "--timeout": "5",
              "--results-dir": d, "--run-id": "help-x", "--progress": "0",
              "--average": "3", "--repeat": "1", "--require": "tcp", "--timer": "gpu", "--root": "0",
              "--accept-floor": "0.9", "--accept-paths": "tcp", "--accept-bw-bytes": "1M", "--accept-lat-bytes": "8",
              "--accept-bw-iters": "2", "--accept-lat-iters": "2", "--accept-retests": "1", "--accept-baseline": d,
              "--accept-margin": "0.9"}
    # --expect is read by --accept only (refused alone, by design; tests/accept checks it)
    skip = {"--help", "--version", "--list", "--resume", "--overwrite", "--no-files", "--expect"}
    for o in sorted(opts - skip):
        args = [o] + ([values[o]] if o in values else [])
        q = fb1(["--transport", "tcp", "-b", "8", "-e", "8"] + args + ["--benchmark_list_tests"])
        check(q.returncode == 0, f"--help offers {o} but '{' '.join(args)}' is refused: {q.stderr.strip()}")


# ---------------------------------------------------------------- 5. Google Benchmark flags
def case_gbench(d):
    out = os.path.join(d, "gb.json")
    p = fb(2, TCP + ["-b", "8", "-e", "4K", "-f", "8", "-n", "2", "-w", "1", "--results-dir", d, "--run-id", "gb",
                     "--benchmark_out=" + out, "--benchmark_format=json", "--benchmark_time_unit=ns",
                     "--benchmark_context=site=lab", "--progress", "0"])
    check(p.returncode == 0, f"gbench run: exit {p.returncode}: {p.stderr[-500:]}")
    rows = rows_of(os.path.join(d, "gb"))
    try:
        doc = json.loads(p.stdout)  # stdout is one JSON document (rank 0 only); the table went to stderr
    except json.JSONDecodeError as e:
        check(False, f"--benchmark_format=json: stdout is not one JSON document ({e}): {p.stdout[:300]}")
        doc = {"benchmarks": []}
    check("# fabricbench run" in p.stderr, "--benchmark_format=json: the table should go to stderr")
    filed = json.load(open(out))
    for name, j in (("stdout", doc), ("--benchmark_out", filed)):
        b = j["benchmarks"]
        check(len(b) == len(rows) == 4, f"{name}: {len(b)} benchmarks for {len(rows)} rows")
        check(j["context"].get("site") == "lab" and j["context"].get("num_ranks") == "2", f"{name}: context {j['context']}")
        for r, x in zip(rows, b):
            # compare.py skips entries without cpu_time: it repeats real_time (no CPU time is measured)
            check(x.get("cpu_time") == x["real_time"], f"{name}: cpu_time {x.get('cpu_time')} is not real_time")
            check(x["time_unit"] == "ns" and abs(x["real_time"] - float(r["time_us"]) * 1e3) <= 1e-6 * x["real_time"] + 1e-3,
                  f"{name}: real_time {x['real_time']} ns vs time_us {r['time_us']}")
            bps = int(r["size_bytes"]) / (float(r["time_us"]) * 1e-6)
            check(abs(x["bytes_per_second"] - bps) <= 1e-6 * bps + 1e-6, f"{name}: bytes_per_second {x['bytes_per_second']} vs {bps}")
            check(x["name"] == f"allreduce/tcp/{r['size_bytes']}", f"{name}: name {x['name']}")
    # csv output
    outc = os.path.join(d, "gb.csv")
    p = fb(2, TCP + ["-b", "8", "-e", "64", "-f", "8", "-n", "2", "--no-files", "--benchmark_out=" + outc,
                     "--benchmark_out_format=csv", "--progress", "0"])
    lines = open(outc).read().splitlines() if os.path.exists(outc) else []
    check(p.returncode == 0 and len(lines) == 3 and
          lines[0].startswith("name,iterations,real_time,cpu_time,time_unit,bytes_per_second"),
          f"--benchmark_out_format=csv: {lines}")
    # list_tests: once, at np 2, exit 0, no result folder
    before = set(os.listdir(d))
    p = fb(2, TCP + ["-b", "8", "-e", "64", "-f", "8", "--results-dir", d, "--benchmark_list_tests"])
    names = p.stdout.split()
    check(p.returncode == 0 and names == ["allreduce/tcp/8", "allreduce/tcp/64"], f"list_tests at np 2: exit {p.returncode}, {names}")
    check(set(os.listdir(d)) == before, "list_tests created a result folder")
    p = fb1(["--transport", "tcp", "-b", "8", "-e", "64", "-f", "8", "--benchmark_filter=-/64$", "--benchmark_list_tests"])
    want = [n for c in ("allreduce", "allgather", "reducescatter") for n in (f"{c}/tcp/8", f"{c}/tcp/8/inplace", f"{c}/tcp/64/inplace")]
    want += ["p2pring/tcp/8", "alltoall/tcp/8", "broadcast/tcp/8", "broadcast/tcp/8/inplace", "broadcast/tcp/64/inplace"]
    check(p.stdout.split() == want, f"negative filter: {p.stdout.split()}")
    # refused: unknown, malformed, unsupported
    for args, needle in [(["--benchmark_bogus=1"], "unknown Google Benchmark flag"),
                         (["--benchmark_filter=["], "not a valid regular expression"),
                         (["--benchmark_min_time=abc"], "-n/--iters"),
                         (["--benchmark_min_time=1s"], "-n/--iters"),
                         (["--benchmark_format=xml"], "console, json or csv"),
                         (["--benchmark_out_format=tabular"], "console, json or csv"),
                         (["--benchmark_repetitions=0"], "count >= 1"),
                         (["--benchmark_repetitions=x"], "count >= 1"),
                         (["--benchmark_out="], "wants a value"),
                         (["--benchmark_out=" + os.path.join(d, "no", "such", "f.json")], "does not exist"),
                         (["--benchmark_enable_random_interleaving=true"], "deadlock"),
                         (["--benchmark_list_tests=maybe"], "true or false"),
                         (["--benchmark_context=novalue"], "KEY=VALUE"),
                         (["--benchmark_time_unit=h"], "ns, us, ms or s")]:
        bad_input(fb1(TCP + ["--results-dir", os.path.join(d, "never")] + args), needle, " ".join(args))
    check(not os.path.exists(os.path.join(d, "never")), "a refused Google Benchmark flag left a result folder")
    # repetitions: the suite's own --repeat (one row per size: the median, min and max of the batches)
    if "--repeat" not in fb1(["--help"]).stdout:
        bad_input(fb1(TCP + ["--benchmark_repetitions=3"]), "--benchmark_repetitions", "repetitions before --repeat exists")
        return
    p = fb(2, TCP + ["-b", "8", "-e", "8", "-n", "2", "--results-dir", d, "--run-id", "reps", "--benchmark_repetitions=3",
                     "--progress", "0"])
    check(p.returncode == 0, f"--benchmark_repetitions=3: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    if p.returncode == 0:
        r = rows_of(os.path.join(d, "reps"))
        check(len(r) == 1 and r[0].get("repeats") == "3", f"--benchmark_repetitions=3 -> repeats column: {r}")
    gbench_repetitions(d)
    gbench_filter_hint(d)


def gbench_repetitions(d):
    """--benchmark_repetitions=N: one entry per repetition, then mean/median/stddev/cv, as Google Benchmark."""
    out, outc = os.path.join(d, "r3.json"), os.path.join(d, "r3.csv")
    for fmt_args, path in ((["--benchmark_out=" + out], out), (["--benchmark_out=" + outc, "--benchmark_out_format=csv"], outc)):
        run_id = "r3" + os.path.splitext(path)[1][1:]
        p = fb(2, TCP + ["-b", "8", "-e", "64", "-f", "8", "-n", "2", "-w", "0", "--results-dir", d, "--run-id", run_id,
                         "--benchmark_repetitions=3", "--progress", "0"] + fmt_args)
        check(p.returncode == 0, f"--benchmark_repetitions=3 {fmt_args}: exit {p.returncode}: {p.stderr[-300:]}")
        rows = {int(r["size_bytes"]): r for r in rows_of(os.path.join(d, run_id))}
        if path == out:
            b = json.load(open(out))["benchmarks"]
        else:
            with open(outc, newline="") as f:
                b = [dict(x, real_time=float(x["real_time"]), cpu_time=float(x["cpu_time"])) for x in csv.DictReader(f)]
        names = [x["name"] for x in b]
        want = [n for size in (8, 64) for n in [f"allreduce/tcp/{size}"] * 3 +
                [f"allreduce/tcp/{size}_{a}" for a in ("mean", "median", "stddev", "cv")]]
        check(names == want, f"{path}: entries {names}")
        if names != want:
            continue
        wrong = 0
        for k, size in enumerate((8, 64)):
            reps, agg = b[7 * k:7 * k + 3], {x["name"].rsplit("_", 1)[1]: x for x in b[7 * k + 3:7 * k + 7]}
            t = [x["real_time"] for x in reps]
            m = sum(t) / 3
            sd = (sum((v - m) ** 2 for v in t) / 2) ** 0.5
            expect = {"mean": m, "median": sorted(t)[1], "stddev": sd, "cv": sd / m}
            for a, v in expect.items():
                got = agg[a]["real_time"]
                if abs(got - v) > 1e-9 * max(abs(v), 1e-12) + 1e-12 or agg[a]["cpu_time"] != got:
                    wrong += 1
                    print(f"  {path} {size} {a}: {got} (cpu {agg[a]['cpu_time']}), expected {v}")
            # the row is the median of the same batches
            if abs(expect["median"] - float(rows[size]["time_us"])) > 1e-3 * expect["median"]:
                wrong += 1
                print(f"  {size}: row time_us {rows[size]['time_us']} vs median of repetitions {expect['median']}")
            if path == out:
                for i, x in enumerate(reps):
                    if (x["run_type"], x["repetitions"], x["repetition_index"]) != ("iteration", 3, i):
                        wrong += 1
                        print(f"  {size} repetition {i}: {x}")
                for a, x in agg.items():
                    if (x["run_type"], x["aggregate_name"], x["repetitions"], x["iterations"], x["run_name"],
                            x["aggregate_unit"]) != ("aggregate", a, 3, 3, f"allreduce/tcp/{size}",
                                                     "percentage" if a == "cv" else "time"):
                        wrong += 1
                        print(f"  {size} aggregate {a}: {x}")
        check(wrong == 0, f"{path}: {wrong} entries wrong")


def gbench_filter_hint(d):
    """A --benchmark_filter that selects nothing names the real benchmark names."""
    p = fb(2, TCP + ["-b", "8", "-e", "64", "-f", "8", "-n", "2", "--results-dir", d, "--run-id", "nofilter",
                     "--benchmark_filter=AllReduce", "--progress", "0"])
    check(p.returncode == 3, f"--benchmark_filter=AllReduce: exit {p.returncode}, expected 3 (nothing ran)")
    notes = json.load(open(os.path.join(d, "nofilter", "run.json"))).get("summary", {}).get("notes", [])
    hint = [n for n in notes if "--benchmark_filter='AllReduce' matches none" in n]
    check(hint and "e.g. allreduce/tcp/8, allreduce/tcp/64" in hint[0] and "case-sensitive" in hint[0],
          f"no filter hint in the notes: {notes}")
    p = fb1(["--transport", "tcp", "-b", "8", "-e", "8", "--benchmark_filter=Bogus", "--benchmark_list_tests"])
    check(p.returncode == 0 and p.stdout.strip() == "" and "matches none of this run's" in p.stderr
          and "allreduce/tcp/8" in p.stderr, f"list_tests with an empty filter: {p.returncode} {p.stderr.strip()}")


# ---------------------------------------------------------------- 6. results never overwritten
def case_never_overwritten(d):
    base = TCP + ["-b", "8", "-e", "64", "-f", "8", "-n", "2", "-w", "0", "--results-dir", d, "--progress", "0"]
    slurm = {"SLURM_JOB_ID": "777", "SLURM_STEP_ID": "3"}
    p1 = fb(2, base, xenv=slurm)
    check(p1.returncode == 0 and os.path.isdir(os.path.join(d, "777.3")), f"Slurm default run id 777.3: {os.listdir(d)} {p1.stderr[-300:]}")
    h1 = digest(os.path.join(d, "777.3"))
    p2 = fb(2, base, xenv=slurm)   # the same job and step again (a rerun, a requeued job)
    check(p2.returncode == 0 and os.path.isdir(os.path.join(d, "777.3-2")), f"second run of 777.3: {os.listdir(d)}")
    check("results in " + os.path.join(d, "777.3-2") in p2.stdout, "second run does not say where its results are")
    check(digest(os.path.join(d, "777.3")) == h1, "the first run's folder changed")
    # an explicit existing run id: refused, unless --resume or --overwrite
    bad_input(fb(2, base + ["--run-id", "777.3"]), "--resume", "existing --run-id")
    check(digest(os.path.join(d, "777.3")) == h1, "the refused run touched the folder")
    bad_input(fb1(["--resume"]), "--run-id", "--resume without --run-id")
    bad_input(fb1(["--resume", "--overwrite", "--run-id", "x"]), "exclude", "--resume --overwrite")
    # --resume with other measurement settings (-n, --timer, -o, --root): refused, naming the setting,
    # the earlier folder untouched
    for extra, key in ((["-n", "5"], "iters"), (["--timer", "host"], "timer"), (["-o", "max"], "op"),
                       (["--root", "1"], "root")):
        args = base + extra   # the last -n wins (nccl-tests' convention)
        bad_input(fb(2, args + ["--run-id", "777.3", "--resume"]), f"{key} = ", f"--resume with {' '.join(extra)}")
        check(digest(os.path.join(d, "777.3")) == h1, f"the refused --resume {' '.join(extra)} touched the folder")
    # --resume: a wider sweep measures only the missing sizes
    p = fb(2, TCP + ["-b", "8", "-e", "512", "-f", "8", "-n", "2", "-w", "0", "--results-dir", d, "--run-id", "777.3",
                     "--resume", "--progress", "0", "--wide"])
    check(p.returncode == 0, f"--resume: exit {p.returncode}: {p.stderr[-300:]}")
    rows = rows_of(os.path.join(d, "777.3"))
    check(sorted(int(r["size_bytes"]) for r in rows) == [8, 64, 512], f"--resume rows: {[r['size_bytes'] for r in rows]}")
    table = [l for l in p.stdout.splitlines() if re.match(r"^\s+\d+\s+\d+\s+float32", l)]
    check("resumed: 2 rows" in p.stdout and "2 kept from the earlier run" in p.stdout and len(table) == 1,
          f"--resume console: {len(table)} rows measured: {p.stdout[-800:]}")
    rj = json.load(open(os.path.join(d, "777.3", "run.json")))
    check(len(rj["rows"]) == 3 and rj.get("finished") is True, f"--resume run.json rows {len(rj['rows'])}")
    # --resume into a run.json from before the timer names (config timer "gpu", rows "gpu"): the same timer
    rjp = os.path.join(d, "777.3", "run.json")
    rj["config"]["timer"] = "gpu"
    json.dump(rj, open(rjp, "w"))
    tc = os.path.join(d, "777.3", "table.csv")
    old_rows = open(tc).read().replace(",rank-clock,", ",gpu,")
    open(tc, "w").write(old_rows)
    p = fb(2, TCP + ["-b", "8", "-e", "4K", "-f", "8", "-n", "2", "-w", "0", "--results-dir", d, "--run-id", "777.3",
                     "--resume", "--progress", "0"])
    rows = rows_of(os.path.join(d, "777.3"))  # table.csv is appended to: the kept lines keep their old text
    rj = json.load(open(rjp))                 # run.json is rewritten from the rows as read: today's names
    check(p.returncode == 0 and sorted(int(r["size_bytes"]) for r in rows) == [8, 64, 512, 4096]
          and rows[-1]["timer"] == "rank-clock" and {r["timer"] for r in rj["rows"]} == {"rank-clock"},
          f"--resume of an old-names run: exit {p.returncode}, rows {[(r['size_bytes'], r['timer']) for r in rows]}, "
          f"run.json {[r['timer'] for r in rj['rows']]}")
    # --overwrite: a fresh folder
    p = fb(2, TCP + ["-b", "16", "-e", "16", "-n", "2", "--results-dir", d, "--run-id", "777.3", "--overwrite", "--progress", "0"])
    rows = rows_of(os.path.join(d, "777.3"))
    check(p.returncode == 0 and [r["size_bytes"] for r in rows] == ["16"], f"--overwrite: {[r['size_bytes'] for r in rows]}")


# ---------------------------------------------------------------- 7. progress
def case_progress(d):
    # rows long enough that a row is still running when a progress line is due: the timed
    # operations are made 4x more until a row outlasts the 0.2 s interval (a faster transport
    # once finished every row of -n 8 in under 0.2 s and no line showed a running row)
    for iters in (8, 32, 128, 512):
        args = TCP + ["-b", "2M", "-e", "8M", "-f", "2", "-n", str(iters), "-w", "1", "-c", "1", "--no-files",
                      "--progress", "0.2"]
        t = time.time()
        p = fb(2, args, timeout=300)
        el = time.time() - t
        lines = [l for l in p.stderr.splitlines() if l.startswith("progress: ")]
        if p.returncode != 0 or any("running for" in l for l in lines):
            break
    check(p.returncode == 0, f"progress run: exit {p.returncode}")
    print(f"run with -n {iters} took {el:.1f} s, {len(lines)} progress lines; e.g. {lines[:2]}")
    pat = re.compile(r"^progress: (\d+)/3 rows, elapsed \d\d:\d\d, ETA (\?|~\d\d:\d\d)")
    check(lines and all(pat.match(l) for l in lines), f"progress line format: {lines[:3]}")
    check(any("running for" in l for l in lines), "no progress line while a row was running")
    check(any(re.search(r"ETA ~", l) for l in lines), "no ETA estimate after the first row")
    check(not any("progress:" in l for l in p.stdout.splitlines()), "progress went to stdout")
    # a terminal on stderr: a bar redrawn in place, wiped before table lines. (Under mpirun a rank's
    # stderr is a pipe, so this is one process started directly, as on a workstation.)
    mfd, sfd = pty.openpty()
    single = ["--allow-single-rank"] if "--allow-single-rank" in fb1(["--help"]).stdout else []
    cmd = [A.fabricbench, "--transport", "mpi", "--collective", "allreduce", "--placement", "out", "-b", "4M", "-e", "16M",
           "-n", "20", "--no-files", "--progress", "0.2"] + single
    pr = subprocess.Popen(cmd, env=env(), stdout=subprocess.PIPE, stderr=sfd, text=True)
    os.close(sfd)
    buf = b""
    end = time.time() + 240
    while time.time() < end:
        r, _, _ = select.select([mfd], [], [], 0.5)
        if r:
            try:
                chunk = os.read(mfd, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
        elif pr.poll() is not None:
            break
    pr.wait(timeout=30)
    os.close(mfd)
    text = buf.decode(errors="replace")
    check(re.search(r"\r\[#*\.*\] \d+/3 rows", text) is not None, f"no progress bar on a terminal: {text[:300]!r}")
    check("\r\x1b[K" in text, "the bar is never wiped")


# ---------------------------------------------------------------- 8. headline
def case_headline(d):
    p = fb(2, ["--transport", "tcp,mpi", "--tcp-if", "lo", "--collective", "allreduce", "-b", "8", "-e", "64K", "-f", "8",
               "-n", "2", "-w", "0", "--results-dir", d, "--run-id", "hl", "--progress", "0"])
    check(p.returncode == 0, f"headline run: exit {p.returncode}")
    lines = p.stdout.rstrip("\n").splitlines()
    rows = rows_of(os.path.join(d, "hl"))
    series = {}
    for r in rows:
        series.setdefault((r["impl"], r["path"], r["placement"]), []).append(r)
    start = max(i for i, l in enumerate(lines) if l.startswith("# headline:"))
    tail = lines[start + 1:]
    check(all(len(l) <= 120 for l in lines), f"a console line is over 120 columns: {max(lines, key=len)}")
    for (impl, path, place), rs in series.items():
        rs = sorted(rs, key=lambda r: int(r["size_bytes"]))
        mx = max(int(r["size_bytes"]) for r in rs)
        plateau = statistics.median(float(r["busbw_GBps"]) for r in rs if int(r["size_bytes"]) >= mx / 4)
        floor = min(float(r["time_us"]) for r in rs if 0 < int(r["size_bytes"]) <= 8192)
        last, prev = float(rs[-1]["busbw_GBps"]), float(rs[-2]["busbw_GBps"])
        rising = prev > 0 and last > prev * 1.05
        want = f"{impl}/{path} [{place}]"
        idx = [i for i, l in enumerate(tail) if want in l]
        check(len(idx) == 1, f"no headline line for {want}: {tail}")
        if idx:
            # the figures follow the label on its line, or on the next one when the label is long
            text = tail[idx[0]] if "floor" in tail[idx[0]] else " ".join(tail[idx[0]:idx[0] + 2])
            if rising:
                m = re.search(r"rising, no plateau: busbw ([\d.]+) GB/s .*floor ([\d.]+) us", text)
                ok = m and abs(float(m.group(1)) - last) <= 0.0005 + 1e-9
            else:
                m = re.search(r"plateau busbw ([\d.]+) GB/s .*floor ([\d.]+) us", text)
                ok = m and "rising" not in text and abs(float(m.group(1)) - plateau) <= 0.0005 + 1e-9
            check(ok and abs(float(m.group(2)) - floor) <= 0.005 + 1e-9,
                  f"{want}: headline {text} vs {'rising to ' + str(last) if rising else 'plateau ' + str(plateau)} "
                  f"floor {floor:.2f}")


# ---------------------------------------------------------------- console layout (issue 37)
def case_console(d):
    """Default: every line <= 120 columns, the path once per group, out- and in-place in one row;
    --wide: today's full rows. table.csv and run.json have the same columns either way."""
    base = ["--transport", "tcp", "--tcp-if", "lo", "--collective", "allreduce,p2pring", "-b", "8", "-e", "64K", "-f", "8",
            "-n", "2", "-w", "0", "--results-dir", d, "--progress", "0"]
    p = fb(2, base + ["--run-id", "narrow"])
    q = fb(2, base + ["--run-id", "wide", "--wide"])
    check(p.returncode == 0 and q.returncode == 0, f"console runs: exit {p.returncode}, {q.returncode}")
    lines = p.stdout.splitlines()
    wide = max((l for l in lines), key=len)
    check(len(wide) <= 120, f"default console line of {len(wide)} columns: {wide}")
    rows = [l for l in lines if l and not l.startswith("#")]
    sizes = [8, 64, 512, 4096, 32768]
    check(len(rows) == 2 * len(sizes), f"default: expected {2 * len(sizes)} rows (allreduce paired, p2pring), got {rows}")
    paired = [l.split() for l in rows[:len(sizes)]]
    check(all(len(f) == 12 for f in paired), f"allreduce rows are not size count + 2 x 5 figures: {paired}")
    check([int(f[0]) for f in paired] == sizes, f"allreduce row sizes: {[f[0] for f in paired]}")
    check(sum("path=tcp lo" in l for l in lines) == 2, "the path is not printed once per group")
    check(not any("tcp/" in l for l in rows), "the path label is on the rows")
    check(any("out-of-place" in l and "in-place" in l for l in lines), "no out-of-place | in-place header")
    # the figures are the CSV's: time_us of each half against table.csv
    csvrows = rows_of(os.path.join(d, "narrow"))
    for f in paired:
        for place, t in (("out", f[2]), ("in", f[7])):
            r = [r for r in csvrows if r["coll"] == "allreduce" and r["placement"] == place and r["size_bytes"] == f[0]]
            check(len(r) == 1 and abs(float(r[0]["time_us"]) - float(t)) <= 0.005 + 1e-9,
                  f"{f[0]} B {place}: console {t} vs csv {r[0]['time_us'] if r else None}")
    wl = q.stdout.splitlines()
    check(any(re.match(r"^#\s+size\(B\)\s+count\(elts\)\s+type\s+coll\s+impl/path\s+place\s+time_us", l) for l in wl),
          "--wide lost its column header")
    wrows = [l for l in wl if l and not l.startswith("#")]
    check(len(wrows) == 3 * len(sizes) and all(" tcp/tcp lo " in l for l in wrows), f"--wide rows: {wrows[:3]}")
    check(max(len(l) for l in wl) > 120, "--wide rows are not the full rows")
    for name in ("narrow", "wide"):
        with open(os.path.join(d, name, "table.csv")) as f:
            head = f.readline()
        check(head == open(os.path.join(d, "narrow", "table.csv")).readline(), "table.csv header differs")
        j = json.load(open(os.path.join(d, name, "run.json")))
        check(len(j["rows"]) == 3 * len(sizes), f"{name}: run.json rows {len(j['rows'])}")
    check(sorted(json.load(open(os.path.join(d, "narrow", "run.json")))["rows"][0]) ==
          sorted(json.load(open(os.path.join(d, "wide", "run.json")))["rows"][0]), "run.json row keys differ")


# ---------------------------------------------------------------- 9. install
def case_install(d):
    prefix = os.path.join(d, "prefix")
    p = run(["cmake", "--install", A.build, "--prefix", prefix], timeout=120)
    check(p.returncode == 0, f"cmake --install: {p.stdout[-300:]} {p.stderr[-300:]}")
    want = ["bin/fabricbench", "bin/fabricbench-report", "share/fabricbench/slurm/allreduce.sbatch",
            "share/fabricbench/slurm/collectives.sbatch", "share/fabricbench/slurm/fabricbench_job.sh",
            "share/fabricbench/slurm/fabricbench.env", "share/fabricbench/slurm/README.md"]
    for extra in ("fabricbench-peer", "fabricbench-verbs"):
        if os.path.exists(os.path.join(os.path.dirname(A.fabricbench), {"fabricbench-peer": "peer", "fabricbench-verbs": "verbs"}[extra], extra)):
            want.append("bin/" + extra)
    for w in want:
        check(os.path.exists(os.path.join(prefix, w)), f"not installed: {w}")
    q = run([os.path.join(prefix, "bin", "fabricbench"), "--version"])
    check(q.returncode == 0 and q.stdout.startswith("fabricbench "), f"installed fabricbench --version: {q.stdout} {q.stderr}")
    # how the job finds the binary: FB_BIN, then the install beside the scripts, then PATH, then the build tree
    share = os.path.join(prefix, "share", "fabricbench")
    def fb_bin(home, path, fbbin=None):
        e = {"FB_HOME": home, "PATH": path}
        if fbbin:
            e["FB_BIN"] = fbbin
        r = subprocess.run(["bash", "-c", 'unset FB_RESULTS_DIR; source "$FB_HOME/slurm/fabricbench.env"; echo "$FB_BIN|$FB_RESULTS_DIR"'],
                           env={**{k: v for k, v in os.environ.items() if not k.startswith("FB_")}, **e},
                           capture_output=True, text=True)
        return r.stdout.strip().split("|")
    bindir = os.path.join(d, "pathbin")
    os.makedirs(bindir, exist_ok=True)
    os.symlink(A.fabricbench, os.path.join(bindir, "fabricbench"))
    got = fb_bin(share, "/usr/bin:/bin")
    check(got[0] == os.path.join(prefix, "bin", "fabricbench"), f"installed scripts find {got[0]}")
    check(got[1].endswith("/results") and not got[1].startswith(share), f"install: results dir {got[1]}")
    got = fb_bin(SRC, bindir + ":/usr/bin:/bin")
    check(got[0] == os.path.join(bindir, "fabricbench"), f"checkout + fabricbench in PATH: {got[0]}")
    got = fb_bin(SRC, "/usr/bin:/bin")
    check(got[0] == os.path.join(SRC, "build", "benchmarks", "fabricbench") and got[1] == os.path.join(SRC, "results"),
          f"checkout, nothing in PATH: {got}")
    got = fb_bin(share, bindir + ":/usr/bin:/bin", "/opt/x/fabricbench")
    check(got[0] == "/opt/x/fabricbench", f"FB_BIN first: {got[0]}")


# ---------------------------------------------------------------- 10. plots
def case_plots(d):
    a = os.path.join(SRC, "results", "20261129-h200x2-nccl-nvlink")
    b = os.path.join(SRC, "results", "20261129-h200x2-nccl-socket")
    out = os.path.join(d, "cmp")
    p = run([A.report, a, b, "-o", out, "--baseline", "nvlink"], timeout=300)
    check(p.returncode == 0, f"report: exit {p.returncode}: {p.stderr}")
    gp = open(os.path.join(out, "plots", "allreduce_float32_busbw.gp")).read()
    check("set key outside" in gp, "legend not outside")
    check("set logscale y" in gp, "socket (~3 GB/s) beside NVLink (~340 GB/s): no log y axis")
    check(re.search(r'title "nominal [\d.]+ GB/s: nccl/nvlink', gp) is not None, "no nominal-rate line for NVLink")
    check(gp.count("dt 2 title \"nominal") == 1, "one nominal line per path (in and out of place share it)")
    for kind in ("busbw", "time"):
        for ext in ("png", "svg"):
            f = os.path.join(out, "plots", f"allreduce_float32_{kind}.{ext}")
            check(os.path.exists(f) and os.path.getsize(f) > 1000, f"missing {f}")
    svg = open(os.path.join(out, "plots", "allreduce_float32_busbw.svg")).read()
    check("<svg" in svg and "nominal" in svg, "SVG without the nominal line")
    # one path, in- and out-of-place (within 10x): a linear axis from 0
    out2 = os.path.join(d, "one")
    p = run([A.report, a, "-o", out2, "--no-report-update"], timeout=300)
    gp = open(os.path.join(out2, "plots", "allreduce_float32_busbw.gp")).read()
    check(p.returncode == 0 and "set logscale y" not in gp and "set yrange [0:*]" in gp, "single path: log y axis")
    # issue 37: a run folder gets its plots at the end of the run where gnuplot exists, and its
    # report.md links them; without gnuplot the run says so in a note.
    import shutil
    p = fb(2, ["--transport", "tcp", "--tcp-if", "lo", "--collective", "allreduce,p2pring", "-b", "8", "-e", "64K",
               "-f", "8", "-n", "2", "-w", "0", "--results-dir", d, "--run-id", "ended", "--progress", "0"])
    check(p.returncode == 0, f"run for plots: exit {p.returncode}: {p.stderr[-300:]}")
    run_dir = os.path.join(d, "ended")
    report = open(os.path.join(run_dir, "report.md")).read()
    if shutil.which("gnuplot"):
        for coll in ("allreduce", "p2pring"):
            for kind in ("busbw", "time"):
                for ext in ("png", "gp"):
                    f = os.path.join(run_dir, "plots", f"{coll}_float32_{kind}.{ext}")
                    check(os.path.exists(f) and os.path.getsize(f) > 200, f"run end: missing {f}")
                check(f"(plots/{coll}_float32_{kind}.png)" in report, f"report.md does not link {coll} {kind}")
        check("plots not drawn" not in p.stdout, "a plot note although gnuplot exists")
    else:
        check("note: plots not drawn: gnuplot not found" in p.stdout, "no note saying the plots were not drawn")


# ---------------------------------------------------------------- 11. time-outs
def rank_pid(mark, rank):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            comm = open(f"/proc/{pid}/comm").read().strip()
        except OSError:
            continue
        if comm == "fabricbench" and f"FB_CLI_MARK={mark}".encode() in environ and \
                (f"OMPI_COMM_WORLD_RANK={rank}".encode() in environ or f"PMI_RANK={rank}".encode() in environ):
            return int(pid)
    return None


def case_timeout(d):
    # A healthy batch that needs longer than --timeout passes: the deadline grows with size x operations.
    q = fb(2, TCP + ["-b", "8M", "-e", "8M", "-n", "2", "-w", "0", "-c", "0", "--no-files", "--progress", "0", "--wide"])
    m = re.search(r"^\s+8388608\s+\d+\s+float32\s+allreduce\s+\S+.*?\s+(out)\s+([\d.]+)", q.stdout, re.M)
    per_op = float(m.group(2)) * 1e-6 if m else 0.05
    n = max(4, int(2.5 / max(per_op, 1e-4)))   # a timed batch of about 2.5 s (> --timeout 1)
    p = fb(2, TCP + ["-b", "8M", "-e", "8M", "-n", str(n), "-w", "0", "-c", "1", "--timeout", "1", "--no-files",
                     "--progress", "0", "--wide"], timeout=300)
    m = re.search(r"^\s+8388608\s+\d+\s+float32\s+allreduce\s+\S+.*?\s+out\s+([\d.]+)", p.stdout, re.M)
    batch = float(m.group(1)) * n * 1e-6 if m else 0
    print(f"-n {n}: timed batch {batch:.2f} s with --timeout 1")
    check(p.returncode == 0, f"a healthy {batch:.1f} s batch tripped --timeout 1: {p.stderr[-400:]}")
    check(batch > 1.0, f"the batch took {batch:.2f} s, not more than --timeout (test inconclusive)")
    # A stuck peer: the message names --timeout.
    mark = str(os.getpid())
    e = env({"FB_CLI_MARK": mark})
    cmd = [A.mpirun, "-q", "--oversubscribe", "-np", "2", "-x", "FB_CLI_MARK", A.fabricbench] + TCP + \
          ["-b", "8", "-e", "8", "-n", "400000", "-w", "0", "--timeout", "2", "--no-files", "--progress", "0"]
    print("$", " ".join(cmd), flush=True)
    pr = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = None
    for _ in range(100):
        pid = rank_pid(mark, 1)
        if pid:
            break
        time.sleep(0.1)
    time.sleep(2.0)   # set-up done, the long batch running
    if check(pid is not None, "rank 1 not found"):
        os.kill(pid, signal.SIGSTOP)
    try:
        out, err = pr.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        pr.kill()
        out, err = pr.communicate()
        check(False, "a stopped peer was not caught within 90 s")
    if pid:
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    print(err[-800:])
    check(pr.returncode not in (0, 2), f"stopped peer: exit {pr.returncode}")
    check("--timeout" in err, "the time-out message does not name --timeout")


# ---------------------------------------------------------------- 12. README examples, --baseline
def case_readme(d):
    import glob
    text = "\n".join(open(f).read() for f in [os.path.join(SRC, "README.md")] + sorted(glob.glob(os.path.join(SRC, "doc", "*.md"))))
    blocks = re.findall(r"```(?:sh|bash)?\n(.*?)```", text, re.S)
    n = 0
    for blk in blocks:
        for line in blk.splitlines():
            cmd = line.split(" #")[0].strip()
            m = re.match(r"mpirun -np (\d+) build/benchmarks/fabricbench(.*)$", cmd)
            if m:
                n += 1
                args = shlex.split(m.group(2))
                q = fb(int(m.group(1)), args + ["--benchmark_list_tests"], cwd=SRC)
                check(q.returncode == 0, f"README example '{cmd}': exit {q.returncode}: {q.stderr.strip()[-300:]}")
            m = re.match(r"build/tools/fabricbench-report (.*)$", cmd)
            if m:
                n += 1
                args = [a.replace("/tmp/fb-compare", os.path.join(d, "cmp")) for a in shlex.split(m.group(1))]
                q = run([A.report] + args + ["--no-plots"], cwd=SRC, timeout=120)
                check(q.returncode == 0, f"README example '{cmd}': exit {q.returncode}: {q.stderr.strip()}")
    check(n >= 5, f"only {n} runnable README examples found")
    check("--baseline" in text and "ambiguous" in text, "README does not document --baseline matching")
    a = os.path.join(SRC, "results", "20261129-h200x2-nccl-nvlink")
    b = os.path.join(SRC, "results", "20261129-h200x2-nccl-socket")
    q = run([A.report, a, b, "-o", os.path.join(d, "amb"), "--baseline", "nccl", "--no-plots"])
    check(q.returncode == 2 and "ambiguous" in q.stderr and "20261129-h200x2-nccl-nvlink:nccl/" in q.stderr
          and "20261129-h200x2-nccl-socket:nccl/" in q.stderr, f"ambiguous --baseline: exit {q.returncode}: {q.stderr}")
    check(not os.path.exists(os.path.join(d, "amb")), "a refused --baseline wrote output")
    # the most exact match wins: the full label of one series is not ambiguous
    q = run([A.report, a, b, "-o", os.path.join(d, "ok"), "--baseline", "20261129-h200x2-nccl-socket:nccl/socket NET/Socket/0 x2ch",
             "--no-plots"])
    check(q.returncode == 0, f"run:impl/path baseline: {q.stderr}")


# ---------------------------------------------------------------- 13. docs: model examples, links
def doc_texts():
    import glob
    return [(f, open(f).read()) for f in [os.path.join(SRC, "README.md")] + sorted(glob.glob(os.path.join(SRC, "doc", "*.md")))]


def md_anchor(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    h = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h, flags=re.U)
    return h.replace(" ", "-")


def case_docs(d):
    """issue 37: every fabricbench-model example in README and doc/ that names real inputs runs
    (exit 0, its -o folder written) and every relative link (file and #anchor) resolves."""
    M = A.model
    check(M is not None, "docs needs --model")
    if M is None:
        return
    cmds = []
    for f, text in doc_texts():
        for blk in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
            for line in blk.replace("\\\n", " ").splitlines():
                c = line.strip()
                c = c[2:] if c.startswith("$ ") else c
                c = c.split(" #")[0].strip()
                if re.match(r"(build/tools/)?fabricbench-model ", c):
                    cmds.append((os.path.basename(f), c))
    runnable = [(f, c) for f, c in cmds if not re.search(r"\.\.\.|\bDIR\b|\bLOG\b|<|\[", c)]
    check(len(runnable) >= 5, f"only {len(runnable)} runnable fabricbench-model examples in the docs")
    # Each example's -o folder goes under the test's folder; later examples that read it follow.
    outs = {}
    for _, c in runnable:
        a = shlex.split(c)
        for i, x in enumerate(a[:-1]):
            if x == "-o":
                outs[a[i + 1]] = os.path.join(d, "o%d" % len(outs))
    for k, (f, c) in enumerate(runnable):
        args = []
        for x in shlex.split(c)[1:]:
            for old, new in sorted(outs.items(), key=lambda kv: -len(kv[0])):
                if x == old or x.startswith(old + "/"):
                    x = new + x[len(old):]
                    break
            args.append(x)
        if "-o" not in args and args[0] in ("fit", "validate", "project", "nccl"):
            args += ["-o", os.path.join(d, "default%d" % k)]  # never write into the source tree
        q = run([M] + args, cwd=SRC, timeout=240)
        check(q.returncode == 0, f"{f}: '{c}': exit {q.returncode}: {q.stderr.strip()[-300:]}")
        if "-o" in args:
            o = args[args.index("-o") + 1]
            check(os.path.isdir(o) and os.listdir(o), f"{f}: '{c}': wrote nothing to -o")
    # The projection's time-vs-nodes plots: the x axis spans the node counts drawn, not decades around them.
    import glob
    gps = glob.glob(os.path.join(d, "**", "projected_*_time_vs_nodes.gp"), recursive=True)
    check(gps, "no projected_*_time_vs_nodes.gp written by the docs' project example")
    for g in gps:
        text = open(g).read()
        xs = [float(l.split()[0]) for blk in re.findall(r"<< EOD\n(.*?)EOD", text, re.S) for l in blk.splitlines() if l.strip()]
        m = re.search(r"set xrange \[([\d.e+-]+):([\d.e+-]+)\]", text)
        check(xs and m, f"{g}: no data or no xrange")
        if xs and m:
            lo, hi = float(m.group(1)), float(m.group(2))
            check(min(xs) / 1.5 <= lo <= min(xs) and max(xs) <= hi <= max(xs) * 1.5,
                  f"{os.path.basename(g)}: x axis [{lo}:{hi}] for node counts {min(xs):g}-{max(xs):g}")
        # the suite's palette (no gnuplot default yellow): the first line colour is Okabe-Ito blue
        check("set linetype 1 lc rgb '#0072B2'" in text, f"{os.path.basename(g)}: not drawn with the suite's palette")
    # issue 37: each results/ folder has a short README saying what, when, command, machine; where
    # the folder has a run.json, the README gives its command line as recorded.
    folders = [f for f in sorted(os.listdir(os.path.join(SRC, "results"))) if os.path.isdir(os.path.join(SRC, "results", f))]
    check(len(folders) >= 20, f"only {len(folders)} results/ folders")
    for f in folders:
        rd = os.path.join(SRC, "results", f, "README.md")
        if not os.path.exists(rd):
            check(False, f"results/{f} has no README.md")
            continue
        text = open(rd).read()
        head = text[:2500]  # the four facts open the page; a measurement narrative may follow
        missing = [w for w in ("What", "When", "Command", "Machine") if not re.search(rf"\b{w}\b", head)]
        check(not missing, f"results/{f}/README.md: its opening lacks {missing}")
        rj = os.path.join(SRC, "results", f, "run.json")
        if os.path.exists(rj):
            cmd = json.load(open(rj)).get("command_line", "")
            check(cmd and cmd in text, f"results/{f}/README.md does not give run.json's command line")
    # Links: relative targets exist; #anchors name a heading of the target page.
    headings = {}
    for f, text in doc_texts():
        headings[os.path.realpath(f)] = {md_anchor(h) for h in re.findall(r"^#+ (.*)$", re.sub(r"```.*?```", "", text, flags=re.S), re.M)}
    bad = []
    nlinks = 0
    for f, text in doc_texts():
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            nlinks += 1
            path, _, anchor = target.partition("#")
            full = os.path.realpath(os.path.join(os.path.dirname(f), path)) if path else os.path.realpath(f)
            if not os.path.exists(full):
                bad.append(f"{os.path.relpath(f, SRC)}: ({target}) does not exist")
            elif anchor and full.endswith(".md") and full in headings and anchor not in headings[full]:
                bad.append(f"{os.path.relpath(f, SRC)}: ({target}) names no heading of {os.path.basename(full)}")
    check(nlinks >= 20, f"only {nlinks} relative links found")
    # doc/columns.md is fabricbench-report --columns' output, and names every table.csv column.
    q = run([A.report, "--columns"], timeout=30)
    page = open(os.path.join(SRC, "doc", "columns.md")).read()
    check(q.returncode == 0 and q.stdout == page,
          "doc/columns.md differs from `fabricbench-report --columns` (regenerate it)")
    with open(os.path.join(SRC, "results", "20261129-h200x2-nccl-nvlink", "table.csv")) as f:
        header = f.readline().strip().split(",")
    missing = [c for c in header if f"| `{c}` |" not in page]
    check(len(header) >= 16 and not missing, f"doc/columns.md lacks columns {missing}")
    check(not bad, f"{len(bad)} broken links: " + "; ".join(bad[:20]))


# ---------------------------------------------------------------- issue 33: single-rank rows, statuses
def case_single_rank(d):
    """One rank crosses no link: busbw 0 for every collective, no plateau, no headline line."""
    p = fb(1, ["--transport", "tcp,mpi", "--tcp-if", "lo", "--collective", "allreduce,broadcast,p2pring",
               "--placement", "both", "-b", "1M", "-e", "4M", "-f", "2", "-n", "2", "-w", "1", "--allow-single-rank",
               "--results-dir", d, "--run-id", "one", "--progress", "0"], timeout=240)
    check(p.returncode == 0, f"1-rank run: exit {p.returncode}: {p.stderr[-500:]}")
    rows = rows_of(os.path.join(d, "one"))
    colls = {r["coll"] for r in rows}
    check({"allreduce", "broadcast", "p2pring"} <= colls, f"1-rank run: collectives {colls}")
    bad = [(r["coll"], r["impl"], r["size_bytes"], r["busbw_GBps"]) for r in rows if float(r["busbw_GBps"]) != 0]
    check(rows and not bad, f"1-rank rows with busbw != 0: {bad}")
    check(all(float(r["algbw_GBps"]) > 0 for r in rows), "1-rank rows keep their algbw")
    lines = p.stdout.splitlines()
    start = max((i for i, l in enumerate(lines) if l.startswith("# headline:")), default=None)
    tail = lines[start + 1:] if start is not None else []
    check(not any("plateau busbw" in l or "rising" in l for l in tail), f"1-rank series in the headline: {tail}")
    check(any("measured at 1 rank left out: no link crossed" in l for l in tail), f"headline does not say why: {tail}")
    md = open(os.path.join(d, "one", "report.md")).read()
    check("no link (1 rank)" in md, "report.md does not say 'no link (1 rank)'")


def case_statuses(d):
    """A named backend that declines some rows (MPI has no avg) makes the run partial, exit 4."""
    p = fb(2, ["--transport", "tcp,mpi", "--tcp-if", "lo", "--collective", "allreduce", "--placement", "out",
               "-o", "avg", "-b", "8", "-e", "64", "-f", "8", "-n", "2", "-w", "0", "--results-dir", d,
               "--run-id", "avg", "--progress", "0"])
    check(p.returncode == 4, f"tcp,mpi -o avg: exit {p.returncode}, expected 4 (partial): {p.stdout[-600:]}")
    status = json.load(open(os.path.join(d, "avg", "run.json"))).get("summary", {}).get("status", "")
    check(status.startswith("partial: 2 rows") and "skipped: mpi allreduce float32 avg" in status
          and "mpi was named on the command line but skipped allreduce float32 avg" in status,
          f"status: {status}")
    rows = rows_of(os.path.join(d, "avg"))
    check({r["impl"] for r in rows} == {"tcp"} and len(rows) == 2, f"rows: {[(r['impl'], r['size_bytes']) for r in rows]}")
    # Under --transport auto the same rows are listed as skipped, and the run passes.
    p = fb(2, ["--transport", "auto", "--tcp-if", "lo", "--collective", "allreduce", "--placement", "out",
               "-o", "avg", "-b", "8", "-e", "8", "-n", "2", "-w", "0", "--results-dir", d, "--run-id", "avgauto",
               "--progress", "0"])
    status = json.load(open(os.path.join(d, "avgauto", "run.json"))).get("summary", {}).get("status", "")
    check(p.returncode == 0 and status.startswith("passed: ") and "mpi allreduce float32 avg" in status,
          f"auto -o avg: exit {p.returncode}: {status}")


CASES = {"nccl_flags": case_nccl_flags, "version": case_version, "repeated": case_repeated, "help": case_help,
         "gbench": case_gbench, "never_overwritten": case_never_overwritten, "progress": case_progress,
         "headline": case_headline, "install": case_install, "plots": case_plots, "timeout": case_timeout,
         "readme": case_readme, "console": case_console, "docs": case_docs, "single_rank": case_single_rank,
         "statuses": case_statuses}


def case_model_inputs(d):
    """issue 30 item 5: every single bad value given to fabricbench-model is one line
    'fabricbench-model: error: ...' naming it, exit 2, and no output folder left behind."""
    M = A.model
    check(M is not None, "model_inputs needs --model")
    if M is None:
        return
    prices = os.path.join(SRC, "tools", "prices-example.json")
    with open(prices) as f:
        pj = json.load(f)
    pj["fabrics"]["ib-ndr"]["optic"] = 3
    unk = os.path.join(d, "unknown-key.json")
    with open(unk, "w") as f:
        json.dump(pj, f)
    pj = json.load(open(prices))
    pj["colour"] = "red"
    unk_top = os.path.join(d, "unknown-top.json")
    json.dump(pj, open(unk_top, "w"))
    pj = json.load(open(prices))
    pj["fabrics"]["ib-ndr"]["optics"]["per_cable"] = 0
    zero_optics = os.path.join(d, "zero-optics.json")
    json.dump(pj, open(zero_optics, "w"))
    out = os.path.join(d, "o")
    P = ["project", "--inter", "ib-ndr=spec:ib-ndr", "--nodes", "4", "-o", out]
    NL = os.path.join(SRC, "tests", "data", "public-nccl-tests", "h100-xe9680-qoofyk-2x8.log")
    T = ["--params", "1e9", "--compute-ms", "10"]
    cases = [
        (["project", "--inter", "spec:ib-ndr,lat=-5", "--nodes", "4", "-o", out], "'lat=-5' must be a number > 0"),
        (["project", "--inter", "spec:ib-ndr,lat=0", "--nodes", "4", "-o", out], "'lat=0' must be a number > 0"),
        (["project", "--inter", "spec:ib-ndr,eff=0", "--nodes", "4", "-o", out], "'eff=0' must be a number > 0"),
        (["project", "--inter", "spec:ib-ndr,eff=-0.5", "--nodes", "4", "-o", out], "'eff=-0.5' must be a number > 0"),
        (["project", "--inter", "spec:ib-ndr,eff=1.5", "--nodes", "4", "-o", out], "efficiency 1.5 must be in (0, 1]"),
        (["project", "--inter", "spec:ib-ndr,lat=abc", "--nodes", "4", "-o", out], "'lat=abc' needs a number"),
        (["project", "--inter", "spec:ib-ndr,lat=nan", "--nodes", "4", "-o", out], "'lat=nan' must be a number > 0"),
        (P + ["--nics", "0"], "--nics = 0: must be > 0"),
        (P + ["--nics", "-2"], "--nics = -2: must be > 0"),
        (P + ["--params", "-5", "--compute-ms", "10"], "--params = -5: must be > 0"),
        (P + ["--params", "0", "--compute-ms", "10"], "--params = 0: must be > 0"),
        (P + T + ["--overlap", "2"], "--overlap = 2: must be in [0, 1]"),
        (P + T + ["--overlap", "-0.1"], "--overlap = -0.1: must be in [0, 1]"),
        (P + T[:2] + ["--compute-ms", "-1"], "--compute-ms = -1: must be >= 0"),
        (P + T + ["--tp", "0"], "--tp = 0: must be >= 1"),
        (P + T + ["--bucket", "0"], "--bucket: size '0' must be > 0"),
        (P + T + ["--bucket", "25Q"], "--bucket: invalid size '25Q'"),
        (P + ["--sizes", "64Q"], "--sizes: invalid size '64Q'"),
        (P + ["--sizes", "-1M"], "--sizes: invalid size '-1M'"),
        (["project", "--inter", "spec:ib-ndr", "--nodes", "0", "-o", out], "--nodes = 0"),
        (P + ["--gpus", "2.5", "--intra", "spec:nvlink4-h100"], "'2.5' is not a whole number"),
        (P + ["--prices", unk], "unknown key 'optic'"),
        (P + ["--prices", unk_top], "unknown key 'colour'"),
        (P + ["--prices", zero_optics], "'per_cable' = 0 must be > 0"),
        (["validate", "--inter", "x", "--check", "x", "--nics", "0", "-o", out], "--nics = 0: must be > 0"),
        (["validate", "--inter", "x", "--check", "x", "--max-err", "-1", "-o", out], "--max-err = -1: must be > 0"),
        (["validate", "--inter", "x", "--check", "x", "--median-err", "0", "-o", out], "--median-err = 0: must be > 0"),
        (["validate", "--inter", "x", "--check", "x", "--band", "1M", "-o", out], "expected LO:HI"),
        (["validate", "--inter", "x", "--check", "x", "--band", "64M:1M", "-o", out], "LO > HI"),
        (["project", "--bogus", "-o", out], "bogus"),
        (["nccl", "fit", NL, "--nic-line-gbps=-1", "-o", out], "--nic-line-gbps -1: must be >= 0"),
        (["nccl", "fit", NL, "--nic-line-gbps=nan", "-o", out], "--nic-line-gbps nan: must be >= 0"),
    ]
    for args, needle in cases:
        p = run([M] + args)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        what = " ".join(args)
        check(p.returncode == 2, f"{what}: exit {p.returncode}, expected 2 (stderr: {p.stderr.strip()[:300]})")
        check(len(lines) == 1 and lines[0].startswith("fabricbench-model: error: "),
              f"{what}: expected one 'fabricbench-model: error:' line, got {lines}")
        check(needle.lower() in p.stderr.lower(), f"{what}: message lacks '{needle}': {p.stderr.strip()}")
        check(not os.path.exists(out), f"{what}: left {out} behind")
    # sizes mean what they mean in fabricbench: 64MB = 64M = 64 MiB
    ok = run([M] + P + ["--sizes", "64MB,64M,64KiB"])
    check(ok.returncode == 0, f"64MB: exit {ok.returncode}: {ok.stderr.strip()[:300]}")
    if ok.returncode == 0:
        sizes = {r["size_bytes"] for r in csv.DictReader(open(os.path.join(out, "projected.csv")))}
        check(sizes == {"67108864", "65536"}, f"64MB/64M/64KiB gave sizes {sizes}, expected 67108864 and 65536")
        shutil_rm(out)
    # steps/hour per $1M over the whole cluster when GPUs are priced; the output says what the cost includes
    ok = run([M, "project", "--inter", "ib-ndr=spec:ib-ndr", "--inter", "ib-hdr=spec:ib-hdr", "--nodes", "4",
              "--gpus", "8", "--intra", "spec:nvlink4-h100"] + T + ["--prices", prices, "-o", out])
    check(ok.returncode == 0, f"prices: exit {ok.returncode}: {ok.stderr.strip()[:300]}")
    if ok.returncode == 0:
        rows = {r["fabric"]: r for r in csv.DictReader(open(os.path.join(out, "training.csv")))}
        ndr, hdr = rows["ib-ndr"], rows["ib-hdr"]
        # ib-ndr in the example: 32 NICs x 2500 + 1 switch 35000 + 32 cables x 400 + 64 optics x 700
        #   + 32 GPUs x 30000 + 4 nodes x 60000 = 80000 + 35000 + 12800 + 44800 + 960000 + 240000
        check(abs(float(ndr["cost_total_usd"]) - 1372600) < 0.01, f"ib-ndr cost {ndr['cost_total_usd']} != 1372600")
        check("GPUs" in ndr["cost_includes"] and "optics" in ndr["cost_includes"],
              f"ib-ndr cost_includes: {ndr['cost_includes']}")
        # ib-hdr: 32 x 1500 + 20000 + 32 x 200 + 64 x 300 = 93600, fabric only
        check(abs(float(hdr["cost_total_usd"]) - 93600) < 0.01, f"ib-hdr cost {hdr['cost_total_usd']} != 93600")
        check("fabric only" in hdr["cost_includes"], f"ib-hdr cost_includes: {hdr['cost_includes']}")
        md = open(os.path.join(out, "projection.md")).read()
        check("cost includes" in md and "whole cluster" in md, "projection.md does not say what the cost includes")


def shutil_rm(p):
    import shutil
    shutil.rmtree(p, ignore_errors=True)


CASES["model_inputs"] = case_model_inputs


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--fabricbench", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--model", default=None)
    A = ap.parse_args()
    t = time.time()
    with tempfile.TemporaryDirectory(prefix="fb-cli-") as d:
        CASES[A.case](d)
    print(f"{A.case}: {'FAILED (' + str(len(FAILS)) + ')' if FAILS else 'passed'} in {time.time() - t:.1f} s")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()

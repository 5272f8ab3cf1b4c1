"""CLI cases for the flags users bring from other tools: nccl-tests' flags, --version,
repeated scalar flags, --help and its examples, Google Benchmark's flags."""
import csv
import json
import os
import re
import shlex

from cli_common import fb1, fb, check, bad_input, rows_of, TCP


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

#!/usr/bin/env python3
"""End-to-end tests of the fabricbench binary under mpirun on localhost.

Each case launches real ranks, then reads what the run wrote (table.csv, run.json) and checks it
element by element through the wrong-count column the ranks computed. Exit 0 = pass, 1 = fail.
"""
import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import ranks

COLUMNS_MIN = ["size_bytes", "count", "type", "coll", "impl", "path", "placement", "nranks", "time_us",
               "algbw_GBps", "busbw_GBps", "wrong"]
DTYPES = ["float32", "float64", "int32", "float16", "bfloat16"]
COLLS = ["allreduce", "allgather", "reducescatter", "p2pring", "alltoall", "broadcast"]
OUT_OF_PLACE_ONLY = {"p2pring", "alltoall"}


def env():
    e = dict(os.environ)
    e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             OMPI_MCA_rmaps_base_oversubscribe="1")
    return e


def mpirun(a, np_, fb_args, **kw):
    cmd = [a.mpirun, "-q", "--oversubscribe", "-np", str(np_), a.fabricbench] + fb_args
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env(), capture_output=True, text=True, **kw)


def read_rows(folder):
    with open(os.path.join(folder, "table.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for c in COLUMNS_MIN:
            if c not in r or r[c] is None or r[c] == "":
                raise AssertionError(f"row misses column {c}: {r}")
        float(r["time_us"]), float(r["busbw_GBps"]), int(r["wrong"])
    return rows


def fail(msg):
    print("FAIL:", msg, flush=True)
    sys.exit(1)


def case_correct(a):
    n = a.np
    counts = sorted({0, 1, max(n - 1, 0), 1000003})
    # At 7 ranks on 2 cores one dtype per element size (2, 4, 8 bytes): the five took 133 s of CI,
    # and every host algorithm is also forced and checked at np 1..7 in host_algorithms_tcp.
    dtypes = DTYPES if n <= 4 else ["float32", "float64", "float16"]
    with tempfile.TemporaryDirectory() as d:
        p = mpirun(a, n, ["--transport", "tcp,mpi", "--collective", "all", "--dtype", ",".join(dtypes),
                          "--counts", ",".join(map(str, counts)), "--placement", "both",
                          "-n", "1", "-w", "1", "-c", "1", "--results-dir", d, "--run-id", "t", "--tcp-if", "lo"]
                   + (["--allow-single-rank"] if n == 1 else []),
                   timeout=550)
        print(p.stdout[-3000:], p.stderr[-3000:])
        if p.returncode != 0:
            fail(f"exit code {p.returncode}")
        rows = read_rows(os.path.join(d, "t"))
        # p2pring and alltoall run out-of-place only (their descriptors say why).
        placements = sum(1 if c in OUT_OF_PLACE_ONLY else 2 for c in COLLS)
        expected = 2 * placements * len(dtypes) * len(counts)
        if len(rows) != expected:
            fail(f"{len(rows)} rows, expected {expected}")
        seen = set()
        for r in rows:
            if int(r["wrong"]) != 0:
                fail(f"wrong elements: {r}")
            if int(r["nranks"]) != n:
                fail(f"nranks {r['nranks']} != {n}")
            if int(r["count"]) not in counts:
                fail(f"unexpected count {r['count']}")
            seen.add((r["impl"], r["coll"], r["type"], r["placement"], int(r["count"])))
        if len(seen) != expected:
            fail(f"only {len(seen)} distinct points of {expected}")
        meta = json.load(open(os.path.join(d, "t", "run.json")))
        if not meta.get("summary", {}).get("ok"):
            fail(f"run.json summary not ok: {meta.get('summary')}")
    print(f"PASS: np={n}: {expected} rows (tcp+mpi x {len(COLLS)} collectives x {len(dtypes)} dtypes x in/out-of-place "
          f"({', '.join(sorted(OUT_OF_PLACE_ONLY))} out only) x counts {counts}), wrong=0")


def case_nodes(a):
    """Simulated multi-node placements (FB_HOST_NODES) on one host: the node-aware choice and the
    hierarchical schedules forced, even (3x2, 2x3), uneven (1 + 2, 2 + 3) and interleaved, element by
    element against the same data as the mpi rows."""
    placements = [  # (np, nodes, FB_HOST_ALGO or "" for the model's choice)
        (6, "a,a,b,b,c,c", ""), (6, "a,a,b,b,c,c", "hier"), (6, "a,a,a,b,b,b", "allreduce=hier-rd,allgather=hier"),
        (3, "a,b,b", "hier"), (3, "a,b,b", ""), (5, "a,a,b,b,b", "allreduce=hier-rabenseifner,reducescatter=hier"),
        (4, "a,b,a,b", "hier"), (4, "a,a,b,b", "")]
    colls = ["allreduce", "allgather", "reducescatter", "p2pring"]
    dtypes = ["float32", "float16"]
    for n, nodes, algo in placements:
        counts = [1, n + 1, 300007]  # 300007 float32: beyond one 1 MiB piece
        with tempfile.TemporaryDirectory() as d:
            extra = ["-x", f"FB_HOST_NODES={nodes}"] + (["-x", f"FB_HOST_ALGO={algo}"] if algo else [])
            cmd = [a.mpirun, "-q", "--oversubscribe", "-np", str(n)] + extra + [
                a.fabricbench, "--transport", "tcp,mpi", "--collective", ",".join(colls), "--dtype", ",".join(dtypes),
                "--counts", ",".join(map(str, counts)), "--placement", "both", "-n", "1", "-w", "1", "-c", "1",
                "--results-dir", d, "--run-id", "t", "--tcp-if", "lo"]
            print("$", " ".join(cmd), flush=True)
            p = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=550)
            if p.returncode != 0:
                print(p.stdout[-3000:], p.stderr[-3000:])
                fail(f"np {n} nodes {nodes} FB_HOST_ALGO={algo!r}: exit code {p.returncode}")
            rows = read_rows(os.path.join(d, "t"))
            expected = 2 * sum(1 if c in OUT_OF_PLACE_ONLY else 2 for c in colls) * len(dtypes) * len(counts)
            if len(rows) != expected:
                fail(f"np {n} nodes {nodes}: {len(rows)} rows, expected {expected}")
            algos = {}
            for r in rows:
                if int(r["wrong"]) != 0:
                    fail(f"np {n} nodes {nodes} FB_HOST_ALGO={algo!r}: wrong elements: {r}")
                if r["impl"] == "tcp":
                    named = [x.split("=", 1)[1] for x in r["extra"].split(";") if x.startswith("algorithm=")]
                    if len(named) != 1:
                        fail(f"tcp row names no algorithm: {r}")
                    algos.setdefault(r["coll"], set()).add(named[0])
            forced = dict(x.split("=") for x in algo.split(",")) if "=" in algo else (
                {c: algo for c in ("allreduce", "allgather", "reducescatter")} if algo else {})
            for coll, name in forced.items():
                want = {"hier": "hierarchical (ring)", "hier-rd": "hierarchical (recursive-doubling)",
                        "hier-rabenseifner": "hierarchical (rabenseifner)"}[name]
                # plain "hier": the model picks the leaders' inner algorithm
                ok = all(x.startswith("hierarchical (") for x in algos.get(coll, {"none"})) if name == "hier" else (
                    algos.get(coll) == {want})
                if not ok:
                    fail(f"np {n} nodes {nodes}: {coll} ran {algos.get(coll)}, forced {name}")
            print(f"PASS: np={n} nodes={nodes} FB_HOST_ALGO={algo!r}: {len(rows)} rows wrong=0, tcp chose "
                  + "; ".join(f"{c}: {sorted(v)}" for c, v in algos.items()), flush=True)


def case_corrupt(a):
    with tempfile.TemporaryDirectory() as d:
        p = mpirun(a, 3, ["--transport", "tcp,mpi", "--collective", "allreduce,allgather", "--counts", "1000",
                          "-n", "1", "-w", "0", "--placement", "out", "--fb-test-corrupt", "1:7",
                          "--results-dir", d, "--run-id", "t", "--tcp-if", "lo"], timeout=120)
        print(p.stdout[-2000:], p.stderr[-2000:])
        if p.returncode == 0:
            fail("a corrupted element did not fail the run")
        rows = read_rows(os.path.join(d, "t"))
        if len(rows) != 4:
            fail(f"{len(rows)} rows, expected 4")
        for r in rows:
            if int(r["wrong"]) != 1:
                fail(f"corrupted row counts {r['wrong']} wrong elements, expected exactly 1: {r}")
        meta = json.load(open(os.path.join(d, "t", "run.json")))
        if meta["summary"]["ok"]:
            fail("run.json says ok")
    print("PASS: one corrupted element per row counted as wrong = 1 in every row; exit code", p.returncode)


def case_badinput(a):
    cases = [
        (["-b", "1M", "-e", "1K"], "larger than max"),
        (["--collective", "allscatter"], "unknown collective 'allscatter'"),
        (["--transport", "carrier-pigeon"], "unknown transport 'carrier-pigeon'"),
        (["--dtype", "float8"], "unknown dtype 'float8'"),
        (["-o", "xor"], "unknown -o/--op 'xor'"),
        (["--collective", "broadcast", "--root", "2"], "--root 2 is not a rank of this job (2 ranks)"),
        (["-b", "12Q"], "invalid size '12Q'"),
        (["--benchmark_enable_random_interleaving=true"], "random_interleaving is refused"),
    ]
    with tempfile.TemporaryDirectory() as d:
        for args, needle in cases:
            p = mpirun(a, 2, args + ["--results-dir", d], timeout=60)
            lines = [l for l in p.stderr.splitlines() if l.strip()]
            ours = [l for l in lines if l.startswith("fabricbench: error:")]
            if p.returncode != 2:
                fail(f"{args}: exit code {p.returncode}, expected 2; stderr: {p.stderr}")
            if len(ours) != 1 or needle not in ours[0]:
                fail(f"{args}: expected one error line containing {needle!r}, got {lines}")
            if p.stdout.strip():
                fail(f"{args}: printed to stdout: {p.stdout!r}")
            print("  ok:", ours[0])
        # Ranks started with different flags (MPMD launch).
        cmd = [a.mpirun, "-q", "-np", "1", a.fabricbench, "-n", "5", "--results-dir", d, ":",
               "-np", "1", a.fabricbench, "-n", "6", "--results-dir", d]
        p = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=60)
        ours = [l for l in p.stderr.splitlines() if l.startswith("fabricbench: error:")]
        if p.returncode != 2 or len(ours) != 1 or "different flags" not in ours[0]:
            fail(f"mismatched flags: rc={p.returncode} stderr={p.stderr}")
        print("  ok:", ours[0])
        if os.listdir(d):
            fail(f"bad input left files behind: {os.listdir(d)}")
    print("PASS: every bad input gave exit 2, one error line, no result folder")


def rank_pids(mark):
    return ranks.rank_pids("FB_TEST_MARK", mark)


def case_kill(a):
    mark = uuid.uuid4().hex
    with tempfile.TemporaryDirectory() as d:
        # No -q here: when the runtime ends the job first, mpirun's own notice names the lost rank.
        cmd = [a.mpirun, "--oversubscribe", "-np", "4", "-x", f"FB_TEST_MARK={mark}", a.fabricbench,
               "--transport", "tcp", "--collective", "allreduce", "-b", "1K", "-e", "512M", "-f", "2", "-n", "20",
               "-w", "1", "--placement", "out", "--results-dir", d, "--run-id", "t", "--tcp-if", "lo"]
        print("$", " ".join(cmd), flush=True)
        proc = subprocess.Popen(cmd, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        table = os.path.join(d, "t", "table.csv")
        deadline = time.time() + 120
        while time.time() < deadline:  # wait until some rows are done
            if os.path.exists(table) and sum(1 for _ in open(table)) >= 6:
                break
            time.sleep(0.2)
        else:
            proc.kill()
            fail("no rows were written within 120 s")
        pids = rank_pids(mark)
        if 2 not in pids:
            proc.kill()
            fail(f"could not find rank 2 among {pids}")
        t0 = time.time()
        os.kill(pids[2], signal.SIGKILL)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            fail("the job did not exit within 30 s of the kill")
        took = time.time() - t0
        print(out[-1500:], err[-3000:])
        if proc.returncode == 0:
            fail("job exited 0 after a rank was killed")
        text = out + err
        # Open MPI's mpirun and fabricbench name the rank; MPICH's hydra names the process id of the
        # first process that ended badly, which can be a survivor that saw the loss first, and it
        # SIGKILLs the rest at once: then nothing names rank 2, and the case is skipped (not passed).
        named = "rank 2" in text.replace("\n", " ") or f"PID {pids[2]} " in text
        hydra = os.path.basename(a.mpirun) == "mpirun-compat"
        rows = read_rows(os.path.join(d, "t"))
        if len(rows) < 5:
            fail(f"only {len(rows)} rows survived")
        for r in rows:
            if int(r["wrong"]) != 0:
                fail(f"row before the kill has wrong elements: {r}")
    if not named and hydra:
        print(f"SKIP: hydra named another process than the killed rank 2 (pid {pids[2]}); the other checks passed")
        sys.exit(77)
    if not named:
        fail(f"no message names the lost peer (rank 2, pid {pids[2]})")
    print(f"PASS: killed rank 2; job exited {proc.returncode} after {took:.1f} s naming rank 2 (or its pid); "
          f"{len(rows)} finished rows intact")


def case_inject_gpu(a):
    """On a GPU host: a failure injected on rank 1 in cuda prepare or in NCCL's communicator set-up
    gives both ranks the same verdict and a clean end (exit 1, no MPI_Abort). Exit 77 without GPUs."""
    lst = mpirun(a, 2, ["--list"], timeout=120)
    usable = {l.split()[0] for l in lst.stdout.splitlines() if len(l.split()) >= 3 and l.split()[2] == "yes"}
    if not {"cuda", "nccl"} <= usable:
        print("SKIP: needs the cuda and nccl backends usable on 2 ranks (--list: usable " + ", ".join(sorted(usable)) + ")")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as d:
        for point, transport in (("cuda-prepare", "cuda"), ("nccl-init", "nccl")):
            cmd = [a.mpirun, "-q", "-np", "2", "-x", f"FB_TEST_FAIL={point}:1", "-x", "NCCL_NVLS_ENABLE=0",
                   a.fabricbench, "--transport", f"mpi,{transport}", "--collective", "allreduce", "--counts", "1000",
                   "-n", "1", "-w", "0", "--placement", "out", "--results-dir", d, "--run-id", point]
            print("$", " ".join(cmd), flush=True)
            p = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=240)
            print(p.stdout[-1500:], p.stderr[-2500:])
            v = verdicts(p.stderr)
            if p.returncode != 1 or "MPI_ABORT" in p.stderr:
                fail(f"{point}: exit {p.returncode} (expected 1, no abort)")
            if sorted(v) != [0, 1] or v[0] != v[1] or "rank 1" not in v[0][0] or point not in v[0][0]:
                fail(f"{point}: ranks gave different verdicts: {v}")
            rows = read_rows(os.path.join(d, point))
            if [r["impl"] for r in rows] != ["mpi"]:
                fail(f"{point}: the mpi row before the failure was not kept")
    print("PASS: injected cuda-prepare and nccl-init failures on rank 1: both ranks gave the same verdict, clean exit 1")


def case_ops(a):
    """Reduction operators per dtype, and broadcast from a root other than 0, on tcp and mpi."""
    n = a.np
    root = n - 1
    counts = [1, 100003]
    ops = ["sum", "prod", "min", "max", "avg"]
    with tempfile.TemporaryDirectory() as d:
        p = mpirun(a, n, ["--transport", "tcp,mpi", "--collective", "allreduce,reducescatter,broadcast", "-o", "all",
                          "--root", str(root), "--dtype", ",".join(DTYPES), "--counts", ",".join(map(str, counts)),
                          "--placement", "both", "-n", "1", "-w", "1", "-c", "1", "--results-dir", d, "--run-id", "t",
                          "--tcp-if", "lo"], timeout=550)
        print(p.stdout[-2000:], p.stderr[-2000:])
        rows = read_rows(os.path.join(d, "t"))
        seen = {}
        for r in rows:
            if int(r["wrong"]) != 0:
                fail(f"wrong elements: {r}")
            seen.setdefault((r["impl"], r["coll"]), set()).add((r["type"], r["placement"], int(r["count"])))
        full = {(t, pl, c) for t in DTYPES for pl in ("out", "in") for c in counts}
        for impl in ("tcp", "mpi"):
            for coll in ("allreduce", "reducescatter"):
                for op in ops:
                    name = coll if op == "sum" else f"{coll}({op})"
                    if impl == "mpi" and op == "avg":
                        if (impl, name) in seen:
                            fail("mpi ran avg, which MPI does not have")
                        continue
                    if seen.get((impl, name)) != full:
                        fail(f"{impl} {name}: rows {sorted(seen.get((impl, name), []))}")
            if seen.get((impl, f"broadcast(root={root})")) != full:
                fail(f"{impl} broadcast(root={root}) rows missing: {seen.keys()}")
        meta = json.load(open(os.path.join(d, "t", "run.json")))
        notes = " ".join(meta.get("summary", {}).get("notes", []) + [p.stdout])
        if "MPI has no average operator" not in notes:
            fail("the declined mpi avg rows are not explained")
        if p.returncode not in (0, 4):
            fail(f"exit code {p.returncode}")
    print(f"PASS: np={n}: {len(rows)} rows: tcp sum/prod/min/max/avg and mpi sum/prod/min/max (avg declined with the "
          f"reason) x allreduce/reducescatter x 5 dtypes x in/out x counts {counts}, broadcast from root {root}; wrong=0")


def verdicts(stderr):
    """Each rank's 'verdict:' line (printed when FB_TEST_FAIL is set), by rank."""
    # mpirun may interleave the ranks' lines: find every "[host:R] verdict: TEXT" wherever it starts.
    import re
    out = {}
    for m in re.finditer(r"\[[^\[\]\s]*:(\d+)\] verdict: (.*?\(FB_TEST_FAIL\)[^\[\n]*|[^\[\n]*)", stderr):
        out.setdefault(int(m.group(1)), []).append(m.group(2).strip())
    return out


def case_inject(a):
    """A failure injected on one rank (FB_TEST_FAIL) gives every rank the same verdict."""
    n = 3
    with tempfile.TemporaryDirectory() as d:
        common = ["--collective", "allreduce,allgather", "--counts", "100", "-n", "1", "-w", "0",
                  "--placement", "out", "--results-dir", d, "--tcp-if", "lo"]
        # 1. Unavailable on rank 1 when tcp opens: every rank skips tcp, mpi still runs, exit 4 (partial).
        cmd = [a.mpirun, "-q", "--oversubscribe", "-np", str(n), "-x", "FB_TEST_FAIL=tcp-open:1:unavailable",
               a.fabricbench, "--transport", "tcp,mpi", "--run-id", "u"] + common
        print("$", " ".join(cmd), flush=True)
        p = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=120)
        print(p.stdout[-2000:], p.stderr[-2000:])
        if p.returncode != 4:
            fail(f"unavailable on one rank: exit {p.returncode}, expected 4 (partial: tcp skipped, mpi ran)")
        v = verdicts(p.stderr)
        if sorted(v) != list(range(n)) or len({tuple(x) for x in v.values()}) != 1:
            fail(f"ranks gave different verdicts: {v}")
        if "skipped tcp" not in v[0][0] or "rank 1" not in v[0][0]:
            fail(f"verdict does not say tcp was skipped because of rank 1: {v[0]}")
        rows = read_rows(os.path.join(d, "u"))
        if {r["impl"] for r in rows} != {"mpi"} or len(rows) != 2:
            fail(f"expected the 2 mpi rows only, got {[(r['impl'], r['coll']) for r in rows]}")
        # 2. An error on rank 2 when tcp opens: every rank ends the run cleanly (exit 1, no abort).
        cmd = [a.mpirun, "-q", "--oversubscribe", "-np", str(n), "-x", "FB_TEST_FAIL=tcp-open:2",
               a.fabricbench, "--transport", "mpi,tcp", "--run-id", "e"] + common
        print("$", " ".join(cmd), flush=True)
        p = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=120)
        print(p.stdout[-2000:], p.stderr[-2000:])
        if p.returncode == 0:
            fail("an error on one rank did not fail the run")
        if "MPI_ABORT" in p.stderr or "MPI_Abort" in p.stderr:
            fail("the job was aborted although every rank agreed on the verdict")
        v = verdicts(p.stderr)
        if sorted(v) != list(range(n)) or len({tuple(x) for x in v.values()}) != 1:
            fail(f"ranks gave different verdicts: {v}")
        if not v[0][0].startswith("failed: tcp: rank 2:"):
            fail(f"verdict does not name rank 2's failure: {v[0]}")
        meta = json.load(open(os.path.join(d, "e", "run.json")))
        if meta["summary"]["ok"] or "rank 2" not in meta["summary"]["status"]:
            fail(f"run.json summary: {meta['summary']}")
        rows = read_rows(os.path.join(d, "e"))
        if {r["impl"] for r in rows} != {"mpi"} or len(rows) != 2:
            fail(f"the mpi rows before the failure were not kept: {rows}")
    print(f"PASS: injected unavailable/error on one of {n} ranks: every rank printed the same verdict; "
          "skip -> other backend ran, exit 4 (partial); error -> clean end on every rank, exit 1, rows kept")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["correct", "nodes", "corrupt", "badinput", "kill", "inject", "ops", "inject_gpu"])
    ap.add_argument("--fabricbench", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--np", type=int, default=2)
    a = ap.parse_args()
    globals()["case_" + a.case](a)


if __name__ == "__main__":
    main()

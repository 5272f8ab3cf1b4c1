#!/usr/bin/env python3
"""Bad-input suite: every case must end with exactly one line `fabricbench: error: ...` on stderr
(nothing else: no MPI_ABORT banner, no stack of messages), nothing on stdout, exit code 2, and no
result folder (nothing created under the results folder given, nor the folder itself).

Cases run as a single process (singleton MPI), under `mpirun -np 2`, and as MPMD launches whose
ranks get different flags (`mpirun -np 1 fabricbench A : -np 1 fabricbench B`). Two at a time.
Exit 0 = every case passed; 1 = the failures are listed.
"""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time

# (args, text the error line must contain (or a tuple of texts)[, extra environment])
SINGLE = [
    # sizes
    (["-b", "12Q"], "invalid size '12Q'"),
    (["-b", ""], "invalid size ''"),
    (["-e", "1X"], "invalid size '1X'"),
    (["-b", "-5"], "invalid size"),
    (["-b", "1M", "-e", "1K"], "larger than max"),
    (["-b", "99999999999999999999999"], "too large"),
    (["-e", "1T"], "node's memory"),
    (["-e", "64G", "-b", "64G"], "node's memory"),
    (["-b", "3", "-e", "3"], "less than one float32 element"),
    (["-b", "0", "-e", "0"], "less than one float32 element"),
    (["-b", "4", "-e", "7", "--dtype", "float64"], "less than one float64 element"),
    (["-f", "1"], "step factor must be > 1"),
    (["-f", "0.5"], "step factor must be > 1"),
    (["-f", "abc"], "stepfactor"),
    (["-f", "nan"], "step factor"),
    (["-i", "abc"], "invalid size 'abc'"),
    (["-i", "1", "-e", "1M"], "--force"),
    (["-i", "8", "-e", "64K"], "--force"),
    (["-f", "1.0001", "-e", "64M"], "--force"),
    # counts
    (["--counts", "abc"], "'abc' is not an element count"),
    (["--counts", "-1"], "not an element count"),
    (["--counts", "1.5"], "not an element count"),
    (["--counts", "1e9"], "not an element count"),
    (["--counts", ""], "empty element"),
    (["--counts", "1,,2"], "empty element"),
    (["--counts", ",1"], "empty element"),
    (["--counts=5,"], "empty element"),
    (["--counts", "4611686018427387904"], "overflow"),
    (["--counts", "18446744073709551615"], "overflow"),
    (["--counts", "99999999999999999999999"], "not an element count"),
    (["--counts", "300000000000"], "node's memory"),
    # iteration counts and time-out
    (["-n", "0"], "--iters must be >= 1"),
    (["-n", "-1"], "--iters must be >= 1"),
    (["-n", "abc"], "iters"),
    (["-n", "1.5"], "iters"),
    (["-w", "-1"], "--warmup must be >= 0"),
    (["-w", "x"], "warmup"),
    (["-c", "-1"], "--check must be >= 0"),
    (["-c", "x"], "check"),
    (["--timeout", "0"], "--timeout must be >= 1"),
    (["--timeout", "-3"], "--timeout must be >= 1"),
    (["--timeout", "abc"], "timeout"),
    # list flags
    (["--collective", ""], "empty element"),
    (["--collective", ","], "empty element"),
    (["--collective", ",", "-e", "64"], "empty element"),
    (["--collective", "allreduce,,allgather"], "empty element"),
    (["--collective", ",allreduce"], "empty element"),
    (["--collective", "allreduce,"], "empty element"),
    (["--collective", "allscatter"], "unknown collective 'allscatter'"),
    (["--collective", "allreduce,bogus"], "unknown collective 'bogus'"),
    (["--transport", ""], "empty element"),
    (["--transport", "carrier-pigeon"], "unknown transport 'carrier-pigeon'"),
    (["--transport", "tcp,,mpi"], "empty element"),
    (["--transport", "tcp,bogus"], "unknown transport 'bogus'"),
    (["--dtype", ""], "empty element"),
    (["--dtype", "float8"], "unknown dtype 'float8'"),
    (["--dtype", "float32,"], "empty element"),
    (["--dtype", "int64"], "unknown dtype 'int64'"),
    (["--placement", "sideways"], "unknown --placement 'sideways'"),
    (["--placement", ""], "unknown --placement ''"),
    (["--path", "warp"], "unknown --path 'warp'"),
    (["--path", ""], "unknown --path ''"),
    # backend settings
    (["--gid-index", "-5"], "--gid-index must be >= 0"),
    (["--ib-port", "-1"], "--ib-port must be >= 1"),
    (["--transport", "verbs", "--ib-dev", "nosuchdev0"], "nosuchdev0"),
    (["--transport", "tcp", "--tcp-if", "nosuchif0"], "unknown interface 'nosuchif0'"),
    (["--tcp-if", "nosuchif0"], "unknown interface 'nosuchif0'"),
    (["--transport", "tcp", "--tcp-if", "203.0.113.77"], "not assigned to any local interface"),
    (["--transport", "tcp"], "FB_TCP_SOCKBUF='junk'", {"FB_TCP_SOCKBUF": "junk"}),
    (["--transport", "tcp"], "FB_HOST_PIECE='junk'", {"FB_HOST_PIECE": "junk"}),
    (["--transport", "tcp"], "FB_HOST_PIECE='1G'", {"FB_HOST_PIECE": "1G"}),
    (["--transport", "tcp"], "FB_TCP_SOCKBUF='12Q'", {"FB_TCP_SOCKBUF": "12Q"}),
    (["--transport", "tcp"], "FB_TCP_SOCKBUF='-1'", {"FB_TCP_SOCKBUF": "-1"}),
    (["--transport", "tcp"], "FB_TCP_CHUNK='junk'", {"FB_TCP_CHUNK": "junk"}),
    (["--transport", "tcp"], "FB_TCP_CHUNK='1K'", {"FB_TCP_CHUNK": "1K"}),
    (["--transport", "tcp"], "FB_TCP_CC='nosuchcc'", {"FB_TCP_CC": "nosuchcc"}),
    # run id and result folder ({D} = a fresh folder of this case)
    (["--run-id", "a\nb"], "control character"),
    (["--run-id", "a\tb"], "control character"),
    (["--run-id", "../x"], "plain folder name"),
    (["--run-id", "a/b"], "plain folder name"),
    (["--run-id", "."], "plain folder name"),
    (["--run-id", ".."], "plain folder name"),
    (["--run-id", "x" * 300], "at most 200"),
    (["--results-dir", "{D}/afile"], "is not a folder"),
    (["--results-dir", "{D}/afile/sub/deeper"], "is not a folder"),
    (["--results-dir", "{D}/" + "/".join(["d" * 200] * 25)], "too long"),
    (["--results-dir", "{D}/" + "n" * 300], "folder name of 300 characters"),
    (["--results-dir", ""], "--results-dir is empty"),
    (["--results-dir", "{D}/a\nb"], "control character"),
    (["--results-dir", "{D}", "--run-id", "taken"], "already exists"),
    # flags that do not exist, or lack their value
    (["--bogus"], "--bogus"),
    (["-z"], "-z"),
    (["--iters"], "iters"),
    (["-n"], "--iters"),
    (["stray"], "stray"),
    (["--collective"], "collective"),
    (["--fb-test-corrupt", "x"], "RANK:INDEX"),
    # Google Benchmark flags
    (["--benchmark_filter=["], "not a valid regular expression"),
    (["--benchmark_filter=-("], "not a valid regular expression"),
    (["--benchmark_filter=a{2,1}"], "not a valid regular expression"),
    (["--benchmark_enable_random_interleaving=true"], "random_interleaving is refused"),
    (["--benchmark_enable_random_interleaving"], "random_interleaving is refused"),
    (["--benchmark_min_time=abc"], "--benchmark_min_time is not supported"),
    (["--benchmark_min_time=0.5"], "use -n/--iters"),
    (["--benchmark_bogus=1"], "unknown Google Benchmark flag --benchmark_bogus"),
    (["--benchmark_out={D}/missing/out.json"], "does not exist or is not writable"),
    (["--benchmark_out={D}/afile/out.json"], "does not exist or is not writable"),
    (["--benchmark_out={D}"], "is a folder"),
    (["--benchmark_repetitions=x"], "expected a count >= 1"),
    (["--benchmark_repetitions=0"], "expected a count >= 1"),
    (["--benchmark_out_format=xml"], "choose console, json or csv"),
    (["--benchmark_format=yaml"], "choose console, json or csv"),
]

# Under mpirun -np 2: the same verdict reached by both ranks, one line.
NP2 = [
    (["-b", "12Q"], "invalid size '12Q'"),
    (["-b", "1M", "-e", "1K"], "larger than max"),
    (["-b", "3", "-e", "3"], "less than one float32 element"),
    (["-e", "1T"], "node's memory"),
    (["-i", "1", "-e", "1M"], "--force"),
    (["--counts", "4611686018427387904"], "overflow"),
    (["--counts", "1,,2"], "empty element"),
    (["--collective", ""], "empty element"),
    (["--collective", ",", "-e", "64"], "empty element"),
    (["--collective", "allscatter"], "unknown collective 'allscatter'"),
    (["--transport", "carrier-pigeon"], "unknown transport"),
    (["--dtype", "float8"], "unknown dtype"),
    (["-n", "0"], "--iters must be >= 1"),
    (["--timeout", "0"], "--timeout must be >= 1"),
    (["--transport", "tcp", "--tcp-if", "nosuchif0"], "unknown interface 'nosuchif0'"),
    (["--transport", "tcp"], "FB_TCP_SOCKBUF='junk'", {"FB_TCP_SOCKBUF": "junk"}),
    (["--run-id", "a\nb"], "control character"),
    (["--run-id", "x" * 300], "at most 200"),
    (["--results-dir", "{D}/afile"], "is not a folder"),
    (["--results-dir", "{D}/afile/sub"], "is not a folder"),
    (["--results-dir", "{D}/" + "/".join(["d" * 200] * 25)], "too long"),
    (["--results-dir", "{D}", "--run-id", "taken"], "already exists"),
    (["--benchmark_filter=["], "not a valid regular expression"),
    (["--benchmark_enable_random_interleaving=true"], "random_interleaving is refused"),
    (["--benchmark_min_time=abc"], "--benchmark_min_time is not supported"),
    (["--benchmark_bogus=1"], "unknown Google Benchmark flag --benchmark_bogus"),
    (["--benchmark_out={D}/missing/out.json"], "does not exist or is not writable"),
    (["--bogus"], "--bogus"),
]

# MPMD: rank 0 gets A, rank 1 gets B (same results folder).
MPMD = [
    (["-n", "5"], ["-n", "6"], "different flags"),
    (["--list"], [], "different flags"),
    ([], ["--list"], "different flags"),
    (["--help"], [], "different flags"),
    ([], ["--help"], "different flags"),
    (["--no-files"], [], "different flags"),
    (["--transport", "tcp"], ["--transport", "mpi"], "different flags"),
    (["--tcp-if", "lo"], [], "different flags"),
    (["--benchmark_filter=allreduce"], [], "different flags"),
    (["--force"], [], "different flags"),
    (["--results-dir", "{D}/one"], ["--results-dir", "{D}/two"], "different flags"),
    ([], ["-b", "12Q"], ("invalid size '12Q'", "(rank 1)")),
    ([], ["--transport", "carrier-pigeon"], "(rank 1)"),
    (["--dtype", "float8"], [], "(rank 0)"),
]


def env_for(extra):
    e = dict(os.environ)
    e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    e.update(extra or {})
    return e


def prepare(root):
    """A fresh folder for one case: a file 'afile' and an existing run folder 'taken'."""
    d = tempfile.mkdtemp(dir=root)
    open(os.path.join(d, "afile"), "w").close()
    os.mkdir(os.path.join(d, "taken"))
    return d


def subst(args, d):
    return [a.replace("{D}", d) for a in args]


def run_case(a, kind, args_a, args_b, needle, extra_env):
    d = prepare(a.root)
    before = sorted(os.listdir(d))
    fa = subst(args_a, d)
    # Every case gets a results folder inside d unless it names its own.
    # (first, so that a case ending in a flag without its value stays last)
    if not any(x == "--results-dir" for x in fa):
        fa = ["--results-dir", os.path.join(d, "results")] + fa
    if kind == "single":
        cmd = [a.fabricbench] + fa
    elif kind == "np2":
        cmd = [a.mpirun, "-q", "--oversubscribe", "-np", "2", a.fabricbench] + fa
    else:
        fb = subst(args_b, d)
        if not any(x == "--results-dir" for x in fb):
            fb = ["--results-dir", os.path.join(d, "results")] + fb
        cmd = [a.mpirun, "-q", "-np", "1", a.fabricbench] + fa + [":", "-np", "1", a.fabricbench] + fb
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env_for(extra_env), capture_output=True, text=True, timeout=90)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "hang (90 s)", "", str(e.stderr)
    took = time.time() - t0
    problems = []
    lines = [l for l in err.splitlines() if l.strip()]
    if rc != 2:
        problems.append(f"exit code {rc}, expected 2")
    if len(lines) != 1:
        problems.append(f"{len(lines)} lines on stderr, expected 1: {lines[:6]}")
    elif not lines[0].startswith("fabricbench: error: "):
        problems.append(f"line does not start with 'fabricbench: error: ': {lines[0]!r}")
    else:
        for n in (needle,) if isinstance(needle, str) else needle:
            if n not in lines[0]:
                problems.append(f"line lacks {n!r}: {lines[0]!r}")
    if out.strip():
        problems.append(f"printed to stdout: {out[:300]!r}")
    after = sorted(os.listdir(d))
    if after != before:
        problems.append(f"files created: {sorted(set(after) - set(before))}")
    for x in fa:
        if x.startswith(d) and x != d and os.path.exists(x) and os.path.basename(x) not in ("afile", "taken"):
            problems.append(f"created {x}")
    shutil.rmtree(d, ignore_errors=True)
    shown = " ".join(repr(x) if (not x or any(c in x for c in " \n\t")) else x for x in args_a)
    if kind == "mpmd":
        shown += " : " + " ".join(args_b)
    if len(shown) > 110:
        shown = shown[:107] + "..."
    return kind, shown, problems, took, lines[0] if len(lines) == 1 else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabricbench", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", choices=["single", "np2", "mpmd"])
    a = ap.parse_args()
    a.root = tempfile.mkdtemp(prefix="fb-badinput-")
    jobs = []
    for c in SINGLE:
        jobs.append(("single", c[0], None, c[1], c[2] if len(c) > 2 else None))
    for c in NP2:
        jobs.append(("np2", c[0], None, c[1], c[2] if len(c) > 2 else None))
    for c in MPMD:
        jobs.append(("mpmd", c[0], c[1], c[2], None))
    if a.only:
        jobs = [j for j in jobs if j[0] == a.only]
    t0 = time.time()
    failed = 0
    counts = {}
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for kind, shown, problems, took, line in ex.map(lambda j: run_case(a, *j), jobs):
            counts[kind] = counts.get(kind, 0) + 1
            if problems:
                failed += 1
                print(f"FAIL [{kind}] {shown}: " + "; ".join(problems), flush=True)
            else:
                print(f"ok   [{kind}] {shown}  ({took:.1f} s) -> {line[:150]}", flush=True)
    shutil.rmtree(a.root, ignore_errors=True)
    total = sum(counts.values())
    print(f"{total} cases ({', '.join(f'{k} {v}' for k, v in counts.items())}) in {time.time() - t0:.0f} s: "
          f"{total - failed} passed, {failed} failed (each: exit 2, one 'fabricbench: error:' line, nothing on "
          f"stdout, no result folder)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

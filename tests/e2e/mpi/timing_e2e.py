#!/usr/bin/env python3
"""End-to-end tests of issue 13 under mpirun on localhost: --repeat/--per-op rows, --timer host
with -a, Google Benchmark's --benchmark_repetitions, and "no false pass" (single rank refused,
a named transport skipped or a GPU node without a GPU path = partial, exit 4).
Exit 0 = pass, 1 = fail."""
import argparse
import json
import re
import os
import stat
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import subprocess  # noqa: E402

from e2e import env as base_env, fail, read_rows  # noqa: E402


def mpirun(a, np_, fb_args, timeout, environ=None):
    cmd = [a.mpirun, "-q", "--oversubscribe", "-np", str(np_), a.fabricbench] + fb_args
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=environ or base_env(), capture_output=True, text=True, timeout=timeout)

SMALL = ["--collective", "allreduce,p2pring", "-b", "8", "-e", "64K", "-f", "32", "--placement", "out",
         "-n", "5", "-w", "1", "--tcp-if", "lo"]


def load(d, run):
    rows = read_rows(os.path.join(d, run))
    meta = json.load(open(os.path.join(d, run, "run.json")))
    return rows, meta


def check_spread(r, repeats, per_op):
    t, lo, hi = float(r["time_us"]), float(r["time_us_min"]), float(r["time_us_max"])
    if int(r["repeats"]) != repeats:
        fail(f"repeats {r['repeats']} != {repeats}: {r}")
    if not (0 < lo <= t <= hi):
        fail(f"median time not inside [min, max]: {lo} {t} {hi}: {r}")
    b, blo, bhi = float(r["busbw_GBps"]), float(r["busbw_min_GBps"]), float(r["busbw_max_GBps"])
    if not (blo <= b * (1 + 1e-9) and b <= bhi * (1 + 1e-9)):
        fail(f"busbw not inside [min, max]: {blo} {b} {bhi}")
    if per_op:
        p50, p99 = float(r["p50_us"]), float(r["p99_us"])
        if not (0 < p50 <= p99):
            fail(f"p50/p99 not ordered: {p50} {p99}: {r}")
    elif r["p50_us"] or r["p99_us"]:
        fail(f"p50/p99 present without --per-op: {r}")


def case_repeat(a):
    with tempfile.TemporaryDirectory() as d:
        p = mpirun(a, 2, ["--transport", "tcp,mpi", "--repeat", "4", "--per-op", "--results-dir", d,
                          "--run-id", "r"] + SMALL, timeout=200)
        print(p.stdout[-2500:], p.stderr[-2000:])
        if p.returncode != 0:
            fail(f"exit {p.returncode}")
        rows, meta = load(d, "r")
        if len(rows) != 2 * 2 * 3:  # tcp, mpi x allreduce, p2pring x 3 sizes (8, 256, 8192)
            fail(f"{len(rows)} rows")
        for r in rows:
            check_spread(r, 4, True)
            if r["timer"] != "rank-clock" or r["rank_time"] != "max":  # host backends: each rank's steady clock
                fail(f"default timer is rank-clock / max: {r}")
        if meta["config"]["repeat"] != 4 or meta["config"]["per_op"] is not True:
            fail(f"run.json config: {meta['config']}")
        # run.json keeps every operation of the --per-op batch (-n 5); p50 is sorted[n/2] and p99 the nearest rank.
        for jr in meta["rows"]:
            ops = jr.get("per_op_us")
            if not isinstance(ops, list) or len(ops) != 5 or not all(x > 0 for x in ops):
                fail(f"run.json row without 5 per_op_us: {jr}")
            srt = sorted(ops)
            if abs(jr["p50_us"] - srt[2]) > 1e-9 or abs(jr["p99_us"] - srt[4]) > 1e-9:
                fail(f"p50/p99 {jr['p50_us']} / {jr['p99_us']} are not sorted[2] / sorted[4] of {ops}")
        # An even count: p50 is the upper middle, as nccl-tests' -I p50 (sorted[n / 2]).
        small4 = list(SMALL)
        small4[small4.index("-n") + 1] = "4"

        p4 = mpirun(a, 2, ["--transport", "tcp", "--per-op", "--results-dir", d, "--run-id", "even"] + small4, timeout=200)
        if p4.returncode != 0:
            fail(f"-n 4 --per-op: exit {p4.returncode}: {p4.stderr[-2000:]}")
        even = json.load(open(os.path.join(d, "even", "run.json")))
        distinct = 0
        for jr in even["rows"]:
            ops = sorted(jr.get("per_op_us") or [])
            if len(ops) != 4 or abs(jr["p50_us"] - ops[2]) > 1e-9:
                fail(f"-n 4: p50 {jr['p50_us']} is not the upper middle of {ops}")
            distinct += ops[1] != ops[2]
        if not distinct:  # else the check above could not tell the upper middle from the lower
            fail("-n 4: no row whose two middle operations differ")
        if even["config"].get("per_op_p50") != "sorted[n/2]":
            fail(f"-n 4: run.json config per_op_p50 = {even['config'].get('per_op_p50')}")
        if "p99_us" not in p.stdout or "t_min_us" not in p.stdout:
            fail("console has no spread / per-op columns")
        report = open(os.path.join(d, "r", "report.md")).read()
        if "median of" not in report:
            fail("report.md does not say its figures are medians")
        # Google Benchmark's repetitions are the suite's repeats: one row per size, 3 batches.
        p = mpirun(a, 2, ["--transport", "tcp", "--benchmark_repetitions=3", "--results-dir", d, "--run-id", "g"]
                   + SMALL, timeout=200)
        if p.returncode != 0:
            fail(f"--benchmark_repetitions run: exit {p.returncode}: {p.stderr[-2000:]}")
        rows, _ = load(d, "g")
        if len(rows) != 6:
            fail(f"--benchmark_repetitions=3 gave {len(rows)} rows, expected one per size (6)")
        for r in rows:
            check_spread(r, 3, False)
        if any("per_op_us" in jr for jr in json.load(open(os.path.join(d, "g", "run.json")))["rows"]):
            fail("per_op_us in run.json without --per-op")
        # Default: auto, 3 batches for a short run.
        p = mpirun(a, 2, ["--transport", "mpi", "--results-dir", d, "--run-id", "auto"] + SMALL, timeout=200)
        rows, meta = load(d, "auto")
        if p.returncode != 0 or any(int(r["repeats"]) != 3 for r in rows) or meta["config"]["repeat"] != "auto":
            fail(f"default repeat: rc {p.returncode}, {[r['repeats'] for r in rows]}, {meta['config']['repeat']}")
    print("PASS: --repeat 4 --per-op on tcp and mpi: every row has 4 batches, min <= median <= max, "
          "p50 <= p99; --benchmark_repetitions=3 -> one row per size with 3 batches; default = 3 batches")


def case_timer(a):
    with tempfile.TemporaryDirectory() as d:
        # (the old names host and gpu still parse; host backends' rows never say gpu)
        for run, extra, flag, timer, rank_time in [("h", ["--timer", "nccl-tests"], "nccl-tests", "nccl-tests", "avg"),
                                                   ("h3", ["--timer", "host", "-a", "3"], "nccl-tests", "nccl-tests", "max"),
                                                   ("g0", ["--timer", "gpu", "-a", "0"], "rank", "rank-clock", "rank0"),
                                                   ("g2", ["-a", "2"], "rank", "rank-clock", "min")]:
            p = mpirun(a, 3, ["--transport", "tcp,mpi", "--repeat", "2", "--results-dir", d, "--run-id", run]
                       + extra + SMALL, timeout=200)
            if p.returncode != 0:
                fail(f"{extra}: exit {p.returncode}: {p.stdout[-1500:]} {p.stderr[-1500:]}")
            rows, meta = load(d, run)
            if len(rows) != 12:
                fail(f"{extra}: {len(rows)} rows")
            for r in rows:
                if r["timer"] != timer or r["rank_time"] != rank_time or int(r["wrong"]) != 0:
                    fail(f"{extra}: row says timer={r['timer']} rank_time={r['rank_time']}: {r}")
                check_spread(r, 2, False)
            c = meta["config"]
            # buffers move as nccl-tests moves them with either timer (issue 33), unless --reuse-buffers
            if c["timer"] != flag or c["rank_time"] != rank_time or c["rotate_buffers"] is not True:
                fail(f"{extra}: run.json config {c}")
            if f"timer={timer} rank_time={rank_time}" not in p.stdout:
                fail(f"{extra}: console does not name the timer")
            print(f"  ok: {' '.join(extra)}: 12 rows timer={timer} rank_time={rank_time}")
        p = mpirun(a, 2, ["--transport", "tcp", "--reuse-buffers", "--results-dir", d, "--run-id", "reuse"] + SMALL,
                   timeout=200)
        _, meta = load(d, "reuse")
        if p.returncode != 0 or meta["config"]["rotate_buffers"] is not False:
            fail(f"--reuse-buffers: rc {p.returncode}, config rotate_buffers {meta['config'].get('rotate_buffers')}")
        for bad, needle in [(["--timer", "wall"], "unknown --timer 'wall'"), (["-a", "4"], "-a/--average must be"),
                            (["--rotate-buffers", "--reuse-buffers"], "exclude each other"),
                            (["--repeat", "-1"], "--repeat must be >= 0"),
                            (["--repeat", "2", "--benchmark_repetitions=3"], "disagree")]:
            p = mpirun(a, 2, bad + ["--results-dir", d], timeout=60)
            ours = [l for l in p.stderr.splitlines() if l.startswith("fabricbench: error:")]
            if p.returncode != 2 or len(ours) != 1 or needle not in ours[0]:
                fail(f"{bad}: rc {p.returncode}, stderr {p.stderr}")
    print("PASS: --timer nccl-tests/rank (and the old host/gpu) with -a 0..3 on tcp and mpi at np 3: rows, run.json and console name the "
          "timer and the rank combination; bad values refused")


def fake_gpu_path(d):
    """A directory with an nvidia-smi that reports the 2xH200 node (no real GPU behind it)."""
    # The 2xH200 answer to the inventory's GPU query (lib/topology/inventory.cc), from the doctor's fixture machine.
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "doctor", "h200x2", "_commands",
                        "nvidia-smi_--query-gpu=index,name,uuid,pci.bus_id,memory.total,driver_version,vbios_version,"
                        "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,"
                        "mig.mode.current_--format=csv,noheader,nounits")
    b = os.path.join(d, "fakebin")
    os.makedirs(b)
    smi = os.path.join(b, "nvidia-smi")
    with open(smi, "w") as f:
        f.write("#!/bin/sh\ncase \"$1\" in --query-gpu=*) cat '%s' ;; *) exit 9 ;; esac\n" % data)
    os.chmod(smi, stat.S_IRWXU)
    return b


def final_line(stdout):
    # The verdict line, with the continuation lines ('#   ...') the 120-column console wraps it into.
    out, lines = "", stdout.splitlines()
    for i, l in enumerate(lines):
        if l.startswith("# passed") or l.startswith("# partial") or l.startswith("# failed"):
            out = l
            for c in lines[i + 1:]:
                if not c.startswith("#   "):
                    break
                out += " " + c[1:].strip()
    return out


def case_falsepass(a):
    with tempfile.TemporaryDirectory() as d:
        res = os.path.join(d, "res")
        # 1. One rank: refused with one line, nothing written; allowed with --allow-single-rank.
        p = mpirun(a, 1, ["--transport", "tcp", "--results-dir", res] + SMALL, timeout=60)
        ours = [l for l in p.stderr.splitlines() if l.startswith("fabricbench: error:")]
        if p.returncode != 2 or len(ours) != 1 or "--allow-single-rank" not in ours[0] or os.path.exists(res):
            fail(f"single rank: rc {p.returncode} stderr {p.stderr!r} folder {os.path.exists(res)}")
        print("  ok:", ours[0])
        p = mpirun(a, 1, ["--transport", "tcp", "--allow-single-rank", "--results-dir", res, "--run-id", "one"]
                   + SMALL, timeout=60)
        if p.returncode != 0:
            fail(f"--allow-single-rank: rc {p.returncode} {p.stderr[-1000:]}")
        # 2. A named transport that is skipped (nccl: no GPU here) is not a pass.
        p = mpirun(a, 2, ["--transport", "tcp,nccl", "--results-dir", res, "--run-id", "named"] + SMALL, timeout=120)
        line = final_line(p.stdout)
        meta = json.load(open(os.path.join(res, "named", "run.json")))
        if p.returncode != 4 or not line.startswith("# partial") or "measured: tcp" not in line \
                or "skipped: nccl" not in line or meta["summary"]["exit_code"] != 4 or meta["summary"]["ok"]:
            fail(f"named nccl skipped: rc {p.returncode}, line {line!r}, summary {meta['summary']}")
        print("  ok: named nccl skipped ->", p.returncode, line[:160])
        # 3. --transport auto on a node with GPUs (nvidia-smi says 2 x H200) measuring no GPU path.
        e = base_env()
        e["PATH"] = fake_gpu_path(d) + os.pathsep + e["PATH"]
        p = mpirun(a, 2, ["--transport", "auto", "--results-dir", res, "--run-id", "gpunode"] + SMALL,
                   timeout=300, environ=e)
        line = final_line(p.stdout)
        if p.returncode != 4 or "this node has GPUs (2 × NVIDIA H200)" not in line or "measured: tcp, mpi" not in line:
            fail(f"auto on a GPU node: rc {p.returncode}, line {line!r}, stderr {p.stderr[-1500:]}")
        print("  ok: auto on a GPU node without a GPU path ->", p.returncode)
        # 4. The same auto run without GPUs on the node passes (skips of auto are expected).
        p = mpirun(a, 2, ["--transport", "auto", "--results-dir", res, "--run-id", "cpunode"] + SMALL, timeout=300)
        line = final_line(p.stdout)
        gpus_here = os.path.exists("/dev/nvidia0")
        if not gpus_here and (p.returncode != 0 or not line.startswith("# passed")):
            fail(f"auto on a CPU node: rc {p.returncode}, line {line!r}")
        # 5. --require gpu (what the Slurm scripts pass when GPUs were requested).
        p = mpirun(a, 2, ["--transport", "tcp", "--require", "gpu", "--results-dir", res, "--run-id", "req"]
                   + SMALL, timeout=120)
        line = final_line(p.stdout)
        if p.returncode != 4 or "--require gpu" not in line:
            fail(f"--require gpu: rc {p.returncode}, line {line!r}")
        p = mpirun(a, 2, ["--transport", "tcp", "--require", "tcp", "--no-files"] + SMALL, timeout=120)
        if p.returncode != 0:
            fail(f"--require tcp with tcp rows: rc {p.returncode}")
        # 6. tcp between ranks of one host is labelled on the console and in report.md.
        rep = open(os.path.join(res, "req", "report.md")).read()
        if "same host (loopback path)" not in p.stdout or "same host (loopback path)" not in rep:
            fail("tcp rows on one host are not labelled 'same host (loopback path)' on the console and in report.md")
    print("PASS: 1 rank refused (exit 2); named skip, GPU node without GPU path and --require gpu -> partial, "
          "exit 4, final line lists measured and skipped; CPU auto run passes; same-host tcp labelled")


def case_gpu(a):
    """GPU parts: --timer rank/nccl-tests and --per-op on nccl and cuda (events per operation), % of nominal on
    the NVLink path, and --transport auto on a GPU node passing. Exit 77 where no GPU is visible."""
    try:  # NCCL refuses two ranks on one GPU ("Duplicate GPU detected"): one GPU per rank, or skip
        gpus = len([l for l in subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                                              timeout=60).stdout.splitlines() if l.startswith("GPU ")])
    except (OSError, subprocess.TimeoutExpired):
        gpus = 0
    if 0 < gpus < 2:
        print(f"SKIP: needs one GPU per rank: {gpus} GPUs for 2 ranks")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as d:
        probe = mpirun(a, 2, ["--list"], timeout=120)
        usable = {l.split()[0] for l in probe.stdout.splitlines() if len(l.split()) > 2 and l.split()[2] == "yes"}
        if not {"nccl", "cuda"} & usable:
            print("SKIP: no usable GPU backend here (fabricbench --list: nccl/cuda not usable)")
            sys.exit(77)
        gpu = [t for t in ("nccl", "cuda") if t in usable]
        e = base_env()
        e["NCCL_NVLS_ENABLE"] = "0"
        for run, timer, row_timer, rank_time in [("g", "rank", "rank-events", "max"), ("h", "nccl-tests", "nccl-tests", "avg")]:
            p = mpirun(a, 2, ["--transport", ",".join(gpu), "--timer", timer, "--repeat", "3", "--per-op",
                              "--collective", "all", "-b", "8", "-e", "16M", "-f", "8", "--placement", "out",
                              "-n", "10", "-w", "2", "--results-dir", d, "--run-id", run], timeout=300, environ=e)
            print(p.stdout[-3000:], p.stderr[-2000:])
            if p.returncode != 0:
                fail(f"--timer {timer}: exit {p.returncode}")
            rows, meta = load(d, run)
            if {r["impl"] for r in rows} != set(gpu):
                fail(f"--timer {timer}: impls {set(r['impl'] for r in rows)}, expected {gpu}")
            for r in rows:
                if r["timer"] != row_timer or r["rank_time"] != rank_time or int(r["wrong"]) != 0:
                    fail(f"--timer {timer}: {r}")
                check_spread(r, 3, True)
            nv = [r for r in rows if r["impl"] == "nccl" and "nvlink" in r["path"].lower()]
            if nv and not all(r["pct_nominal"] for r in nv):
                fail("nccl NVLink rows without % of nominal")
            print(f"  ok: --timer {timer}: {len(rows)} rows on {gpu}, p50/p99 from events, spread of 3 batches")
        if "nccl" in gpu:  # buffers move as nccl-tests moves them by default; the rows say so, the data check
            for run, extra, want in [("rot", [], "moved by"), ("reuse", ["--reuse-buffers"], "cache-warm")]:
                p = mpirun(a, 2, ["--transport", "nccl", "--collective", "all", "-b", "8", "-e", "16M", "-f", "64",
                                  "-n", "10", "--results-dir", d, "--run-id", run] + extra, timeout=300, environ=e)
                if p.returncode != 0:
                    fail(f"buffers {extra}: exit {p.returncode}")
                rows, _ = load(d, run)
                # 8 B .. 16 MiB: the small sizes have several positions (the 16 MiB row only its own)
                if not rows or any(int(r["wrong"]) != 0 or want not in r["extra"] for r in rows if int(r["size_bytes"]) < 16 << 20):
                    fail(f"buffers {extra}: wrong elements or rows without '{want}'")
                # every nccl row names the SM clock read after its batches: "C of max M" MHz, 0 < C <= M
                for r in rows:
                    m = re.search(r"sm_clock_MHz=(\d+) of max (\d+)", r["extra"])
                    if not m or not 0 < int(m.group(1)) <= int(m.group(2)):
                        fail(f"buffers {extra}: row without a readable SM clock: {r['extra']}")
                print(f"  ok: buffers {extra or 'default'}: {len(rows)} rows, wrong = 0, labelled '{want}', SM clock read")
        p = mpirun(a, 2, ["--transport", "auto", "--collective", "allreduce", "-b", "8", "-e", "1M", "-f", "64",
                          "--no-files"], timeout=300, environ=e)
        line = final_line(p.stdout)
        if p.returncode != 0 or not line.startswith("# passed"):
            fail(f"auto on a GPU node with a GPU path: rc {p.returncode}, line {line!r}")
    print("PASS: GPU timers, per-op and % of nominal; auto on this GPU node passes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["repeat", "timer", "falsepass", "gpu"])
    ap.add_argument("--fabricbench", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    a = ap.parse_args()
    globals()["case_" + a.case](a)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A full disk, and a result folder that vanishes, during a run (mpirun -np 2, tcp): the results
folder lives on a small tmpfs this test mounts (and removes). Expected: exit 1, one line 'fabricbench: error:
writing results stopped ...', table.csv of whole rows, the last good run.json (parses, its rows
a prefix of table.csv's), no temporary file left, and the marker WRITING-STOPPED.txt (on the full
disk; in a vanished folder it cannot be written). Needs root for mount: exit 77 otherwise.
"""
import argparse
import csv
import glob
import json
import os
import subprocess
import sys
import tempfile
import time


def env():
    e = dict(os.environ)
    e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    return e


def check(folder, marker_expected):
    problems = []
    tmp = glob.glob(os.path.join(folder, ".*tmp*"))
    if tmp:
        problems.append(f"temporary files left: {tmp}")
    text = open(os.path.join(folder, "table.csv")).read()
    if text and not text.endswith("\n"):
        problems.append("table.csv ends inside a line")
    rows = list(csv.reader(text.splitlines()))
    for r in rows[1:]:
        if len(r) != len(rows[0]):
            problems.append(f"torn csv row {r}")
    try:
        meta = json.load(open(os.path.join(folder, "run.json")))
    except ValueError as e:
        return problems + [f"run.json does not parse: {e}"], 0, 0
    nj, nc = len(meta["rows"]), len(rows) - 1
    if nj > nc:
        problems.append(f"run.json has {nj} rows, table.csv {nc}")
    if nj == 0:
        problems.append("run.json kept no rows")
    if marker_expected and not os.path.exists(os.path.join(folder, "WRITING-STOPPED.txt")):
        problems.append("no WRITING-STOPPED.txt marker")
    return problems, nj, nc


def run_case(a, mnt, name, remove_after):
    counts = ",".join(str(i) for i in range(1, 401))
    cmd = [a.mpirun, "-q", "--oversubscribe", "-np", "2", a.fabricbench, "--transport", "tcp", "--tcp-if", "lo",
           "--collective", "allreduce", "--placement", "out", "--counts", counts, "-n", "1", "-w", "0",
           "--results-dir", mnt, "--run-id", name]
    p = subprocess.Popen(cmd, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if remove_after:
        # The result folder disappears under the run (a clean-up job, an unmounted share).
        folder = os.path.join(mnt, name)
        table = os.path.join(folder, "table.csv")
        t0 = time.time()
        while time.time() - t0 < 60 and p.poll() is None:
            if os.path.exists(table) and sum(1 for _ in open(table)) > remove_after:
                os.rename(folder, folder + "-moved")
                break
            time.sleep(0.01)
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return [f"{name}: hang"]
    lines = [l for l in err.splitlines() if l.strip()]
    problems = []
    if p.returncode != 1:
        problems.append(f"exit code {p.returncode}, expected 1")
    ours = [l for l in lines if l.startswith("fabricbench: error: writing results stopped")]
    if len(ours) != 1 or len(lines) != 1:
        problems.append(f"expected one error line, got {lines[:5]}")
    more, nj, nc = check(os.path.join(mnt, name + ("-moved" if remove_after else "")), marker_expected=not remove_after)
    problems += more
    print(f"{name}: exit {p.returncode}; run.json {nj} rows, table.csv {nc} rows; "
          f"{ours[0][:200] if ours else lines[:2]}")
    return [f"{name}: {x}" for x in problems]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabricbench", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root to mount a small tmpfs")
        sys.exit(77)
    mnt = tempfile.mkdtemp(prefix="fb-diskfull-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=192k", "tmpfs", mnt], capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(mnt)
        print("SKIP: cannot mount a tmpfs here:", r.stderr.strip())
        sys.exit(77)
    problems = []
    try:
        problems += run_case(a, mnt, "full", 0)
        subprocess.run(["sh", "-c", f"rm -rf {mnt}/full"], check=True)
        problems += run_case(a, mnt, "gone", 20)
    finally:
        subprocess.run(["umount", "-l", mnt])
        os.rmdir(mnt)
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print("PASS: a full disk and a vanished folder each gave exit 1, one line, whole rows, the last good run.json")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

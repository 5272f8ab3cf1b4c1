"""Shared by the CLI test modules: the parsed arguments (A, filled in by cli_test.py), the launch
helpers (run, fb1, fb), check and bad_input, the result readers and the tcp flags most cases use."""
import argparse
import csv
import hashlib
import os
import shlex
import subprocess

A = argparse.Namespace()  # cli_test.py fills it in place: parse_args(namespace=A)
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


def shutil_rm(p):
    import shutil
    shutil.rmtree(p, ignore_errors=True)

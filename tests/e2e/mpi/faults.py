#!/usr/bin/env python3
"""Fault suite over tcp: SIGKILL, SIGSTOP and SIGTERM of one rank at start-up, in the middle of a
row and between rows, at np 2, 3 and 4, the victim's position cycling over first, middle and last;
and SIGSTOP of one rank during shutdown (after the result files are finished, while the others wait
in MPI_Finalize), at np 2, 3 and 4.

Each trial counts, and the suite requires every count to be 0:
  hangs           the job did not end within its limit (kill/term 25 s, stop --timeout + 45 s: a row's
                  deadline is --timeout plus its operations at a 10 MB/s floor rate until the collective's
                  own rate is known, up to 21 s for 200 x 1 MiB, then 3 s of reports and the teardown)
  torn            table.csv with a partial or malformed line, run.json that does not parse, a
                  stray temporary file (.run.json.tmp.*, .report.md.tmp.*), a row with wrong > 0
  stale           rank 0 survived (the victim was another rank, or rank 0 got SIGTERM, and the launcher
                  did not SIGKILL every rank as MPICH's hydra does) and the result folder exists, but
                  run.json still says "running" or report.md is missing
  wrong_named     a message (ours or mpirun's) names a rank other than the victim as lost,
                  stuck, stopped or exited
It also prints mpirun's exit code per case, which README's table quotes.
"""
import argparse
import csv
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import ranks

TIMEOUT = 4  # fabricbench --timeout in the trials (a stopped rank is found after this + 3 s)


def env(mark):
    e = dict(os.environ)
    e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
             FB_TEST_MARK=mark)
    return e


def rank_pids(mark):
    return ranks.rank_pids("FB_TEST_MARK", mark)


def rows_in(table):
    try:
        with open(table) as f:
            return max(0, sum(1 for _ in f) - 1)
    except OSError:
        return 0


def check_files(folder):
    """Problems with the files of a run that ended: torn rows, unparsable run.json, temp files."""
    torn = []
    if not os.path.isdir(folder):
        return torn, None
    for tmp in glob.glob(os.path.join(folder, ".*.tmp*")):
        torn.append(f"stray temporary file {os.path.basename(tmp)}")
    table = os.path.join(folder, "table.csv")
    if os.path.exists(table):
        text = open(table).read()
        if text and not text.endswith("\n"):
            torn.append("table.csv ends inside a line")
        rows = list(csv.reader(text.splitlines()))
        if rows:
            width = len(rows[0])
            for r in rows[1:]:
                if len(r) != width:
                    torn.append(f"table.csv row with {len(r)} of {width} fields")
                elif r[rows[0].index("wrong")] not in ("0", ""):
                    torn.append(f"table.csv row with wrong = {r[rows[0].index('wrong')]}")
    meta = None
    rj = os.path.join(folder, "run.json")
    if os.path.exists(rj):
        try:
            meta = json.load(open(rj))
        except ValueError as e:
            torn.append(f"run.json does not parse: {e}")
    return torn, meta


NAMING = [
    re.compile(r"lost or stuck: ranks? ([\d, ]+?) \("),
    re.compile(r"lost or stuck: ranks? \d+ \([^)]*\), (\d+)"),
    re.compile(r"rank (\d+) \(pid \d+\) (?:is|are) stopped"),
    re.compile(r"lost connection to rank (\d+)"),
    re.compile(r"process rank (\d+) with PID"),
]


def named_ranks(text):
    out = set()
    for rx in NAMING:
        for m in rx.finditer(text):
            for x in re.findall(r"\d+", m.group(1)):
                out.add(int(x))
    return out


def trial(a, np_, sig, phase, victim, root):
    mark = uuid.uuid4().hex[:12]
    run_id = f"{sig.name}-{phase}-np{np_}-r{victim}"
    folder = os.path.join(root, run_id)
    cmd = [a.mpirun, "--oversubscribe", "-np", str(np_), "-x", "FB_TEST_MARK", a.fabricbench,
           "--transport", "tcp", "--tcp-if", "lo", "--collective", "allreduce,allgather,reducescatter,p2pring",
           "--placement", "out", "-b", "1M", "-e", "1M", "-n", "200", "-w", "1", "--timeout", str(TIMEOUT),
           "--results-dir", root, "--run-id", run_id]
    e = env(mark)
    if phase == "shutdown":
        e["FB_TEST_SHUTDOWN_PAUSE_MS"] = "1500"   # every rank pauses before MPI_Finalize
        cmd[cmd.index("-x"):cmd.index("-x")] = ["-x", "FB_TEST_SHUTDOWN_PAUSE_MS"]
        cmd[cmd.index("-n", cmd.index(a.fabricbench)) + 1] = "20"
    proc = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    table = os.path.join(folder, "table.csv")
    t_start = time.time()
    sent = None
    while proc.poll() is None and time.time() - t_start < 60:
        pids = rank_pids(mark)
        if phase == "startup":
            if victim in pids:
                sent = pids[victim]
        elif phase == "midrow":
            # Just after the first row: the ranks are inside the next row's batches (-n 200 x 3
            # repeats keeps a row longer than this wait on an idle machine; at -n 40 with 0.3 s the
            # signal came after the last row on an idle CI machine).
            if rows_in(table) >= 1 and victim in pids:
                time.sleep(0.05)
                sent = pids[victim]
        elif phase == "shutdown":  # run.json finished: the ranks are in their pause before MPI_Finalize
            try:
                done = json.load(open(os.path.join(folder, "run.json"))).get("finished") is True
            except (OSError, ValueError):
                done = False
            if done and victim in pids:
                sent = pids[victim]
        else:  # between rows: the moment a row is written, the ranks are between two rows
            if rows_in(table) >= 1 and victim in pids:
                n = rows_in(table)
                while rows_in(table) == n and proc.poll() is None and time.time() - t_start < 60:
                    time.sleep(0.002)
                sent = pids[victim]
        if sent:
            try:
                os.kill(sent, sig)
            except ProcessLookupError:
                sent = None
            break
        time.sleep(0.005 if phase == "startup" else 0.02)
    t_sig = time.time()
    limit = TIMEOUT + 45 if sig == signal.SIGSTOP else 25
    hang = False
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        hang = True
        proc.kill()
        out, err = proc.communicate()
    took = time.time() - t_sig
    # Leftovers (a stopped rank the launcher did not end would be a hang too). MPICH's hydra SIGKILLs
    # the ranks and exits without waiting for them: a rank that vanishes within 2 s was ended by it.
    left = rank_pids(mark)
    t_left = time.time()
    while left and time.time() - t_left < 2:
        time.sleep(0.05)
        left = rank_pids(mark)
    for pid in left.values():
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if left:
        hang = True
    torn, meta = check_files(folder)
    # MPICH-family launchers (hydra) SIGKILL every other rank the moment one is killed or exits on a
    # signal (its "CLEANING UP REMAINING PROCESSES"; after SIGTERM with no message): rank 0 does not
    # survive that, so nothing can update run.json. Open MPI's mpirun sends SIGTERM first.
    launcher_killed_all = a.mpi_flavor != "openmpi" and sig in (signal.SIGKILL, signal.SIGTERM) and phase != "startup"
    rank0_survived = (victim != 0 or sig == signal.SIGTERM) and not launcher_killed_all
    stale = []
    if rank0_survived and os.path.isdir(folder) and sent:
        status = (meta or {}).get("summary", {}).get("status", "?")
        if meta is None or status == "running":
            stale.append(f"run.json status {status!r}")
        if not os.path.exists(os.path.join(folder, "report.md")):
            stale.append("no report.md")
    text = err + out + json.dumps((meta or {}).get("summary", {}))
    named = named_ranks(text)
    wrong = sorted(named - {victim})
    return {"run_id": run_id, "sent": bool(sent), "rc": proc.returncode, "took": took, "hang": hang, "torn": torn,
            "stale": stale, "wrong_named": wrong, "named": sorted(named), "launcher_killed_all": launcher_killed_all,
            "status": (meta or {}).get("summary", {}).get("status", "(no run.json)"),
            "ours": [l for l in err.splitlines() if l.startswith("fabricbench")][:3]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabricbench", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--mpi-flavor", default="openmpi", help="FB_MPI_FLAVOR of the build (openmpi, mpich, ...)")
    ap.add_argument("--quick", action="store_true", help="np 3 only (9 trials)")
    ap.add_argument("--only", help="run the trials whose name contains this (e.g. SIGTERM-midrow-np3)")
    a = ap.parse_args()
    sigs = [signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM]
    phases = ["startup", "midrow", "between"]
    nps = [3] if a.quick else [2, 3, 4]
    counts = {"trials": 0, "not_sent": 0, "hangs": 0, "torn": 0, "stale": 0, "wrong_named": 0, "named_right": 0,
              "launcher_killed_all": 0, "unnamed": 0}
    t0 = time.time()
    k = 0

    def report(r, victim, must_name=False):
        counts["trials"] += 1
        counts["not_sent"] += not r["sent"]
        counts["hangs"] += r["hang"]
        counts["torn"] += bool(r["torn"])
        counts["stale"] += bool(r["stale"])
        counts["wrong_named"] += bool(r["wrong_named"])
        counts["named_right"] += victim in r["named"]
        counts["launcher_killed_all"] += r["launcher_killed_all"]
        unnamed = must_name and victim not in r["named"]
        counts["unnamed"] += unnamed
        bad = r["hang"] or r["torn"] or r["stale"] or r["wrong_named"] or not r["sent"] or unnamed
        print(f"{'FAIL' if bad else 'ok  '} {r['run_id']:<24} mpirun exit {r['rc']}, ended "
              f"{r['took']:.1f} s after the signal; named {r['named']}; status: {r['status'][:110]}"
              + (f"\n     hang={r['hang']} torn={r['torn']} stale={r['stale']} wrong_named="
                 f"{r['wrong_named']} sent={r['sent']} victim_unnamed={unnamed} ours={r['ours']}" if bad else ""), flush=True)
    with tempfile.TemporaryDirectory(prefix="fb-faults-") as root:
        for np_ in nps:
            for sig in sigs:
                for phase in phases:
                    victim = [0, np_ // 2, np_ - 1][k % 3]
                    k += 1
                    if a.only and a.only not in f"{sig.name}-{phase}-np{np_}-r{victim}":
                        continue
                    r = trial(a, np_, sig, phase, victim, root)
                    report(r, victim)
        for np_ in nps:   # a rank stopped during shutdown: the others must not wait in MPI_Finalize forever
            victim = [0, np_ // 2, np_ - 1][np_ % 3]
            if a.only and a.only not in f"SIGSTOP-shutdown-np{np_}-r{victim}":
                continue
            # every rank is on this host, so the watchdog finds the stopped one by its job key
            # (Open MPI's job id, PMIx namespace, or hydra's proxy) and must name it
            report(trial(a, np_, signal.SIGSTOP, "shutdown", victim, root), victim, must_name=True)
    print(f"{counts['trials']} trials in {time.time() - t0:.0f} s: hangs {counts['hangs']}, torn rows/files "
          f"{counts['torn']}, stale run.json where rank 0 survived {counts['stale']}, wrong rank named "
          f"{counts['wrong_named']}, signal not delivered {counts['not_sent']}; the victim was named in "
          f"{counts['named_right']} trials (a stopped rank at shutdown left unnamed: {counts['unnamed']}); run.json not checked in {counts['launcher_killed_all']} (the launcher, "
          f"{a.mpi_flavor}'s hydra, SIGKILLs every rank when one dies)")
    ok = all(counts[k] == 0 for k in ("hangs", "torn", "stale", "wrong_named", "not_sent", "unnamed"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

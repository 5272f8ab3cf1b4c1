"""CLI cases for what a run writes and prints: results never overwritten, progress, the
headline, the console layout, the install, time-outs, single-rank rows and statuses."""
import json
import os
import pty
import re
import select
import signal
import statistics
import subprocess
import time

from cli_common import A, SRC, env, run, fb1, fb, check, bad_input, rows_of, digest, TCP


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
    # --resume of a --per-op run whose p50 was the nearest rank (run.json config without per_op_p50): refused
    po = TCP + ["-b", "8", "-e", "8", "-n", "2", "-w", "0", "--per-op", "--results-dir", d, "--run-id", "po", "--progress", "0"]
    p = fb(2, po)
    pj = os.path.join(d, "po", "run.json")
    rj = json.load(open(pj))
    check(p.returncode == 0 and rj["config"].get("per_op_p50") == "sorted[n/2]", f"--per-op config: {rj.get('config')}")
    del rj["config"]["per_op_p50"]
    json.dump(rj, open(pj, "w"))
    h2 = digest(os.path.join(d, "po"))
    bad_input(fb(2, po[:-4] + ["-e", "64", "--run-id", "po", "--resume", "--progress", "0"]), "nearest rank",
              "--resume of an old --per-op run")
    check(digest(os.path.join(d, "po")) == h2, "the refused --per-op --resume touched the folder")
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

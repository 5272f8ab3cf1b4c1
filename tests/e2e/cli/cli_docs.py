"""CLI cases for the reports and the docs: fabricbench-report's plots, the README and doc/
examples and links, and fabricbench-model's input checks."""
import csv
import json
import os
import re
import shlex

from cli_common import A, SRC, run, fb, check, shutil_rm


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
    shown = {}  # an `nccl project` example's projected rows as the doc prints them ("| 16 | 16 MiB | ..."): real output
    for f, text in doc_texts():
        for blk in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
            last = None
            for line in blk.replace("\\\n", " ").splitlines():
                c = line.strip()
                c = c[2:] if c.startswith("$ ") else c
                c = c.split(" #")[0].strip()
                if re.match(r"(build/tools/)?fabricbench-model ", c):
                    cmds.append((os.path.basename(f), c))
                    last = c
                elif last and " nccl project " in " " + last + " " and re.match(r"\| \d+ \| ", c):
                    shown.setdefault(last, []).append(c)
    runnable = [(f, c) for f, c in cmds if not re.search(r"\.\.\.|\bDIR\b|\bLOG\b|<|\[", c)]
    check(sum(len(v) for v in shown.values()) >= 10, f"only {sum(len(v) for v in shown.values())} projected rows shown in the docs")
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
        for row in shown.get(c, []):
            check(row in q.stdout.splitlines(), f"{f}: '{c}': the doc's row '{row}' is not in today's output")
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
    # an N x G lab run (3 nodes x 2 ranks), its single-node and one-rank-per-node companions
    R32, R12, R21 = (os.path.join(SRC, "results", "20261202-labu-200mbit-" + s) for s in ("3x2", "1x2", "2x1"))
    cases = [
        (["project", "--inter", "spec:ib-ndr,lat=-5", "--nodes", "4", "-o", out], "'lat=-5' must be a number > 0"),
        (["project", "--inter", "spec:ib-ndr,lat=0", "--nodes", "4", "-o", out], "'lat=0' must be a number > 0"),
        (["project", "--inter", "spec:ib-ndr,eff=0", "--nodes", "4", "-o", out], "'eff=0' must be a number > 0"),
        (["project", "--inter", "spec:ib-ndr,eff=-0.5", "--nodes", "4", "-o", out], "'eff=-0.5' must be a number > 0"),
        (["project", "--inter", "spec:ib-ndr,eff=1.5", "--nodes", "4", "-o", out], "efficiency 1.5 must be in (0, 1]"),
        (["project", "--inter", "spec:ib-ndr,lat=abc", "--nodes", "4", "-o", out], "'lat=abc' needs a number"),
        (["project", "--inter", "spec:ib-ndr,lat=nan", "--nodes", "4", "-o", out], "'lat=nan' needs a number"),
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
        # fit --intra (issue 30 item 2): the intra-node link of an N x G run's fit
        (["fit", R32, "--intra", "/nonexistent/run:tcp", "-o", out], "neither spec:NAME nor an existing run"),
        (["fit", R32, "--intra", "spec:ib-hdr", "-o", out], "--intra spec:ib-hdr is a network link (use --inter)"),
        (["fit", R32, "--intra", "spec:nvlink4-h100,eff=2", "-o", out], "efficiency 2 must be in (0, 1]"),
        (["fit", R32, "--intra", R21 + ":tcp", "-o", out], "ran on 2 nodes: its hops are inter-node"),
        (["fit", R32, "--intra", R12 + ":nosuch", "-o", out], "no series matches 'nosuch'"),
        (["fit", R32, "--intra", R12 + ":tcp", "--nics", "0", "-o", out], "--nics = 0: must be > 0"),
        (["project", "--inter", R32 + ":tcp", "--coll", "allgather", "--nodes", "4", "-o", out],
         "mixes intra- and inter-node hops: give the intra-node link (--intra SRC)"),
        (["project", "--inter", R32 + ":tcp", "--intra", R12 + ":tcp", "--coll", "allgather", "--nodes", "4",
          "--fit-nics", "0", "-o", out], "--fit-nics = 0: must be > 0"),
        (["nccl", "fit", NL, "--nic-line-gbps=-1", "-o", out], "--nic-line-gbps -1: must be >= 0"),
        (["nccl", "fit", NL, "--nic-line-gbps=nan", "-o", out], "--nic-line-gbps nan: must be >= 0"),
        (["nccl", "fit", NL, "--given", "nvls=off", "-o", out], "nvls=off: expected 0 (NVLS disabled), 1 or 2"),
        (["nccl", "fit", NL, "--given", "bogus=1", "-o", out], "unknown key 'bogus' (known: algo, proto, nvls"),
        (["nccl", "fit", NL, "--given", "algo=ring,colour=red", "-o", out], "unknown key 'colour'"),
        (["nccl", "fit", NL, "--nics", "0", "-o", out], "--nics = 0: must be > 0"),
        (["nccl", "validate", "--fit", NL, "--predict", NL, "--nics", "0", "-o", out], "--nics = 0: must be > 0"),
        (["nccl", "project", "--fit", NL, "--nodes", "4", "--nics", "0", "-o", out], "--nics = 0: must be > 0"),
        (["nccl", "fit", NL, "--nics", "-1", "-o", out], "--nics = -1: must be > 0"),
        # file hints against the log's complete '#  Rank' list (16 ranks on 2 hosts)
        (["nccl", "fit", NL + ":coll=allreduce,nodes=3", "-o", out], ":nodes=3 contradicts the log's complete"),
        (["nccl", "fit", NL + ":ranks=15", "-o", out], ":ranks=15 contradicts the log's complete '#  Rank' list of 16"),
        (["nccl", "fit", NL + ":ranks=64,nodes=8", "-o", out], ":ranks=64 contradicts"),
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

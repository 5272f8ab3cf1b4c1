#!/usr/bin/env python3
"""fabricbench-report --html on committed runs, rendered by headless Chromium (Debian's chromium):
the page has its sections and no network references, the screenshot is a real picture, and the
browser logs no console errors. Exit 0 pass, 1 fail, 77 skip (no chromium)."""
import os, re, shutil, struct, subprocess, sys, tempfile

report, src = sys.argv[1], sys.argv[2]
browser = shutil.which("chromium") or shutil.which("chromium-browser")
if not browser:
    print("SKIP: chromium not installed (apt-get install chromium)")
    sys.exit(77)
fails = []
def check(c, m):
    if not c:
        print("FAIL:", m)
        fails.append(m)
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "r.html")
    runs = [os.path.join(src, "results", r) for r in ("20261129-h200x2-nccl-nvlink", "20261129-h200x2-nccl-socket")]
    p = subprocess.run([report, "--html", out] + runs + ["--model", os.path.join(src, "results", "model-validation-labu-200mbit"),
                        "--model", os.path.join(d, "missing.csv")], capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"fabricbench-report --html: exit {p.returncode}: {p.stderr}")
    html = open(out).read()
    for sec in ("summary", "plots", "runs", "fingerprint", "model", "acceptance"):
        check(f"id='{sec}'" in html, f"section {sec} missing")
    check("absent" in html, "the missing model file / acceptance are not reported as absent")
    refs = re.findall(r"""(?:src|href)\s*=\s*['"]([^'"#][^'"]*)['"]""", html)
    check(not refs, f"network or file references: {refs[:5]}")
    check("<script" not in html, "the page has a script")
    check("Measured against projected" in html, "validation.csv not summarised")
    shot = os.path.join(d, "shot.png")
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
            f"--user-data-dir={d}/profile"]
    q = subprocess.run(base + ["--window-size=1300,2400", f"--screenshot={shot}", "file://" + out],
                       capture_output=True, text=True, timeout=120)
    check(os.path.exists(shot), f"no screenshot: {q.stderr[-500:]}")
    if os.path.exists(shot):
        with open(shot, "rb") as f:
            head = f.read(24)
        w, h = struct.unpack(">II", head[16:24])
        size = os.path.getsize(shot)
        check(head[:8] == b"\x89PNG\r\n\x1a\n" and (w, h) == (1300, 2400), f"screenshot {w}x{h}")
        check(size > 50_000, f"screenshot of {size} bytes: a blank page?")
        if os.environ.get("FB_HTML_SHOT"):
            shutil.copy(shot, os.environ["FB_HTML_SHOT"])
    errs = [l for l in q.stderr.splitlines() if "Uncaught" in l or "ERROR:CONSOLE" in l or ":CONSOLE(" in l]
    check(not errs, f"console errors: {errs[:5]}")
    r = subprocess.run(base + ["--dump-dom", "file://" + out], capture_output=True, text=True, timeout=120)
    dom = r.stdout
    check(dom.count("<svg") >= 6 or "plots need gnuplot" in dom, f"{dom.count('<svg')} inline SVG plots in the DOM")
    check(dom.count("<tr>") >= 13, "the verdict table has too few rows in the DOM")
print("html: " + (f"FAILED ({len(fails)})" if fails else "passed"))
sys.exit(1 if fails else 0)

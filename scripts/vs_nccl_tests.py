#!/usr/bin/env python3
"""fabricbench beside nccl-tests: per collective, size and placement, each round's fabricbench time per
operation divided by nccl-tests' time, and whether it is within the bound (2 % or 0.5 us of nccl-tests).

Written for scripts/gpu-steps/60-vs-nccl-tests.sh; usable on its own:
  vs_nccl_tests.py --out DIR --logs NCCL_TESTS_LOG_DIR --fb-host RUN1 RUN2 --fb-gpu RUN1 RUN2 [--command TEXT]
RUNk are fabricbench result folders (table.csv, run.json). In --logs: <test>-r<k>.log (nccl-tests' text
output, its host-clock time) and <test>-I-r<k>.json (-I 1 -J: CUDA events per iteration, their mean) for
test = all_reduce, all_gather, reduce_scatter, sendrecv. Writes DIR/vs-nccl-tests.md and DIR/table.csv;
prints the markdown. Exit 0 when every compared row is within the bound, 1 otherwise, 2 on bad input.
"""
import argparse
import csv
import json
import os
import sys

TESTS = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter",
         "sendrecv": "p2pring"}
NAMES = {"allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter",
         "p2pring": "SendRecv (P2P ring)"}
REL, ABS_US = 0.02, 0.5


def within(fb, nt):
    return abs(fb - nt) <= max(REL * nt, ABS_US)


def nccl_tests_text(path):
    """{(coll, size, placement): time_us} from nccl-tests' text output (no -I columns), and header lines."""
    out, header = {}, []
    coll = None
    for t, c in TESTS.items():
        if os.path.basename(path).startswith(t + "-"):
            coll = c
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("#"):
                if "nccl-tests version" in line or " Rank " in line or "Using devices" in line:
                    header.append(line.rstrip())
                continue
            tok = line.split()
            if len(tok) < 13 or not tok[0].isdigit():
                continue
            size = int(tok[0])
            try:
                out[(coll, size, "out")] = float(tok[5])
                out[(coll, size, "in")] = float(tok[9])
            except ValueError:
                continue
    return out, header


def nccl_tests_json(path):
    """{(coll, size, placement): mean of the per-iteration CUDA-event times, us} from -I 1 -J output."""
    coll = None
    for t, c in TESTS.items():
        if os.path.basename(path).startswith(t + "-"):
            coll = c
    with open(path, errors="replace") as f:
        doc = json.load(f)
    out = {}

    def walk(x):
        if isinstance(x, dict):
            if "size" in x:
                for key, pl in (("out_of_place_per_iter", "out"), ("in_place_per_iter", "in")):
                    v = x.get(key)
                    if isinstance(v, dict) and isinstance(v.get("avg_us"), (int, float)):
                        out[(coll, int(x["size"]), pl)] = float(v["avg_us"])
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    return out


def fabricbench(run):
    out = {}
    with open(os.path.join(run, "table.csv")) as f:
        for r in csv.DictReader(f):
            if r["impl"] != "nccl" or r.get("type", "float32") != "float32":
                continue
            out[(r["coll"], int(r["size_bytes"]), r["placement"])] = (float(r["time_us"]), r["wrong"], r["extra"])
    return out


def fingerprint_lines(run):
    try:
        with open(os.path.join(run, "run.json")) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        return [f"(no run.json in {run}: {e})"]
    fp = d.get("fingerprint", {})
    lines = [f"fabricbench run {d.get('run_id')}: `{d.get('command_line')}`"]
    for h in fp.get("hosts", [])[:1]:
        g = h.get("fingerprint", {})
        gpus = ", ".join(f"{x.get('name')} {x.get('pci_bus_id', x.get('bus_id', ''))}".strip() for x in g.get("gpus", []))
        lines.append("host: " + "; ".join(str(x) for x in [
            g.get("hostname", h.get("host")), g.get("os"), g.get("kernel"), (g.get("cpu") or {}).get("model"),
            f"GPUs: {gpus}" if gpus else None, f"driver {g.get('gpu_driver')}", f"CUDA {g.get('cuda_runtime_version')}",
            f"NCCL {g.get('nccl_version')}", f"MPI {g.get('mpi_version')}", f"fabricbench git {(g.get('git') or {}).get('rev')}"
            f"{' (dirty)' if (g.get('git') or {}).get('dirty') else ''}"] if x))
    lines.append(f"status: {(d.get('summary') or {}).get('status')}")
    return lines


def fmt_size(b):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--fb-host", nargs="+", required=True)
    ap.add_argument("--fb-gpu", nargs="+", required=True)
    ap.add_argument("--command", default="")
    a = ap.parse_args()
    rounds = len(a.fb_host)
    if len(a.fb_gpu) != rounds:
        print("vs_nccl_tests: give as many --fb-gpu runs as --fb-host runs", file=sys.stderr)
        return 2
    fbh, fbg, nth, ntg, header = [], [], [], [], []
    missing = []
    for k in range(rounds):
        try:
            fbh.append(fabricbench(a.fb_host[k]))
        except OSError as e:
            missing.append(str(e)); fbh.append({})
        try:
            fbg.append(fabricbench(a.fb_gpu[k]))
        except OSError as e:
            missing.append(str(e)); fbg.append({})
        h, g = {}, {}
        for t in TESTS:
            p = os.path.join(a.logs, f"{t}-r{k + 1}.log")
            try:
                d, hd = nccl_tests_text(p)
                h.update(d)
                header = header or hd
            except OSError as e:
                missing.append(str(e))
            p = os.path.join(a.logs, f"{t}-I-r{k + 1}.json")
            try:
                g.update(nccl_tests_json(p))
            except (OSError, ValueError) as e:
                missing.append(f"{p}: {e}")
        nth.append(h)
        ntg.append(g)

    keys = sorted({k for d in nth for k in d} | {k for d in fbh for k in d},
                  key=lambda k: (list(NAMES).index(k[0]) if k[0] in NAMES else 9, k[2] != "out", k[1]))
    rows = []
    fails = {"host": 0, "gpu": 0}
    counted = {"host": 0, "gpu": 0}
    worst = {"host": 1.0, "gpu": 1.0}
    for key in keys:
        row = {"coll": key[0], "size_bytes": key[1], "placement": key[2]}
        for k in range(rounds):
            for name, fb, nt in (("host", fbh[k], nth[k]), ("gpu", fbg[k], ntg[k])):
                f, n = fb.get(key), nt.get(key)
                row[f"nt_{name}_us_r{k + 1}"] = n
                row[f"fb_{name}_us_r{k + 1}"] = f[0] if f else None
                ok = None
                if f and n:
                    ok = within(f[0], n)
                    counted[name] += 1
                    fails[name] += 0 if ok else 1
                    r = f[0] / n
                    if abs(r - 1) > abs(worst[name] - 1) and not ok:
                        worst[name] = r
                    row[f"ratio_{name}_r{k + 1}"] = r
                else:
                    row[f"ratio_{name}_r{k + 1}"] = None
                row[f"ok_{name}_r{k + 1}"] = ok
        rows.append(row)

    os.makedirs(a.out, exist_ok=True)
    cols = ["coll", "size_bytes", "placement"] + [f"{p}_{n}_{s}_r{k + 1}" for n in ("host", "gpu")
                                                  for k in range(rounds) for p, s in (("nt", "us"), ("fb", "us"))] \
        + [f"ratio_{n}_r{k + 1}" for n in ("host", "gpu") for k in range(rounds)] \
        + [f"ok_{n}_r{k + 1}" for n in ("host", "gpu") for k in range(rounds)]
    cols = [c.replace("_us_us", "_us") for c in cols]
    with open(os.path.join(a.out, "table.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow(["" if r.get(c) is None else r.get(c) for c in cols])

    def cell(v, digits=2):
        return "-" if v is None else f"{v:.{digits}f}"

    def ratio(r, name, k):
        v = r[f"ratio_{name}_r{k}"]
        if v is None:
            return "-"
        return f"{v:.3f}" + ("" if r[f"ok_{name}_r{k}"] else " **out**")

    md = ["# fabricbench beside nccl-tests", "",
          f"Written by scripts/vs_nccl_tests.py (scripts/gpu-steps/60-vs-nccl-tests.sh). Bound: fabricbench's "
          f"time per operation within {REL * 100:.0f} % or {ABS_US} us of nccl-tests' time.", "",
          "Command: `" + a.command + "`", "",
          "Order: round 1 (fabricbench --timer host -a 1, nccl-tests, fabricbench --timer gpu, nccl-tests -I 1), "
          "then round 2 the same. host columns: fabricbench `--timer host -a 1` / nccl-tests' time column (its host "
          "clock over the batch of -n operations). gpu columns: fabricbench `--timer gpu` (CUDA events around the "
          "batch) / the mean of nccl-tests' `-I 1` per-iteration CUDA-event times.", ""]
    md += ["## Fingerprint", ""] + ["- " + x for x in fingerprint_lines(a.fb_host[0])] + \
          ["- nccl-tests: " + x.lstrip("# ") for x in header[:4]] + [""]
    md += ["## Summary", ""]
    for name in ("host", "gpu"):
        md.append(f"- {name}: {counted[name] - fails[name]} of {counted[name]} (row, round) pairs within the bound"
                  + (f"; worst ratio outside it {worst[name]:.3f}" if fails[name] else ""))
    if missing:
        md.append("- missing input: " + "; ".join(missing[:8]))
    md.append("")
    for coll in NAMES:
        for pl in ("out", "in"):
            sub = [r for r in rows if r["coll"] == coll and r["placement"] == pl]
            if not sub:
                continue
            md += [f"## {NAMES[coll]}, {'out of place' if pl == 'out' else 'in place'}", ""]
            head = "| size |"
            for k in range(1, rounds + 1):
                head += f" nccl-tests r{k} us | fb host r{k} us | host ratio r{k} |"
            for k in range(1, rounds + 1):
                head += f" nccl-tests -I r{k} us | fb gpu r{k} us | gpu ratio r{k} |"
            md += [head, "|" + "---:|" * (1 + 6 * rounds)]
            for r in sub:
                line = f"| {fmt_size(r['size_bytes'])} |"
                for k in range(1, rounds + 1):
                    line += f" {cell(r[f'nt_host_us_r{k}'])} | {cell(r[f'fb_host_us_r{k}'])} | {ratio(r, 'host', k)} |"
                for k in range(1, rounds + 1):
                    line += f" {cell(r[f'nt_gpu_us_r{k}'])} | {cell(r[f'fb_gpu_us_r{k}'])} | {ratio(r, 'gpu', k)} |"
                md.append(line)
            md.append("")
    text = "\n".join(md)
    with open(os.path.join(a.out, "vs-nccl-tests.md"), "w") as f:
        f.write(text)
    print(text)
    if not counted["host"]:
        return 1
    return 0 if fails["host"] == 0 and fails["gpu"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

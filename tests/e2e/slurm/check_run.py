#!/usr/bin/env python3
"""Checks one fabricbench result folder (results/<run-id>/) for the slurm tests.

  check_run.py hosts  DIR n1,n2              run.json's fingerprint lists exactly these hosts
  check_run.py rows   DIR NRANKS NNODES      every row: nranks/nnodes as given, wrong == 0; >= 1 row
  check_run.py intact DIR MIN_ROWS           table.csv parses completely (every line whole, newline-
                                             terminated), >= MIN_ROWS rows, each row checked, wrong == 0
  check_run.py bw     DIR BYTES IPERF_MBps LIMIT_MBps LO HI IMPL:COLL[,IMPL:COLL...]
                                             busbw of each IMPL:COLL row at BYTES must be >= LO x the
                                             iperf3 goodput and <= HI x the TCP goodput limit
  check_run.py show   DIR [BYTES]            print the rows (MB/s)
Exit 0 when the check holds; 1 with one line per problem otherwise.
"""
import csv
import io
import json
import os
import sys

NEEDED = ["size_bytes", "coll", "impl", "path", "placement", "nranks", "nnodes", "iters", "time_us",
          "algbw_GBps", "busbw_GBps", "wrong"]


def read_table(d):
    path = os.path.join(d, "table.csv")
    with open(path, newline="") as f:
        text = f.read()
    if not text.endswith("\n"):
        raise SystemExit(f"FAIL {path}: last line has no newline (truncated write)")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header, body = rows[0], rows[1:]
    missing = [c for c in NEEDED if c not in header]
    if missing:
        raise SystemExit(f"FAIL {path}: header lacks {missing}: {header}")
    out = []
    for i, r in enumerate(body, start=2):
        if len(r) != len(header):
            raise SystemExit(f"FAIL {path}: line {i}: {len(r)} fields, header has {len(header)}")
        row = dict(zip(header, r))
        try:
            for k in ("size_bytes", "nranks", "nnodes", "iters", "wrong"):
                row[k] = int(row[k])
            for k in ("time_us", "algbw_GBps", "busbw_GBps"):
                row[k] = float(row[k])
        except ValueError as e:
            raise SystemExit(f"FAIL {path}: line {i}: {e}")
        row["line"] = i
        out.append(row)
    return out


def decode_extra(text):
    """The extra column: key=value;key=value with '\\', ';' and '=' escaped by a backslash."""
    out, key, val, in_val, i = {}, "", "", False, 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            i += 1
            if in_val:
                val += text[i]
            else:
                key += text[i]
        elif c == "=" and not in_val:
            in_val = True
        elif c == ";":
            out[key], key, val, in_val = val, "", "", False
        elif in_val:
            val += c
        else:
            key += c
        i += 1
    if key:
        out[key] = val
    return out


def show(rows, size=None):
    for r in rows:
        if size is None or r["size_bytes"] == size:
            print(f"  {r['coll']:13s} {r['impl']:4s} {r['placement']:5s} {r['size_bytes']:>10d} B "
                  f"n={r['nranks']}/{r['nnodes']} iters={r['iters']} time={r['time_us']:.0f} us "
                  f"busbw={r['busbw_GBps'] * 1000:.2f} MB/s wrong={r['wrong']} path={r['path']}")


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    cmd, d = argv[1], argv[2]
    problems = []
    if cmd == "hosts":
        want = sorted(argv[3].split(","))
        with open(os.path.join(d, "run.json")) as f:
            run = json.load(f)
        hosts = run.get("fingerprint", {}).get("hosts", [])
        got = sorted(h.get("hostname", "?") for h in hosts)
        ranks = {h.get("hostname"): h.get("ranks") for h in hosts}
        print(f"  fingerprint hosts: {got} ranks: {ranks}")
        if got != want:
            problems.append(f"fingerprint.hosts is {got}, expected {want}")
        for h in hosts:
            if not h.get("fingerprint"):
                problems.append(f"host {h.get('hostname')} has an empty fingerprint")
    elif cmd == "rows":
        nranks, nnodes = int(argv[3]), int(argv[4])
        rows = read_table(d)
        show(rows)
        if not rows:
            problems.append("table.csv has no rows")
        for r in rows:
            if r["nranks"] != nranks or r["nnodes"] != nnodes:
                problems.append(f"line {r['line']}: nranks/nnodes {r['nranks']}/{r['nnodes']}, "
                                f"expected {nranks}/{nnodes}")
            if r["wrong"] != 0:
                problems.append(f"line {r['line']}: wrong={r['wrong']} (must be checked and 0)")
    elif cmd == "intact":
        rows = read_table(d)
        show(rows)
        if len(rows) < int(argv[3]):
            problems.append(f"{len(rows)} rows, expected at least {argv[3]}")
        for r in rows:
            if r["wrong"] != 0:
                problems.append(f"line {r['line']}: wrong={r['wrong']} (must be checked and 0)")
            if r["time_us"] <= 0 or r["busbw_GBps"] <= 0:
                problems.append(f"line {r['line']}: time/busbw not positive")
    elif cmd == "bw":
        size, iperf, theory, lo, hi = int(argv[3]), float(argv[4]), float(argv[5]), float(argv[6]), float(argv[7])
        rows = read_table(d)
        for want in argv[8].split(","):
            impl, coll = want.split(":")
            sel = [r for r in rows if r["impl"] == impl and r["coll"] == coll and r["size_bytes"] == size]
            if not sel:
                problems.append(f"no {impl} {coll} row at {size} B")
            for r in sel:
                mbps = r["busbw_GBps"] * 1000
                ok = lo * iperf <= mbps <= hi * theory
                print(f"  {impl:3s} {coll:9s} {size} B x{r['iters']}: busbw {mbps:7.2f} MB/s = "
                      f"{mbps / iperf * 100:5.1f} % of iperf3 {iperf:.2f} MB/s, {mbps / theory * 100:5.1f} % of "
                      f"the TCP goodput limit {theory:.2f} MB/s (accepted: >= {lo * 100:.0f} % of iperf3, "
                      f"<= {hi * 100:.1f} % of the limit) {'ok' if ok else 'OUT OF RANGE'}")
                if r["wrong"] != 0:
                    problems.append(f"{impl} {coll}: wrong={r['wrong']}")
                if not ok:
                    problems.append(f"{impl} {coll}: busbw {mbps:.2f} MB/s out of range")
    elif cmd == "nominal":
        # nominal <dir> <rate bytes/s> <impl:coll,...>: the rows hold % of nominal against the tc rate
        # (busbw / rate), and say where the rate comes from (the tbf on the node's eth0).
        rate, rows = float(argv[3]), read_table(d)
        for want in argv[4].split(","):
            impl, coll = want.split(":")
            sel = [r for r in rows if r["impl"] == impl and r["coll"] == coll]
            if not sel:
                problems.append(f"no {impl} {coll} rows")
            for r in sel:
                pct = r.get("pct_nominal", "")
                basis = decode_extra(r.get("extra", "")).get("nominal_basis", "")
                expect = r["busbw_GBps"] * 1e9 / rate * 100
                print(f"  {impl} {coll} {r['size_bytes']} B: busbw {r['busbw_GBps'] * 1000:.2f} MB/s, "
                      f"pct_nominal {pct or '(none)'} (busbw / {rate / 1e6:.1f} MB/s = {expect:.1f} %), basis '{basis}'")
                if not pct:
                    problems.append(f"{impl} {coll} {r['size_bytes']} B: no pct_nominal")
                elif abs(float(pct) - expect) > 0.01 * expect + 0.05:
                    problems.append(f"{impl} {coll}: pct_nominal {pct} != busbw / tc rate = {expect:.2f}")
                if "tc tbf" not in basis or "shaped" not in basis:
                    problems.append(f"{impl} {coll}: nominal basis '{basis}' does not name the tc tbf shaping")
    elif cmd == "show":
        show(read_table(d), int(argv[3]) if len(argv) > 3 else None)
    else:
        print(__doc__)
        return 2
    for p in problems:
        print(f"FAIL {d}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

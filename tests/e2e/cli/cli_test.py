#!/usr/bin/env python3
"""CLI tests: the conventions users bring (nccl-tests and Google Benchmark flags, --version, --help,
results never overwritten, progress, headline, install, plots, time-outs, README examples).

One case per issue-15 item; each launches the real binaries (fabricbench under mpirun on localhost
over tcp, fabricbench-report on committed results) and checks what they printed and wrote.
Exit 0 = pass, 1 = fail.
The cases live in cli_flags.py, cli_runs.py and cli_docs.py; cli_common.py holds what they share.
"""
import argparse
import sys
import tempfile
import time

from cli_common import A, FAILS
from cli_flags import case_nccl_flags, case_version, case_repeated, case_help, case_gbench
from cli_runs import case_never_overwritten, case_progress, case_headline, case_console, case_install, \
    case_timeout, case_single_rank, case_statuses
from cli_docs import case_plots, case_readme, case_docs, case_model_inputs


CASES = {"nccl_flags": case_nccl_flags, "version": case_version, "repeated": case_repeated, "help": case_help,
         "gbench": case_gbench, "never_overwritten": case_never_overwritten, "progress": case_progress,
         "headline": case_headline, "install": case_install, "plots": case_plots, "timeout": case_timeout,
         "readme": case_readme, "console": case_console, "docs": case_docs, "single_rank": case_single_rank,
         "statuses": case_statuses}

CASES["model_inputs"] = case_model_inputs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--fabricbench", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--model", default=None)
    ap.parse_args(namespace=A)
    t = time.time()
    with tempfile.TemporaryDirectory(prefix="fb-cli-") as d:
        CASES[A.case](d)
    print(f"{A.case}: {'FAILED (' + str(len(FAILS)) + ')' if FAILS else 'passed'} in {time.time() - t:.1f} s")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()

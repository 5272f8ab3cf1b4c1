#!/usr/bin/env bash
# report_step.sh RESULTS_DIR STEP - prints what STEP did in the VM boot and returns its verdict
# (0 pass, 1 fail, 77 skipped when the VM was unavailable).
R=$1; s=$2
if [ -f "$R/$s.rc" ]; then
  cat "$R/$s.log"
  # timing steps: what else the host was running matters under TCG
  if [ "$s" = perf ] && [ -f "$R/host_load.log" ]; then cat "$R/host_load.log"; fi
  exit "$(cat "$R/$s.rc")"
fi
if [ -f "$R/boot.skip" ]; then
  echo "SKIPPED: $(cat "$R/boot.skip")"
  exit 77
fi
echo "FAIL: no result for step $s: the VM boot (test verbs_vm_boot) did not run it; see $R/boot.log"
exit 1

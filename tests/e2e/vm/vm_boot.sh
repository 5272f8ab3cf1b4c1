#!/usr/bin/env bash
# vm_boot.sh BUILD_DIR RESULTS_DIR - ctest's verbs_vm_boot: one Soft-RoCE VM boot that runs every
# verbs step (vm_suite.sh) and leaves one result per step in RESULTS_DIR for report_step.sh.
# Exit 77 (skipped, with the reason) when the VM can't be had here.
set -u
here=$(cd "$(dirname "$0")" && pwd)
B=$(cd "$1" && pwd); R=$2
rm -rf "$R"; mkdir -p "$R"
out=$R/boot.log
# TCG timing depends on what else the host runs: note the host's load before and after
echo "host load before the boot: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)" > "$R/host_load.log"
"$here/softroce_vm.sh" -v --rw "$B" --timeout "${FB_VM_TIMEOUT:-840}" -- "$here/vm_suite.sh" "$B" "$R" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
echo "host load after the boot: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$R/host_load.log"
cat "$R/host_load.log"
if [ "$rc" -eq 77 ]; then
  grep '^SKIP:' "$out" | tail -1 > "$R/boot.skip"
  exit 77
fi
missing=0
for s in devices list conformance collectives_np2 collectives_np3 collectives_np4 collectives_nodes inject bad_settings doctor perf; do
  [ -f "$R/$s.rc" ] || { echo "no result for step $s (VM rc $rc)"; missing=1; }
done
[ $missing -eq 0 ] || exit 1
echo "VM boot ran every verbs step (suite rc $rc; each step is reported by its own verbs_* test)"
exit 0

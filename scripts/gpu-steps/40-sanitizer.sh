#!/usr/bin/env bash
# FB_STEP_LIMIT=150
# compute-sanitizer memcheck, racecheck and synccheck over the kernel tests (test_kernels) and the
# cuda and nccl backends of fabricbench at small sizes (mpirun -np 2); every run must report 0
# errors. One line per (tool, target): exit code and the sanitizer's summary line(s); the last
# line says "sanitizer: N runs, E with errors" (E must be 0). Full logs: $OUT/sanitizer-*.log.
set -u
CS=${CS:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
runs=0
bad=0
summary() {  # the sanitizer's own verdict lines, one per process
  grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$1" | sed 's/^========= //' | sort | uniq -c | tr -s ' ' | tr '\n' ';'
}
check() {  # name, log, exit code, exit codes of the program that are fine
  local name=$1 log=$2 rc=$3 okcodes=$4 s
  s=$(summary "$log")
  runs=$((runs + 1))
  # Errors: exit 99 (--error-exitcode), a summary line that is not "0 errors"/"0 hazards", no
  # summary at all (time-out, crash), or the program's own failure (fabricbench 4 = partial: an
  # NCCL path other than the one measured is listed as skipped, fine here).
  if [ "$rc" -eq 99 ] || [[ " $okcodes " != *" $rc "* ]] || [ -z "$s" ] ||
     grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | grep -vqE "SUMMARY: 0 (errors|hazards)"; then
    bad=$((bad + 1))
    echo "FAIL $name: exit $rc; $s"
    grep -m5 -E "^========= (Invalid|Race|Barrier|Error|Uninitialized|Program hit)" "$log" | sed 's/^/    /'
  else
    echo "ok   $name: exit $rc; $s"
  fi
}
for tool in memcheck racecheck synccheck; do
  log=$OUT/sanitizer-kernels-$tool.log
  timeout 25 "$CS" --tool "$tool" --error-exitcode 99 --print-limit 20 "$B/tests/kernels/test_kernels" > "$log" 2>&1
  check "$tool test_kernels" "$log" $? "0"
  log=$OUT/sanitizer-fabricbench-$tool.log
  timeout 25 $MPI -x NCCL_NVLS_ENABLE=0 "$CS" --tool "$tool" --error-exitcode 99 --print-limit 20 \
    "$B/benchmarks/fabricbench" --transport cuda,nccl --path auto --collective all -b 8 -e 64K -f 16 -n 2 -w 1 \
    --timeout 20 --no-files > "$log" 2>&1
  rc=$?
  check "$tool fabricbench cuda,nccl np2" "$log" $rc "0 4"
  grep -E "^# (passed|failed)|skipped" "$log" | head -3 | sed 's/^/    /'
done
echo "sanitizer: $runs runs, $bad with errors"
[ "$bad" -eq 0 ]

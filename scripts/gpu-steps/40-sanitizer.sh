#!/usr/bin/env bash
# FB_STEP_LIMIT=270
# compute-sanitizer memcheck, racecheck and synccheck over the kernel tests (test_kernels) and the
# cuda and nccl backends of fabricbench at small sizes ($MPI: one rank per GPU, 2 at most; one rank
# with --allow-single-rank on a 1-GPU host); every run must report 0 errors. One line per (tool,
# target): exit code, the sanitizer's summary line(s) and the errors counted; the last line says
# "sanitizer: N runs, E with errors" (E must be 0). Full logs: $OUT/sanitizer-*.log.
# Not counted, but listed: "Program hit cudaErrorNoKernelImageForDevice on cudaFuncGetAttributes"
# whose host frames are inside libnccl (NCCL asks for every kernel it ships and skips those built
# for other GPU generations; the call is NCCL's, it fails by design and NCCL goes on), and
# CUDA_ERROR_NOT_PERMITTED / NOT_SUPPORTED on cuMemCreate called from ncclMemAlloc in libnccl (NCCL
# asks for a fabric handle first and retries without one where the host refuses it, as VMs do).
set -u
CS=${CS:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
NP=${NP:-2}
runs=0
bad=0
summary() {  # the sanitizer's own verdict lines, one per process
  grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$1" | sed 's/^========= //' | sort | uniq -c | tr -s ' ' | tr '\n' ';'
}
reported() {  # errors and hazards the summaries count, over every process
  grep -hoE "(ERROR|RACECHECK) SUMMARY: [0-9]+" "$1" | awk '{s += $NF} END {print s + 0}'
}
nccl_probes() {  # NCCL's own probes (kernel images, fabric handles; see above): one record each
  awk '/^========= [A-Z]/ && !/SUMMARY/ { if (rec != "") n += benign(rec); rec = $0; next }
       /^=========/ { rec = rec "\n" $0; next }
       END { if (rec != "") n += benign(rec); print n + 0 }
       function benign(r) {
         return r ~ /libnccl/ && ((r ~ /cudaErrorNoKernelImageForDevice/ && r ~ /cudaFuncGetAttributes/) ||
                                  (r ~ /CUDA_ERROR_NOT_(PERMITTED|SUPPORTED)/ && r ~ /cuMemCreate/ && r ~ /ncclMemAlloc/)) }' "$1"
}
check() {  # name, log, exit code, exit codes of the program that are fine[, a line the log must hold]
  local name=$1 log=$2 rc=$3 okcodes=$4 need=${5:-} s total probes real
  s=$(summary "$log")
  total=$(reported "$log")
  probes=$(nccl_probes "$log")
  real=$((total - probes))
  runs=$((runs + 1))
  # Errors: a summary count above NCCL's probes, no summary at all (time-out, crash), or the
  # program's own failure (fabricbench 4 = partial: an NCCL path other than the one measured is
  # listed as skipped, fine here). Exit 99 (--error-exitcode) alone is not: NCCL's probes set it.
  # Exit 99 hides the program's own code: fabricbench's verdict line must say both backends were
  # measured with wrong = 0 (exit 4 = partial is fine: --path auto lists NCCL's other paths as skipped).
  if [ "$real" -gt 0 ] || [[ " $okcodes 99 " != *" $rc "* ]] || [ -z "$s" ] ||
     { [ -n "$need" ] && ! grep -qE "$need" "$log"; }; then
    bad=$((bad + 1))
    echo "FAIL $name: exit $rc; $s errors $real (+ $probes NCCL probes)"
    grep -m5 -E "^========= (Invalid|Race|Barrier|Error|Uninitialized|Program hit)" "$log" | sed 's/^/    /'
  else
    echo "ok   $name: exit $rc; $s errors $real (+ $probes NCCL probes, not counted)"
  fi
}
for tool in memcheck racecheck synccheck; do
  log=$OUT/sanitizer-kernels-$tool.log
  timeout 25 "$CS" --tool "$tool" --error-exitcode 99 --print-limit 100 "$B/tests/kernels/test_kernels" > "$log" 2>&1
  check "$tool test_kernels" "$log" $? "0"
  log=$OUT/sanitizer-fabricbench-$tool.log
  timeout 60 $MPI -x NCCL_NVLS_ENABLE=0 "$CS" --tool "$tool" --error-exitcode 99 --print-limit 100 \
    "$B/benchmarks/fabricbench" --transport cuda,nccl --path auto --collective all -b 8 -e 64K -f 16 -n 2 -w 1 \
    --timeout 45 --no-files ${SINGLE:-} > "$log" 2>&1
  rc=$?
  check "$tool fabricbench cuda,nccl np$NP" "$log" $rc "0 4" \
    "^# (passed|partial): .*wrong = 0; measured: (cuda, nccl[^;,]*|nccl[^;,]*, cuda);"
  grep -E "^# (passed|failed)|skipped" "$log" | head -3 | sed 's/^/    /'
done
echo "sanitizer: $runs runs, $bad with errors"
[ "$bad" -eq 0 ]

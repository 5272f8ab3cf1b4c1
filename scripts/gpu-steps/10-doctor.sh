#!/usr/bin/env bash
# FB_STEP_LIMIT=90
# fabricbench --doctor on the GPU host (issue 17): one checking rank for the node, the table on
# stdout and in $OUT/results/doctor-<gpu>x<np>/{doctor.txt,doctor.json}. Expected on the 2xH200 host:
# gpu.topology pass "GPU0-GPU1 NV18", gpu.p2p pass (advertised OK + the real copy verified),
# gpu.mig pass "MIG off", gpu.gpudirect_rdma warn (no nvidia_peermem, no RDMA device); exit 0
# unless some check fails (the exit code is printed).
$MPI $B/benchmarks/fabricbench --doctor --results-dir "$OUT/results" --run-id doctor-${FB_GPU_MODEL:-gpu}x${NP:-2}
echo "fabricbench --doctor exit $?"

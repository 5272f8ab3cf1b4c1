#!/usr/bin/env bash
# FB_STEP_LIMIT=60
# The machine inventory's two GPU sources on the GPU host (issue 34): NVML (libnvidia-ml.so.1,
# dlopen) and the nvidia-smi fallback, each printed field by field, then compared. Exit 1 where
# any field differs or a source does not answer. Expected: "compare: 0 difference(s) over 24
# field(s) of 2 GPU(s)" on the 2xH200 host (12 per GPU). The tool's default (NVML first) last.
$B/tools/fabricbench-inventory --compare; rc=$?
$B/tools/fabricbench-inventory
echo "fabricbench-inventory --compare exit $rc"
exit $rc

#!/usr/bin/env bash
# FB_STEP_LIMIT=60
# The machine inventory's two GPU sources on the GPU host (issue 34): NVML (libnvidia-ml.so.1,
# dlopen) and the nvidia-smi fallback, each printed field by field, then compared; then the GPU x
# GPU link matrix (NVML's NVLink states, remote PCI ids and common PCI ancestors against
# `nvidia-smi topo -m`), cell by cell. Exit 1 where any field or cell differs or a source does not
# answer. Expected: "compare: 0 difference(s) over 24 field(s) of 2 GPU(s)" and "compare: 0
# difference(s) over 4 link cell(s)" on the 2xH200 host (12 fields per GPU, N x N cells); on one
# GPU 12 fields and 1 cell. The raw `topo -m` follows for the record. The tool's default last.
$B/tools/fabricbench-inventory --compare; rc=$?
nvidia-smi topo -m
$B/tools/fabricbench-inventory
echo "fabricbench-inventory --compare exit $rc"
exit $rc

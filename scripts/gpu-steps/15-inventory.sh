#!/usr/bin/env bash
# FB_STEP_LIMIT=60
# The machine inventory's two GPU sources on the GPU host (issue 34): NVML (libnvidia-ml.so.1,
# dlopen) and the nvidia-smi fallback, compared: the 12 GPU fields; the GPU x GPU link matrix (NVLink
# states, remote PCI ids, common PCI ancestors against `topo -m`) and the P2P read matrix
# (nvmlDeviceGetP2PStatus against `topo -p2p r`), cell by cell; the NVLink speeds (state + speed
# fields against `nvlink -s`), a link count per GPU then link by link. Exit 1 where any differs or a
# source does not answer. Expected on the 2xH200 host: 0 differences over 24 fields, 4 link cells,
# 4 P2P cells and 38 NVLink counts and speeds (2 counts + 2 x 18 links); on one GPU 12 fields, 1
# cell each, 1 count + its links. The raw texts follow for the record, then the tool's default,
# then the summary lines again (the pass prints a step's last 4 lines).
$B/tools/fabricbench-inventory --compare > "$OUT/inventory-compare.txt" 2>&1; rc=$?
cat "$OUT/inventory-compare.txt"
nvidia-smi topo -m
nvidia-smi topo -p2p r
nvidia-smi nvlink -s
$B/tools/fabricbench-inventory
grep -E '^compare: [0-9]+ difference' "$OUT/inventory-compare.txt" | paste -sd ';'
echo "fabricbench-inventory --compare exit $rc"
exit $rc

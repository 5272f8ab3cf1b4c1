#!/usr/bin/env bash
# fabricbench-inventory on the doctor's fixture machines: the nvidia-smi answer field by field (GPUs,
# link and P2P matrices, NVLink speeds), --compare failing when NVML does not answer (a recorded
# machine has none), bad arguments exit 2.
set -u
tool=$1 data=$2
fails=0
check() {  # name, expected exit code, actual exit code, output, pattern that must appear
  if [ "$3" != "$2" ] || ! grep -qF -- "$5" <<< "$4"; then
    echo "FAIL $1: exit $3 (want $2); missing '$5' in:"; echo "$4" | head -20; fails=$((fails + 1))
  else
    echo "ok   $1"
  fi
}
out=$("$tool" --root "$data/h200x2" --gpu-source nvidia-smi 2>&1); rc=$?
check smi-source 0 $rc "$out" "GPUs: source nvidia-smi (NVML: not asked (nvidia-smi only)), 2 GPU(s)"
check smi-uuid 0 $rc "$out" "GPU1 uuid = GPU-3a819cdb-d032-6280-36f1-3b58795dc238"
check smi-width 0 $rc "$out" "GPU0 pcie.link.width.max = 16"
[ "$(grep -c ' = ' <<< "$out")" = 24 ] || { echo "FAIL smi-fields: want 24 field lines"; fails=$((fails + 1)); }
out=$("$tool" --root "$data/h200x2" 2>&1); rc=$?
check auto-fallback 0 $rc "$out" "GPUs: source nvidia-smi (NVML: no NVML on a recorded machine), 2 GPU(s)"
check links-fallback 0 $rc "$out" "GPU links: source nvidia-smi (NVML: no NVML on a recorded machine)"
check links-matrix 0 $rc "$out" "  GPU1 NV18 X"
check p2p-fallback 0 $rc "$out" "GPU P2P read: source nvidia-smi (NVML: no NVML on a recorded machine)"
check p2p-matrix 0 $rc "$out" "  GPU0 X OK"
check speeds-fallback 0 $rc "$out" "GPU NVLink speeds: source nvidia-smi (NVML: no NVML on a recorded machine)"
check speeds-gpu1 0 $rc "$out" "  GPU1 18 active link(s) GB/s: 26.562 26.562 26.562 26.562 26.562 26.562 26.562 26.562 26.562 26.562 26.562 26.562 26.562 26.562 26.562 26.562 26.562 26.562"
out=$("$tool" --root "$data/roce_ok" 2>&1); rc=$?
check rdma 0 $rc "$out" "RDMA mlx5_0 port 1: Ethernet, 4: ACTIVE, 100 Gb/sec (4X EDR), fw 20.35.1012, 4 GID(s)"
out=$("$tool" --root "$data/h200x2" --compare 2>&1); rc=$?
check compare-no-nvml 1 $rc "$out" "compare: not both sources answered (NVML: no, nvidia-smi: yes)"
# Each link fact is still compared, and each says NVML did not answer.
for what in links p2p "NVLink speeds"; do
  check "compare-no-nvml-$what" 1 $rc "$out" "compare: $what: not both sources answered (NVML: no, nvidia-smi: yes)"
done
check compare-no-nvml-speeds-count 1 $rc "$out" "compare: 1 difference(s) over 0 NVLink count(s) and speed(s)"
out=$("$tool" --gpu-source cuda 2>&1); rc=$?
check bad-source 2 $rc "$out" "--gpu-source 'cuda': expected auto, nvml or nvidia-smi"
[ "$(wc -l <<< "$out")" = 1 ] || { echo "FAIL bad-source: want one line"; fails=$((fails + 1)); }
out=$("$tool" --frobnicate 2>&1); rc=$?
check bad-arg 2 $rc "$out" "unknown argument '--frobnicate'"
echo "$fails failure(s)"
[ "$fails" = 0 ]

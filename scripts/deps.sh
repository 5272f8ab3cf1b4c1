#!/usr/bin/env bash
# Installs the Debian 12 packages fabricbench needs that are missing (as root; idempotent).
#   scripts/deps.sh build    what building and running the main job needs
#   scripts/deps.sh test     that, plus what the test suites drive (Slurm lab, Soft-RoCE VM, iperf3,
#                            headless Chromium for report_html, MPICH for the second CI pass: Open MPI
#                            stays the default mpicc/mpirun)
# CUDA and NCCL are not Debian packages: they are used from /usr/local/cuda when present.
set -euo pipefail
what=${1:-build}
case "$what" in build|test) ;; *) echo "deps.sh: bad argument '$what' (expected build or test)" >&2; exit 2 ;; esac
build=(cmake ninja-build ccache g++ pkg-config git python3 openmpi-bin libopenmpi-dev libbenchmark-dev libfmt-dev
       catch2 libcli11-dev nlohmann-json3-dev libeigen3-dev libibverbs-dev rdma-core ibverbs-providers gnuplot-nox
       iproute2 ethtool pciutils procps)
test=(slurmd slurmctld slurm-client slurm-wlm-basic-plugins munge libpmix2 mpich libmpich-dev iperf3 util-linux
      qemu-system-x86 busybox-static cpio kmod perftest ibverbs-utils rdmacm-utils chromium)
pkgs=("${build[@]}")
[ "$what" = test ] && pkgs+=("${test[@]}")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  if [ "$(id -u)" != 0 ]; then echo "deps: run as root to install packages" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "deps: all present (${#pkgs[@]} packages)"

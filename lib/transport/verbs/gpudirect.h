// GPUDirect RDMA: can the NIC DMA straight into GPU memory on this host?
//
// Two ways exist: the nvidia_peermem kernel module (or Mellanox's older nv_peer_mem), which lets
// plain ibv_reg_mr take a cudaMalloc pointer, and dma-buf (Linux >= 5.12, rdma-core >= 34, CUDA
// >= 11.7 with the open kernel modules): cuMemGetHandleForAddressRange exports the GPU buffer as
// a dma-buf file descriptor and ibv_reg_dmabuf_mr registers that. probeGpuDirect() looks for the
// module in /sys/module and, in CUDA builds, tries the dma-buf path for real on a 2 MiB buffer of
// GPU 0 (libcuda.so.1 is loaded with dlopen, so the probe costs nothing where there is no driver).
#pragma once
#include <infiniband/verbs.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "transport/verbs/verbs.h"

namespace fb::verbs {

struct GpuDirectStatus {
  bool possible = false;
  std::string via;  // "nvidia_peermem", "nv_peer_mem", "dma-buf", or "" when not possible
  std::string why;  // what was found or what refused
  std::string text() const { return std::string(possible ? "yes (" : "no (") + why + ")"; }
};

// The verdict from what was found (pure, unit-tested): a loaded peer-memory module wins; else the
// dma-buf probe's result; else why it was not tried.
//   peermemModule: "nvidia_peermem" / "nv_peer_mem" when /sys/module/<name> exists, else ""
//   cudaBuild: this build has CUDA (the dma-buf probe exists)
//   dmabufOk / dmabufWhy: the probe's result (ignored when !cudaBuild)
GpuDirectStatus gpuDirectVerdict(const std::string& peermemModule, bool cudaBuild, bool dmabufOk,
                                 const std::string& dmabufWhy);

// The loaded peer-memory module under sysModule ("/sys/module"), or "".
std::string loadedPeermemModule(const std::string& sysModule = "/sys/module");

// Whether GPUDirect RDMA could work between RDMA device `device` and GPU 0. The dma-buf part runs
// on a helper thread and is abandoned after `timeout` (a wedged driver must not hang --list).
// Cached per device for the life of the process.
GpuDirectStatus probeGpuDirect(const std::string& device,
                               std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace fb::verbs

// The inventory's NVML readers (inventory.cc chooses between them and the nvidia-smi texts): each
// reads one part through the caller's session and formats each answer as nvidia-smi prints the
// same field (nounits). Internal to lib/topology.
#pragma once
#include <string>
#include <vector>

#include "topology/inventory.h"
#include "topology/nvml.h"

namespace fb::topo {

struct NvmlRead {
  bool ok = false;
  std::string why;
  std::vector<GpuFacts> gpus;
  std::string driver;
};
NvmlRead readNvml(const NvmlSession& nv);
// The GPU x GPU matrix (see GpuLinkMatrix); false with out.nvmlWhy when NVML did not answer.
bool readNvmlLinks(const NvmlSession& nv, GpuLinkMatrix& out);
// The P2P read matrix (see readGpuP2p).
bool readNvmlP2p(const NvmlSession& nv, GpuLinkMatrix& out);
// The NVLink speeds (see readNvlinkSpeeds).
bool readNvmlSpeeds(const NvmlSession& nv, GpuNvlinkSpeeds& out);

}  // namespace fb::topo

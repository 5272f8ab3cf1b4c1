// Where each GPU and RDMA NIC of this node sits in the PCIe tree (sysfs), and what NCCL's own log
// says it did with them: a GPU whose traffic crosses PCIe root complexes to reach its NIC,
// GPUDirect RDMA possible but not used, sockets between nodes while an RDMA port is up. The NCCL
// backend puts these on the row as warnings; tests run them on real NCCL logs with fixture trees.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "topology/machine.h"
#include "topology/nccl_attest.h"

namespace fb::doctor {

using topo::Machine;

struct PciPlace {
  std::string bdf;                   // "0000:18:00.0"
  std::string hostBridge;            // "pci0000:17": the root complex the device hangs below
  std::vector<std::string> bridges;  // PCIe bridges above it, root port first
  int numa = -1;                     // numa_node, -1 unknown
};

struct PcieMap {
  std::map<std::string, PciPlace> gpus;      // NVIDIA GPUs by BDF
  std::map<std::string, PciPlace> nics;      // RDMA devices with a PCI function, by name ("mlx5_0")
  std::vector<std::string> activeRdmaPorts;  // "mlx5_0 port 1 (InfiniBand)" for each ACTIVE port
  std::string peerMemory;                    // "nvidia_peermem 535.129.03" when a peer-memory module is loaded, else ""
};

PcieMap readPcieMap(const Machine& m);

// How far apart two devices are, in nvidia-smi topo's words: "PXB" (below one PCIe switch, NCCL's
// default GPUDirect RDMA limit), "PHB" (same root complex), "NODE" (another root complex of the same
// NUMA node), "SYS" (across the CPU interconnect), "" unknown.
std::string pcieDistance(const PciPlace& a, const PciPlace& b);

// Warnings for the ranks of `host` in the log ("" = every rank in it), checked against this node's
// map: GPUs reaching their NIC across root complexes, GPUDirect RDMA possible but unused, and NCCL
// on sockets between nodes (`nodes` > 1) while an RDMA port is up. `gdrLevel`: the site's
// NCCL_NET_GDR_LEVEL, named in the GDR warning when set.
std::vector<std::string> ncclPlacementWarnings(const topo::NcclAttestation& a, const std::string& host,
                                               const PcieMap& map, int nodes, const std::string& gdrLevel = "");

}  // namespace fb::doctor

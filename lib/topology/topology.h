// The GPU and RDMA picture for --list, run.json and "% of nominal link rate", assembled from the
// machine inventory (inventory.h): GPUs, the link matrix and P2P capability matrix (`nvidia-smi
// topo -m` / `topo -p2p r` cells), NVLink links and per-link speed (`nvidia-smi nvlink -s`), each
// from NVML when it answers, else the nvidia-smi text; PCIe generation and width, NUMA/CPU
// affinity (topo -m text, else sysfs), RDMA ports. The text parsers are tested on saved real
// outputs (tests/topology); this library needs neither CUDA nor NVML to build.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/inventory.h"

namespace fb::topo {

// A square-ish matrix as nvidia-smi prints it: column names (GPU0.., NIC0.., "CPU Affinity",
// "NUMA Affinity", ...), rows by name, cells trimmed.
struct Matrix {
  std::vector<std::string> columns;
  std::vector<std::string> rowNames;
  std::vector<std::vector<std::string>> cells;  // cells[row][col]; "" where the row is short
  // Cell of row `row` in column `col` (both names); "" when absent.
  std::string at(const std::string& row, const std::string& col) const;
};
// `nvidia-smi topo -m` or `nvidia-smi topo -p2p r`: the table before the legend.
Matrix parseTopoMatrix(std::string_view text);

// `nvidia-smi nvlink -s`: per GPU index, the speed of each active link in GB/s (inactive links
// are left out).
std::map<int, std::vector<double>> parseNvlinkStatus(std::string_view text);

struct GpuInfo {
  int index = -1;
  std::string name;
  std::string busId;   // as nvidia-smi prints it: "00000000:18:00.0"
  std::string uuid;
  int pcieGenCurrent = 0, pcieGenMax = 0, pcieWidthCurrent = 0, pcieWidthMax = 0;
  int numaNode = -1;
  std::string cpuAffinity;
  std::vector<double> nvlinkGBps;  // one entry per active link
  double nvlinkTotalGBps() const;  // sum over active links (one direction)
};

// `nvidia-smi --query-gpu=<kGpuQueryFields> --format=csv,noheader,nounits`.
extern const char* const kGpuQueryFields;
std::vector<GpuInfo> parseGpuQuery(std::string_view csv);

// "32.0 GT/s PCIe" (sysfs current_link_speed) → 5; 0 when unknown.
int pcieGenFromSysfsSpeed(std::string_view speed);
// Nominal PCIe bandwidth in one direction, GB/s (1e9 B/s), after line coding: gen 3 0.985
// GB/s per lane, gen 4 1.969, gen 5 3.938, gen 6 7.563. 0 when unknown.
double pcieNominalGBps(int gen, int width);
// "200 Gb/sec (4X HDR)" (sysfs ports/N/rate) → 25.0 GB/s; 0 when unparsable.
double rdmaRateGBps(std::string_view rate);

struct RdmaPort {
  std::string device;  // mlx5_0
  int port = 1;
  std::string linkLayer;  // "InfiniBand" or "Ethernet"
  std::string state;      // "4: ACTIVE"
  std::string rate;       // "200 Gb/sec (4X HDR)"
  int roceV2GidIndex = -1;  // first RoCE v2 GID with an IPv4-mapped address (Ethernet ports)
  bool active() const;
};
// Every port of the inventory's RDMA devices (readRdma), in device then port order.
std::vector<RdmaPort> scanRdmaPorts(const Machine& m);
std::vector<RdmaPort> rdmaPorts(const std::vector<RdmaDeviceFacts>& devices);

struct Topology {
  std::vector<GpuInfo> gpus;
  Matrix links;      // nvidia-smi topo -m text: CPU/NUMA affinity and NIC columns
  GpuLinkMatrix gpuLinks;  // GPU x GPU link codes, by GPU index (NVML, else topo -m)
  GpuLinkMatrix p2pRead;   // GPU x GPU P2P read codes, by GPU index (NVML, else topo -p2p r)
  GpuNvlinkSpeeds nvlink;  // NVLink speeds by GPU index (NVML, else nvlink -s), copied to GpuInfo::nvlinkGBps
  std::string topoText;  // raw `nvidia-smi topo -m`, legend included
  std::string driverVersion;
  std::vector<RdmaPort> rdma;
  bool empty() const { return gpus.empty(); }
  // "NV18", "SYS", "PIX"... between GPU indices a and b ("" when unknown).
  std::string link(int a, int b) const;
  bool nvlinkBetween(int a, int b) const;
  bool p2pOk(int a, int b) const;  // topo -p2p r says OK
};

// Assemble from the texts above (pure; used by the tests).
Topology buildTopology(std::string_view topoM, std::string_view p2pR, std::string_view nvlinkS,
                       std::string_view gpuQueryCsv);
// The same from the inventory's GPUs (any source) and the link texts.
Topology buildTopology(std::string_view topoM, std::string_view p2pR, std::string_view nvlinkS,
                       const std::vector<GpuFacts>& gpus);
// The same from the inventory's answers (any source); topoM only for affinity and the picture.
Topology buildTopology(std::string_view topoM, GpuLinkMatrix gpuLinks, GpuLinkMatrix p2pRead,
                       const GpuNvlinkSpeeds& nvlink, const std::vector<GpuFacts>& gpus);

// The inventory of machine `m`: GPUs (NVML or nvidia-smi), the link texts, NUMA from sysfs where
// topo -m does not say, RDMA ports. No GPU → an empty Topology (no RDMA ports either), never an
// exception and never a hang (each nvidia-smi under a 20 s time-out).
Topology readTopology(const Machine& m);
// The same with the caller's NVML session, which every reader above shares (readTopology(m) uses
// nvmlSessionOf(m)).
Topology readTopology(const Machine& m, const NvmlSession& nvml);
// readTopology(Machine("/")), cached after the first call.
const Topology& localTopology();

// Nominal rate of the link between GPU `busId` and its peers `peerBusIds` (bus ids in any case, with
// or without nvidia-smi's 8-digit domain): NVLink to every peer → active links × link rate
// (NVML or nvidia-smi nvlink -s, named in the basis); otherwise the GPU's PCIe generation × width. gbps -1 when unknown.
struct LinkNominal {
  double gbps = -1;
  std::string basis;
};
LinkNominal gpuPeerNominal(const Topology& t, const std::string& busId, const std::vector<std::string>& peerBusIds);

// The `nvidia-smi topo -m` picture plus one line per GPU (PCIe, NVLink links × GB/s, NUMA) and
// per RDMA port. "" when there is no GPU.
std::string describe(const Topology& t);

}  // namespace fb::topo

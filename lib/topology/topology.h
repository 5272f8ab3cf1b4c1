// What the machine has, for --list, run.json and "% of nominal link rate": GPUs, the link matrix
// and P2P capability matrix (`nvidia-smi topo -m` / `topo -p2p r`), NVLink links and per-link
// speed (`nvidia-smi nvlink -s`), PCIe generation and width, NUMA/CPU affinity, RDMA ports (sysfs).
// Everything is read from nvidia-smi's text and sysfs, so the parsers are tested on saved real
// outputs (tests/topology) and this library needs neither CUDA nor NVML to build.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
// Scan <root>/class/infiniband (root = "/sys" normally; tests pass a saved tree).
std::vector<RdmaPort> scanRdmaPorts(const std::string& sysRoot = "/sys");

struct Topology {
  std::vector<GpuInfo> gpus;
  Matrix links;      // nvidia-smi topo -m
  Matrix p2pRead;    // nvidia-smi topo -p2p r
  std::string topoText;  // raw `nvidia-smi topo -m`, legend included
  std::string driverVersion;
  std::vector<RdmaPort> rdma;
  bool empty() const { return gpus.empty(); }
  // "NV18", "SYS", "PIX"... between GPU indices a and b ("" when unknown).
  std::string link(int a, int b) const;
  bool nvlinkBetween(int a, int b) const;
  bool p2pOk(int a, int b) const;  // topo -p2p r says OK
};

// Assemble from the texts above (pure; used by collect() and by the tests).
Topology buildTopology(std::string_view topoM, std::string_view p2pR, std::string_view nvlinkS,
                       std::string_view gpuQueryCsv);

// Runs nvidia-smi (each call under `timeout 20`), reads sysfs. No GPU or no nvidia-smi → an
// empty Topology, never an exception and never a hang. Cached after the first call.
const Topology& localTopology();

// Nominal rate of the link between GPU `busId` and its peers `peerBusIds` (bus ids in any case, with
// or without nvidia-smi's 8-digit domain): NVLink to every peer → active links × link rate
// (nvidia-smi nvlink -s); otherwise the GPU's PCIe generation × width. gbps -1 when unknown.
struct LinkNominal {
  double gbps = -1;
  std::string basis;
};
LinkNominal gpuPeerNominal(const Topology& t, const std::string& busId, const std::vector<std::string>& peerBusIds);

// The `nvidia-smi topo -m` picture plus one line per GPU (PCIe, NVLink links × GB/s, NUMA) and
// per RDMA port. "" when there is no GPU.
std::string describe(const Topology& t);

// Runs a shell command with a time limit; returns its stdout ("" on failure).
std::string runCommand(const std::string& cmd, int timeoutSeconds = 20);

}  // namespace fb::topo

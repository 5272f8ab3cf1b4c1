// The one machine inventory: what this node has, read through a Machine (machine.h) so a fixture
// tree replaces the node for every reader. The fingerprint serialises it, the doctor judges it,
// verbs discovery and the nominal link rates (topology.h) are built from it.
//   RDMA: /sys/class/infiniband (devices, ports, GID tables).
//   GPUs: NVML (libnvidia-ml.so.1, opened with dlopen as NCCL does; nvml.h, read by inventory_nvml.cc), else the
//         `nvidia-smi --query-gpu` text, and the inventory says which one answered.
//   GPU links: the GPU x GPU matrix of `nvidia-smi topo -m` (NV#, PIX, PXB, PHB, NODE, SYS) from
//         NVML (active NVLinks and their remote PCI bus ids, the closest common PCI ancestor of
//         each pair), the P2P read matrix of `topo -p2p r` (nvmlDeviceGetP2PStatus) and the NVLink
//         speeds of `nvlink -s` (NVLink state, version and speed field values); each from NVML,
//         else its nvidia-smi text, saying which. The `topo -m` text stays the picture (NICs, CPU
//         and NUMA affinity) that NVML does not give.
// Each part is read on its own (readRdma, readGpus, gpuLinks...): a caller pays for what it uses;
// NVML is initialised once per process however many parts are read (nvml.h, NvmlSession).
#pragma once
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "topology/machine.h"
#include "topology/nvml.h"

namespace fb::topo {

// ---- RDMA (sysfs text as the kernel writes it, trimmed first lines)
struct RdmaGid {
  int index = 0;
  std::string gid;     // "0000:0000:0000:0000:0000:ffff:0a00:0005" (never all zero)
  std::string type;    // gid_attrs/types/<i>: "RoCE v2", "IB/RoCE v1", "" when absent
  std::string netdev;  // gid_attrs/ndevs/<i>, "" when absent
};
struct RdmaPortFacts {
  int port = 1;
  std::string state, physState, rate, linkLayer;  // "4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)", "InfiniBand"
  std::string netdev;  // gid_attrs/ndevs/0, else the device's first netdev, else ""
  std::vector<RdmaGid> gids;  // populated entries, by index
  std::map<std::string, long long> counters;  // ports/<p>/counters/<name> that read as integers
  bool active() const { return state.find("ACTIVE") != std::string::npos; }
};
struct RdmaDeviceFacts {
  std::string name;  // mlx5_0
  std::string fwVer, hcaType, boardId, nodeType;
  std::vector<std::string> netdevs;   // device/net, sorted
  std::vector<RdmaPortFacts> ports;   // by port number
};
// Every device of /sys/class/infiniband (sorted by name); empty when absent.
std::vector<RdmaDeviceFacts> readRdma(const Machine& m);

// ---- GPUs. Every fact as nvidia-smi prints it with --format=csv,noheader,nounits ("[N/A]" where
// the GPU does not support it), whichever source answered, so the two compare field by field.
struct GpuFacts {
  std::string index, name, uuid, busId, memoryMib, driverVersion, vbiosVersion;
  std::string pcieGenCurrent, pcieGenMax, pcieWidthCurrent, pcieWidthMax;
  std::string migMode;  // "Enabled", "Disabled", "[N/A]"
};
// The names of the fields above, in order (the GPU step prints and compares them).
const std::vector<std::string>& gpuFactNames();
std::vector<std::string> gpuFactValues(const GpuFacts& g);

// The nvidia-smi query the fallback runs (one query for every reader).
extern const char* const kInventoryGpuQuery;  // index,name,uuid,pci.bus_id,...,mig.mode.current
// Its output -> one GpuFacts per line with all 12 fields (other lines are skipped).
std::vector<GpuFacts> parseInventoryGpuQuery(const std::string& csv);

enum class GpuSource { kAuto, kNvml, kNvidiaSmi };

struct GpuInventory {
  std::string source;   // "nvml", "nvidia-smi", "" when neither answered
  std::string nvmlWhy;  // why NVML did not answer ("" when it did)
  // The nvidia-smi fallback, when it ran: found in PATH, exited 0, why not, its stdout.
  bool smiFound = false, smiOk = false;
  std::string smiError, smiOut;
  std::vector<GpuFacts> gpus;
  std::string driverVersion;  // the first GPU's
};

// Every NVML reader below takes the caller's session and opens none itself. Given none, it uses
// nvmlSessionOf(m): this process's session on the real machine (systemNvmlSession, opened by the
// first reader that asks NVML; kNvidiaSmi opens none), and none on a recorded machine, whose NVML
// would describe this host instead ("no NVML on a recorded machine").
const NvmlSession& nvmlSessionOf(const Machine& m, GpuSource want = GpuSource::kAuto);

// kAuto: NVML when the session is open, else nvidia-smi through `m`. kNvml / kNvidiaSmi: that
// source only (the GPU step compares them).
GpuInventory readGpus(const Machine& m, GpuSource want = GpuSource::kAuto,
                      std::chrono::milliseconds timeout = std::chrono::seconds(20));
GpuInventory readGpus(const Machine& m, const NvmlSession& session, GpuSource want = GpuSource::kAuto,
                      std::chrono::milliseconds timeout = std::chrono::seconds(20));

// ---- GPU links. The GPU x GPU part of `nvidia-smi topo -m`, from either source, so the two
// compare cell by cell: "X" (self), "NV<links>", "PIX", "PXB", "PHB", "NODE", "SYS". Through an
// NVSwitch every pair that both reach it shows NV<the smaller link count>, as nvidia-smi prints it.
struct GpuLinkMatrix {
  std::string source;   // "nvml", "nvidia-smi", "" when neither answered
  std::string nvmlWhy;  // why NVML did not answer ("" when it did)
  std::string smiError; // why `nvidia-smi topo -m` did not answer, when it ran
  std::vector<std::vector<std::string>> code;  // [GPU index][GPU index]
  std::vector<int> activeNvlinks;              // per GPU; from NVML only (-1 from the text)
  std::string cell(int a, int b) const;        // code[a][b]; "" when either index is out of range
};
GpuLinkMatrix readGpuLinks(const Machine& m, GpuSource want = GpuSource::kAuto,
                           std::chrono::milliseconds timeout = std::chrono::seconds(20));
GpuLinkMatrix readGpuLinks(const Machine& m, const NvmlSession& session, GpuSource want = GpuSource::kAuto,
                           std::chrono::milliseconds timeout = std::chrono::seconds(20));
// `nvidia-smi topo -m` text -> its GPU x GPU cells (GPU columns and rows only).
std::vector<std::vector<std::string>> gpuCodesOfTopoMatrix(const std::string& text);

// ---- P2P read capability, GPU x GPU, as `nvidia-smi topo -p2p r` prints it: "X", "OK", "CNS"
// (chipset), "GNS" (GPU), "TNS" (topology), "NS" (not supported), "U" (unknown). activeNvlinks is
// left empty. The text's cells are read by gpuCodesOfTopoMatrix (same layout as topo -m).
GpuLinkMatrix readGpuP2p(const Machine& m, GpuSource want = GpuSource::kAuto,
                         std::chrono::milliseconds timeout = std::chrono::seconds(20));
GpuLinkMatrix readGpuP2p(const Machine& m, const NvmlSession& session, GpuSource want = GpuSource::kAuto,
                         std::chrono::milliseconds timeout = std::chrono::seconds(20));
// nvmlGpuP2PStatus_t -> the topo -p2p code ("OK", "CNS", ...).
std::string p2pStatusCode(int status);

// ---- NVLink speeds, as `nvidia-smi nvlink -s` prints them: per GPU index, the GB/s of each active
// link in link order (NVML's MBps / 1000: 26562 -> 26.562); a GPU without NVLink has an empty list.
struct GpuNvlinkSpeeds {
  std::string source;   // "nvml", "nvidia-smi", "" when neither answered
  std::string nvmlWhy;  // why NVML did not answer ("" when it did)
  std::string smiError; // why `nvidia-smi nvlink -s` did not answer, when it ran
  std::map<int, std::vector<double>> gbps;
  std::map<int, std::vector<unsigned>> version;  // NVLink version per active link; from NVML only
};
GpuNvlinkSpeeds readNvlinkSpeeds(const Machine& m, GpuSource want = GpuSource::kAuto,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(20));
GpuNvlinkSpeeds readNvlinkSpeeds(const Machine& m, const NvmlSession& session, GpuSource want = GpuSource::kAuto,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(20));
// A speed as nvidia-smi prints it and as --compare compares it: "26.562" (three decimals).
std::string nvlinkSpeedText(double gbps);

// ---- NVML against nvidia-smi (fabricbench-inventory --compare and the GPU step): the differences,
// one line each, and how many cells or speeds were compared. A source that did not answer is one
// difference. Speeds compare as nvlinkSpeedText; a GPU missing from one side has no links there.
struct SourceComparison {
  int differ = 0;
  std::size_t compared = 0;
  std::vector<std::string> lines;  // "compare: ..." per difference
};
// `what` names the matrix in the lines: "links", "p2p".
SourceComparison compareGpuMatrices(const std::string& what, const GpuLinkMatrix& nvml, const GpuLinkMatrix& smi);
SourceComparison compareNvlinkSpeeds(const GpuNvlinkSpeeds& nvml, const GpuNvlinkSpeeds& smi);

// ---- GPU links (nvidia-smi text): `topo -m`, `topo -p2p r`, `nvlink -s`.
Command gpuTopoMatrix(const Machine& m, std::chrono::milliseconds timeout = std::chrono::seconds(20));
Command gpuP2pReadMatrix(const Machine& m, std::chrono::milliseconds timeout = std::chrono::seconds(20));
Command gpuNvlinkStatus(const Machine& m, std::chrono::milliseconds timeout = std::chrono::seconds(20));

}  // namespace fb::topo

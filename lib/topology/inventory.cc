#include "topology/inventory.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>

#include "core/text.h"
#include "topology/inventory_nvml.h"
#include "topology/topology.h"

namespace fb::topo {
namespace {

const std::string kIb = "/sys/class/infiniband/";

std::vector<int> numericEntries(const Machine& m, const std::string& dir) {
  std::vector<int> out;
  for (const auto& e : m.list(dir)) {
    try {
      std::size_t pos = 0;
      int v = std::stoi(e, &pos);
      if (pos == e.size() && v >= 0) out.push_back(v);
    } catch (...) {
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool zeroGid(const std::string& g) {
  for (char c : g)
    if (c != '0' && c != ':') return false;
  return true;
}

}  // namespace

// ------------------------------------------------------------------ RDMA
std::vector<RdmaDeviceFacts> readRdma(const Machine& m) {
  std::vector<RdmaDeviceFacts> out;
  for (const auto& name : m.list("/sys/class/infiniband")) {
    RdmaDeviceFacts d;
    d.name = name;
    std::string base = kIb + name + "/";
    d.fwVer = m.line(base + "fw_ver");
    d.hcaType = m.line(base + "hca_type");
    d.boardId = m.line(base + "board_id");
    d.nodeType = m.line(base + "node_type");
    d.netdevs = m.list(base + "device/net");
    for (int n : numericEntries(m, base + "ports")) {
      RdmaPortFacts p;
      p.port = n;
      std::string pd = base + "ports/" + std::to_string(n) + "/";
      p.state = m.line(pd + "state");
      p.physState = m.line(pd + "phys_state");
      p.rate = m.line(pd + "rate");
      p.linkLayer = m.line(pd + "link_layer");
      p.netdev = m.line(pd + "gid_attrs/ndevs/0");
      if (p.netdev.empty() && !d.netdevs.empty()) p.netdev = d.netdevs[0];
      for (int i : numericEntries(m, pd + "gids")) {
        std::string g = m.line(pd + "gids/" + std::to_string(i));
        if (g.empty() || zeroGid(g)) continue;  // unused slots read as zeros or fail (EINVAL)
        p.gids.push_back({i, g, m.line(pd + "gid_attrs/types/" + std::to_string(i)),
                          m.line(pd + "gid_attrs/ndevs/" + std::to_string(i))});
      }
      for (const auto& c : m.list(pd + "counters")) {
        std::string v = m.line(pd + "counters/" + c);
        try {
          std::size_t pos = 0;
          long long n = std::stoll(v, &pos);
          if (pos == v.size()) p.counters[c] = n;
        } catch (...) {
        }
      }
      d.ports.push_back(std::move(p));
    }
    out.push_back(std::move(d));
  }
  return out;
}

// ------------------------------------------------------------------ GPUs
const char* const kInventoryGpuQuery =
    "index,name,uuid,pci.bus_id,memory.total,driver_version,vbios_version,pcie.link.gen.current,"
    "pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,mig.mode.current";

const std::vector<std::string>& gpuFactNames() {
  static const std::vector<std::string> k = {"index", "name", "uuid", "pci.bus_id", "memory.total",
                                             "driver_version", "vbios_version", "pcie.link.gen.current",
                                             "pcie.link.gen.max", "pcie.link.width.current",
                                             "pcie.link.width.max", "mig.mode.current"};
  return k;
}

std::vector<std::string> gpuFactValues(const GpuFacts& g) {
  return {g.index,          g.name,       g.uuid,           g.busId,        g.memoryMib,        g.driverVersion,
          g.vbiosVersion,   g.pcieGenCurrent, g.pcieGenMax, g.pcieWidthCurrent, g.pcieWidthMax, g.migMode};
}

std::vector<GpuFacts> parseInventoryGpuQuery(const std::string& csv) {
  std::vector<GpuFacts> out;
  for (const auto& l : text::lines(csv)) {
    if (text::trim(l).empty()) continue;
    auto f = text::fields(l, ',');
    if (f.size() != 12) continue;  // a GPU name with a comma lands here: skipped, not misread
    out.push_back({f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11]});
  }
  return out;
}

const NvmlSession& nvmlSessionOf(const Machine& m, GpuSource want) {
  static const NvmlSession none(noNvml("no NVML on a recorded machine"));
  static const NvmlSession notAsked(noNvml("not asked (nvidia-smi only)"));
  if (!m.real()) return none;
  return want == GpuSource::kNvidiaSmi ? notAsked : systemNvmlSession();
}

GpuInventory readGpus(const Machine& m, GpuSource want, std::chrono::milliseconds timeout) {
  return readGpus(m, nvmlSessionOf(m, want), want, timeout);
}

GpuInventory readGpus(const Machine& m, const NvmlSession& session, GpuSource want, std::chrono::milliseconds timeout) {
  GpuInventory inv;
  if (want != GpuSource::kNvidiaSmi) {
    NvmlRead r = readNvml(session);
    if (r.ok) {
      inv.source = "nvml";
      inv.gpus = std::move(r.gpus);
      inv.driverVersion = r.driver;
      return inv;
    }
    inv.nvmlWhy = r.why;
    if (want == GpuSource::kNvml) return inv;
  } else {
    inv.nvmlWhy = "not asked (nvidia-smi only)";
  }
  auto c = m.run({"nvidia-smi", std::string("--query-gpu=") + kInventoryGpuQuery, "--format=csv,noheader,nounits"},
                 timeout);
  inv.smiFound = c.found;
  inv.smiOk = c.ok;
  inv.smiError = c.error;
  inv.smiOut = c.out;
  if (!c.ok) return inv;
  inv.source = "nvidia-smi";
  inv.gpus = parseInventoryGpuQuery(c.out);
  if (!inv.gpus.empty()) inv.driverVersion = inv.gpus[0].driverVersion;
  return inv;
}

// ------------------------------------------------------------------ GPU links
std::vector<std::vector<std::string>> gpuCodesOfTopoMatrix(const std::string& text) {
  Matrix mx = parseTopoMatrix(text);
  std::vector<std::string> gpus;
  for (const auto& c : mx.columns)
    if (c.rfind("GPU", 0) == 0 && c.size() > 3 && std::isdigit(static_cast<unsigned char>(c[3])) &&
        c.find(' ') == std::string::npos)
      gpus.push_back(c);
  std::vector<std::vector<std::string>> code(gpus.size(), std::vector<std::string>(gpus.size()));
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (std::size_t j = 0; j < gpus.size(); ++j) code[i][j] = mx.at(gpus[i], gpus[j]);
  return code;
}

GpuLinkMatrix readGpuLinks(const Machine& m, GpuSource want, std::chrono::milliseconds timeout) {
  return readGpuLinks(m, nvmlSessionOf(m, want), want, timeout);
}

namespace {
// NVML first (`fromNvml`), else the nvidia-smi command `smi` read by `fromText`, saying which; a
// source named alone is the only one asked.
template <class T, class Nvml, class Smi, class Text>
T nvmlElseText(const Machine& m, const NvmlSession& session, GpuSource want, std::chrono::milliseconds timeout,
               Nvml fromNvml, Smi smi, Text fromText) {
  T out;
  if (want != GpuSource::kNvidiaSmi) {
    if (fromNvml(session, out) || want == GpuSource::kNvml) return out;
  } else {
    out.nvmlWhy = "not asked (nvidia-smi only)";
  }
  Command c = smi(m, timeout);
  if (!c.ok) {
    out.smiError = c.found ? c.error : "nvidia-smi not found";
    return out;
  }
  out.source = "nvidia-smi";
  fromText(c.out, out);
  return out;
}
}  // namespace

std::string GpuLinkMatrix::cell(int a, int b) const {
  if (a < 0 || b < 0 || static_cast<std::size_t>(a) >= code.size()) return {};
  const auto& row = code[static_cast<std::size_t>(a)];
  return static_cast<std::size_t>(b) < row.size() ? row[static_cast<std::size_t>(b)] : std::string();
}

GpuLinkMatrix readGpuLinks(const Machine& m, const NvmlSession& session, GpuSource want, std::chrono::milliseconds timeout) {
  return nvmlElseText<GpuLinkMatrix>(m, session, want, timeout, readNvmlLinks, gpuTopoMatrix,
                                     [](const std::string& text, GpuLinkMatrix& out) {
                                       out.code = gpuCodesOfTopoMatrix(text);
                                       out.activeNvlinks.assign(out.code.size(), -1);
                                     });
}

GpuLinkMatrix readGpuP2p(const Machine& m, GpuSource want, std::chrono::milliseconds timeout) {
  return readGpuP2p(m, nvmlSessionOf(m, want), want, timeout);
}

GpuLinkMatrix readGpuP2p(const Machine& m, const NvmlSession& session, GpuSource want, std::chrono::milliseconds timeout) {
  return nvmlElseText<GpuLinkMatrix>(m, session, want, timeout, readNvmlP2p, gpuP2pReadMatrix,
                                     [](const std::string& text, GpuLinkMatrix& out) {
                                       out.code = gpuCodesOfTopoMatrix(text);
                                     });
}

std::string p2pStatusCode(int status) {
  switch (status) {
    case 0: return "OK";
    case 1: return "CNS";
    case 2: return "GNS";
    case 3: return "TNS";
    case 4: return "NS";  // disabled by a registry key: topo -p2p's legend has no own code for it
    case 5: return "NS";
    default: return "U";
  }
}

GpuNvlinkSpeeds readNvlinkSpeeds(const Machine& m, GpuSource want, std::chrono::milliseconds timeout) {
  return readNvlinkSpeeds(m, nvmlSessionOf(m, want), want, timeout);
}

GpuNvlinkSpeeds readNvlinkSpeeds(const Machine& m, const NvmlSession& session, GpuSource want,
                                 std::chrono::milliseconds timeout) {
  return nvmlElseText<GpuNvlinkSpeeds>(m, session, want, timeout, readNvmlSpeeds, gpuNvlinkStatus,
                                       [](const std::string& text, GpuNvlinkSpeeds& out) {
                                         out.gbps = parseNvlinkStatus(text);
                                       });
}

std::string nvlinkSpeedText(double gbps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", gbps);
  return buf;
}

// ------------------------------------------------------------------ NVML against nvidia-smi
namespace {
bool bothAnswered(const std::string& what, const std::string& nvml, const std::string& smi, SourceComparison& c) {
  if (nvml == "nvml" && smi == "nvidia-smi") return true;
  ++c.differ;
  c.lines.push_back("compare: " + what + ": not both sources answered (NVML: " + (nvml.empty() ? "no" : "yes") +
                    ", nvidia-smi: " + (smi.empty() ? "no" : "yes") + ")");
  return false;
}
}  // namespace

SourceComparison compareGpuMatrices(const std::string& what, const GpuLinkMatrix& nv, const GpuLinkMatrix& smi) {
  SourceComparison c;
  if (!bothAnswered(what, nv.source, smi.source, c)) return c;
  if (nv.code.size() != smi.code.size()) {
    ++c.differ;
    c.lines.push_back("compare: " + what + ": NVML has " + std::to_string(nv.code.size()) + " GPU(s), nvidia-smi " +
                      std::to_string(smi.code.size()));
  }
  for (std::size_t i = 0; i < std::min(nv.code.size(), smi.code.size()); ++i) {
    if (nv.code[i].size() != smi.code[i].size()) {
      ++c.differ;
      c.lines.push_back("compare: " + what + " GPU" + std::to_string(i) + ": NVML has " +
                        std::to_string(nv.code[i].size()) + " cell(s), nvidia-smi " + std::to_string(smi.code[i].size()));
    }
    for (std::size_t j = 0; j < std::min(nv.code[i].size(), smi.code[i].size()); ++j, ++c.compared)
      if (nv.code[i][j] != smi.code[i][j]) {
        ++c.differ;
        c.lines.push_back("compare: " + what + " GPU" + std::to_string(i) + "-GPU" + std::to_string(j) + ": NVML '" +
                          nv.code[i][j] + "', nvidia-smi '" + smi.code[i][j] + "'");
      }
  }
  return c;
}

SourceComparison compareNvlinkSpeeds(const GpuNvlinkSpeeds& nv, const GpuNvlinkSpeeds& smi) {
  SourceComparison c;
  if (!bothAnswered("NVLink speeds", nv.source, smi.source, c)) return c;
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> both;
  for (const auto& [gpu, v] : nv.gbps) both[gpu].first = v;
  for (const auto& [gpu, v] : smi.gbps) both[gpu].second = v;
  for (const auto& [gpu, p] : both) {
    const auto& [a, b] = p;
    const std::string g = "compare: NVLink GPU" + std::to_string(gpu);
    ++c.compared;  // the link count
    if (a.size() != b.size()) {
      ++c.differ;
      c.lines.push_back(g + ": NVML has " + std::to_string(a.size()) + " active link(s), nvidia-smi " +
                        std::to_string(b.size()));
    }
    for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k, ++c.compared)
      if (nvlinkSpeedText(a[k]) != nvlinkSpeedText(b[k])) {
        ++c.differ;
        c.lines.push_back(g + " active link #" + std::to_string(k) + ": NVML " + nvlinkSpeedText(a[k]) +
                          " GB/s, nvidia-smi " + nvlinkSpeedText(b[k]) + " GB/s");
      }
  }
  return c;
}

Command gpuTopoMatrix(const Machine& m, std::chrono::milliseconds timeout) {
  return m.run({"nvidia-smi", "topo", "-m"}, timeout);
}
Command gpuP2pReadMatrix(const Machine& m, std::chrono::milliseconds timeout) {
  return m.run({"nvidia-smi", "topo", "-p2p", "r"}, timeout);
}
Command gpuNvlinkStatus(const Machine& m, std::chrono::milliseconds timeout) {
  return m.run({"nvidia-smi", "nvlink", "-s"}, timeout);
}

}  // namespace fb::topo

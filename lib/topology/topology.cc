#include "topology/topology.h"
#include "core/text.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <mutex>
#include <regex>
#include <sstream>

namespace fb::topo {
namespace {

// ANSI escapes (nvidia-smi colours the header on a terminal) are dropped.
std::string stripAnsi(const std::string& s) {
  static const std::regex kAnsi("\x1b\\[[0-9;]*m");
  return std::regex_replace(s, kAnsi, "");
}

int toInt(const std::string& s, int dflt = 0) {
  try {
    std::size_t pos = 0;
    int v = std::stoi(s, &pos);
    return pos ? v : dflt;
  } catch (...) {
    return dflt;
  }
}

}  // namespace

std::string Matrix::at(const std::string& row, const std::string& col) const {
  for (std::size_t r = 0; r < rowNames.size(); ++r) {
    if (rowNames[r] != row) continue;
    for (std::size_t c = 0; c < columns.size(); ++c)
      if (columns[c] == col) return c < cells[r].size() ? cells[r][c] : std::string();
  }
  return {};
}

Matrix parseTopoMatrix(std::string_view text) {
  Matrix m;
  bool inTable = false;
  for (const auto& raw : text::lines(text)) {
    std::string line = stripAnsi(raw);
    if (!inTable) {
      // The header starts with a tab (or spaces) and names GPU0 first.
      auto t = text::trim(line);
      if (t.rfind("GPU0", 0) == 0 && !line.empty() && (line[0] == '\t' || line[0] == ' ')) {
        for (auto& f : text::fields(line, '\t'))
          if (!f.empty()) m.columns.push_back(f);
        inTable = true;
      }
      continue;
    }
    if (text::trim(line).empty() || text::trim(line).rfind("Legend", 0) == 0) break;
    auto fields = text::fields(line, '\t');
    if (fields.empty()) continue;
    std::vector<std::string> cells;
    // Row name, then cells; nvidia-smi pads with an empty field before some columns.
    std::string name = fields[0];
    for (std::size_t i = 1; i < fields.size(); ++i)
      if (!fields[i].empty()) cells.push_back(fields[i]);
    m.rowNames.push_back(name);
    m.cells.push_back(std::move(cells));
  }
  return m;
}

std::map<int, std::vector<double>> parseNvlinkStatus(std::string_view text) {
  std::map<int, std::vector<double>> out;
  static const std::regex kGpu(R"(^GPU (\d+):)");
  static const std::regex kLink(R"(Link (\d+): ([0-9.]+) GB/s)");
  int gpu = -1;
  std::smatch m;
  for (const auto& l : text::lines(text)) {
    if (std::regex_search(l, m, kGpu)) {
      gpu = std::stoi(m[1]);
      out[gpu];
    } else if (gpu >= 0 && std::regex_search(l, m, kLink)) {
      out[gpu].push_back(std::stod(m[2]));
    }
  }
  return out;
}

double GpuInfo::nvlinkTotalGBps() const {
  double s = 0;
  for (double v : nvlinkGBps) s += v;
  return s;
}

const char* const kGpuQueryFields =
    "index,name,pci.bus_id,uuid,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,"
    "pcie.link.width.max,driver_version";

std::vector<GpuInfo> parseGpuQuery(std::string_view csv) {
  std::vector<GpuInfo> out;
  for (const auto& l : text::lines(csv)) {
    if (text::trim(l).empty()) continue;
    std::vector<std::string> f;
    std::string cur;
    for (char c : l) {
      if (c == ',') {
        f.push_back(text::trim(cur));
        cur.clear();
      } else {
        cur += c;
      }
    }
    f.push_back(text::trim(cur));
    if (f.size() < 8) continue;
    GpuInfo g;
    g.index = toInt(f[0], -1);
    if (g.index < 0) continue;  // header or garbage
    g.name = f[1];
    g.busId = f[2];
    g.uuid = f[3];
    g.pcieGenCurrent = toInt(f[4]);
    g.pcieGenMax = toInt(f[5]);
    g.pcieWidthCurrent = toInt(f[6]);
    g.pcieWidthMax = toInt(f[7]);
    out.push_back(std::move(g));
  }
  return out;
}

int pcieGenFromSysfsSpeed(std::string_view speed) {
  double gts = 0;
  try {
    gts = std::stod(std::string(speed));
  } catch (...) {
    return 0;
  }
  if (gts >= 63) return 6;
  if (gts >= 31) return 5;
  if (gts >= 15) return 4;
  if (gts >= 7.9) return 3;
  if (gts >= 4.9) return 2;
  if (gts >= 2.4) return 1;
  return 0;
}

double pcieNominalGBps(int gen, int width) {
  static const std::array<double, 7> kPerLane = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
  if (gen < 1 || gen > 6 || width <= 0) return 0;
  return kPerLane[gen] * width;
}

double rdmaRateGBps(std::string_view rate) {
  try {
    double gbit = std::stod(std::string(rate));
    return gbit / 8.0;
  } catch (...) {
    return 0;
  }
}

bool RdmaPort::active() const { return state.find("ACTIVE") != std::string::npos; }

std::vector<RdmaPort> rdmaPorts(const std::vector<RdmaDeviceFacts>& devices) {
  std::vector<RdmaPort> out;
  for (const auto& d : devices)
    for (const auto& p : d.ports) {
      RdmaPort rp;
      rp.device = d.name;
      rp.port = p.port;
      rp.linkLayer = p.linkLayer;
      rp.state = p.state;
      rp.rate = p.rate;
      if (rp.linkLayer == "Ethernet")
        for (const auto& g : p.gids)
          if (g.type.find("v2") != std::string::npos && g.gid.rfind("0000:0000:0000:0000:0000:ffff:", 0) == 0) {
            rp.roceV2GidIndex = g.index;
            break;
          }
      out.push_back(std::move(rp));
    }
  return out;
}

std::vector<RdmaPort> scanRdmaPorts(const Machine& m) { return rdmaPorts(readRdma(m)); }

std::string Topology::link(int a, int b) const { return gpuLinks.cell(a, b); }

bool Topology::nvlinkBetween(int a, int b) const { return link(a, b).rfind("NV", 0) == 0; }

bool Topology::p2pOk(int a, int b) const {
  if (a == b) return true;
  return p2pRead.cell(a, b) == "OK";
}

namespace {
// The inventory's text answers as the NVML ones would be: cells of the texts, "nvidia-smi" where
// the text is there.
GpuLinkMatrix codesOfText(std::string_view text) {
  GpuLinkMatrix m;
  if (text.empty()) return m;
  m.source = "nvidia-smi";
  m.code = gpuCodesOfTopoMatrix(std::string(text));
  return m;
}
GpuNvlinkSpeeds speedsOfText(std::string_view text) {
  GpuNvlinkSpeeds s;
  if (text.empty()) return s;
  s.source = "nvidia-smi";
  s.gbps = parseNvlinkStatus(text);
  return s;
}
// Links, NVLink speeds and NUMA/CPU affinity onto the GPUs of t.
void addLinks(Topology& t, std::string_view topoM, GpuLinkMatrix gpuLinks, GpuLinkMatrix p2pRead,
              const GpuNvlinkSpeeds& nvlink) {
  t.topoText = stripAnsi(std::string(topoM));
  t.links = parseTopoMatrix(topoM);
  t.gpuLinks = std::move(gpuLinks);
  t.p2pRead = std::move(p2pRead);
  t.nvlink = nvlink;
  for (auto& g : t.gpus) {
    auto it = nvlink.gbps.find(g.index);
    if (it != nvlink.gbps.end()) g.nvlinkGBps = it->second;
    std::string row = "GPU" + std::to_string(g.index);
    g.cpuAffinity = t.links.at(row, "CPU Affinity");
    std::string numa = t.links.at(row, "NUMA Affinity");
    g.numaNode = toInt(numa, -1);
  }
}
}  // namespace

Topology buildTopology(std::string_view topoM, std::string_view p2pR, std::string_view nvlinkS,
                       std::string_view gpuQueryCsv) {
  Topology t;
  t.gpus = parseGpuQuery(gpuQueryCsv);
  // driver version: last CSV field of the first GPU line
  for (const auto& l : text::lines(gpuQueryCsv)) {
    auto pos = l.rfind(',');
    if (pos != std::string::npos && toInt(text::trim(l.substr(0, l.find(','))), -1) >= 0) {
      t.driverVersion = text::trim(l.substr(pos + 1));
      break;
    }
  }
  addLinks(t, topoM, codesOfText(topoM), codesOfText(p2pR), speedsOfText(nvlinkS));
  return t;
}

Topology buildTopology(std::string_view topoM, std::string_view p2pR, std::string_view nvlinkS,
                       const std::vector<GpuFacts>& gpus) {
  return buildTopology(topoM, codesOfText(topoM), codesOfText(p2pR), speedsOfText(nvlinkS), gpus);
}

Topology buildTopology(std::string_view topoM, GpuLinkMatrix gpuLinks, GpuLinkMatrix p2pRead,
                       const GpuNvlinkSpeeds& nvlink, const std::vector<GpuFacts>& gpus) {
  Topology t;
  for (const auto& f : gpus) {
    GpuInfo g;
    g.index = toInt(f.index, -1);
    if (g.index < 0) continue;
    g.name = f.name;
    g.busId = f.busId;
    g.uuid = f.uuid;
    g.pcieGenCurrent = toInt(f.pcieGenCurrent);
    g.pcieGenMax = toInt(f.pcieGenMax);
    g.pcieWidthCurrent = toInt(f.pcieWidthCurrent);
    g.pcieWidthMax = toInt(f.pcieWidthMax);
    if (t.gpus.empty()) t.driverVersion = f.driverVersion;
    t.gpus.push_back(std::move(g));
  }
  addLinks(t, topoM, std::move(gpuLinks), std::move(p2pRead), nvlink);
  return t;
}

namespace {
std::string busKey(std::string b) {  // last 12 characters, lower case: "18:00.0" with its domain
  for (auto& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return b.size() >= 12 ? b.substr(b.size() - 12) : b;
}
}  // namespace

LinkNominal gpuPeerNominal(const Topology& t, const std::string& busId, const std::vector<std::string>& peerBusIds) {
  LinkNominal n;
  auto find = [&](const std::string& b) -> const GpuInfo* {
    for (const auto& g : t.gpus)
      if (busKey(g.busId) == busKey(b)) return &g;
    return nullptr;
  };
  const GpuInfo* me = find(busId);
  if (!me) {
    n.basis = "GPU " + busId + " not in nvidia-smi's list: no nominal rate";
    return n;
  }
  bool nvlink = !peerBusIds.empty() && !me->nvlinkGBps.empty();
  for (const auto& p : peerBusIds) {
    const GpuInfo* peer = find(p);
    nvlink = nvlink && peer && peer->index != me->index && t.nvlinkBetween(me->index, peer->index);
  }
  std::ostringstream os;
  if (nvlink) {
    n.gbps = me->nvlinkTotalGBps();
    os << me->nvlinkGBps.size() << " NVLink links x " << me->nvlinkGBps.front() << " GB/s ("
       << (t.nvlink.source == "nvml" ? "NVML" : "nvidia-smi nvlink -s") << ")";
  } else if (me->pcieGenMax > 0 && me->pcieWidthMax > 0) {
    n.gbps = pcieNominalGBps(me->pcieGenMax, me->pcieWidthMax);
    os << "PCIe Gen" << me->pcieGenMax << " x" << me->pcieWidthMax;
  } else {
    os << "GPU link rate unknown";
  }
  if (n.gbps <= 0) n.gbps = -1;
  n.basis = os.str();
  return n;
}

Topology readTopology(const Machine& m) { return readTopology(m, nvmlSessionOf(m)); }

Topology readTopology(const Machine& m, const NvmlSession& nvml) {
  GpuInventory inv = readGpus(m, nvml);
  if (inv.gpus.empty()) return {};
  Command topoM = gpuTopoMatrix(m);
  Topology topo = buildTopology(topoM.ok ? topoM.out : std::string(), readGpuLinks(m, nvml), readGpuP2p(m, nvml),
                                readNvlinkSpeeds(m, nvml), inv.gpus);
  // NUMA from sysfs when topo -m did not say (bus id 00000000:18:00.0 → 0000:18:00.0).
  for (auto& g : topo.gpus) {
    if (g.numaNode >= 0 || g.busId.size() < 12) continue;
    std::string bdf = g.busId.substr(g.busId.size() - 12);
    for (auto& c : bdf) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    g.numaNode = toInt(m.line("/sys/bus/pci/devices/" + bdf + "/numa_node"), -1);
  }
  topo.rdma = scanRdmaPorts(m);
  return topo;
}

const Topology& localTopology() {
  static std::once_flag once;
  static Topology topo;
  std::call_once(once, [] { topo = readTopology(Machine("/")); });
  return topo;
}

std::string describe(const Topology& t) {
  if (t.empty()) return {};
  std::ostringstream os;
  os << text::trim(t.topoText) << "\n\n";
  for (const auto& g : t.gpus) {
    os << "GPU" << g.index << " " << g.name << " bus " << g.busId << ": PCIe Gen" << g.pcieGenMax << " x"
       << g.pcieWidthMax << " (now Gen" << g.pcieGenCurrent << " x" << g.pcieWidthCurrent << ", nominal "
       << pcieNominalGBps(g.pcieGenMax, g.pcieWidthMax) << " GB/s)";
    if (!g.nvlinkGBps.empty())
      os << ", NVLink " << g.nvlinkGBps.size() << " links x " << g.nvlinkGBps.front() << " GB/s = "
         << g.nvlinkTotalGBps() << " GB/s per direction (" << (t.nvlink.source == "nvml" ? "NVML" : "nvidia-smi") << ")";
    os << ", NUMA " << g.numaNode << ", CPUs " << (g.cpuAffinity.empty() ? "?" : g.cpuAffinity) << "\n";
  }
  if (!t.driverVersion.empty()) os << "driver " << t.driverVersion << "\n";
  // Which source answered each; a text answer says why NVML did not.
  auto src = [](const std::string& s, const std::string& nvmlWhy) {
    if (s.empty()) return std::string("none");
    return s == "nvidia-smi" && !nvmlWhy.empty() ? s + " (NVML: " + nvmlWhy + ")" : s;
  };
  os << "GPU links from " << src(t.gpuLinks.source, t.gpuLinks.nvmlWhy) << "; P2P from "
     << src(t.p2pRead.source, t.p2pRead.nvmlWhy) << "; NVLink speeds from " << src(t.nvlink.source, t.nvlink.nvmlWhy)
     << "\n";
  for (const auto& p : t.rdma)
    os << "RDMA " << p.device << " port " << p.port << ": " << p.linkLayer << ", " << p.state << ", " << p.rate
       << (p.roceV2GidIndex >= 0 ? ", RoCEv2 GID index " + std::to_string(p.roceV2GidIndex) : std::string())
       << "\n";
  return os.str();
}

}  // namespace fb::topo

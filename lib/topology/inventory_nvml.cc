#include "topology/inventory_nvml.h"

#include <algorithm>
#include <cstring>

namespace fb::topo {

NvmlRead readNvml(const NvmlSession& nv) {
  NvmlRead r;
  if (!nv.ok()) {
    r.why = nv.why();
    return r;
  }
  auto sym = [&](const char* n) { return nv.symbol(n); };
  auto err = [&](nvml::Return rc) { return nv.err(rc); };
  const auto n = static_cast<unsigned int>(nv.devices().size());
  // A field NVML does not support reads "[N/A]", as nvidia-smi prints it; another error is named.
  auto failed = [&](nvml::Return rc) {
    if (rc == nvml::kNotSupported) return std::string("[N/A]");
    std::string s = err(rc);
    s.insert(s.begin(), '[');
    s.push_back(']');
    return s;
  };
  auto missing = std::string("[N/A]");
  auto text = [&](const char* fn, nvml::Device d, unsigned int size) {
    auto f = reinterpret_cast<nvml::DevTextFn>(sym(fn));
    if (!f) return missing;
    std::string buf(size, '\0');
    nvml::Return rc = f(d, buf.data(), size);
    if (rc != nvml::kSuccess) return failed(rc);
    return std::string(buf.c_str());
  };
  auto uint = [&](const char* fn, nvml::Device d) {
    auto f = reinterpret_cast<nvml::DevUintFn>(sym(fn));
    if (!f) return missing;
    unsigned int v = 0;
    nvml::Return rc = f(d, &v);
    return rc == nvml::kSuccess ? std::to_string(v) : failed(rc);
  };
  if (auto drv = reinterpret_cast<nvml::DriverFn>(sym("nvmlSystemGetDriverVersion"))) {
    char buf[96] = {};
    nvml::Return rc = drv(buf, sizeof buf);
    r.driver = rc == nvml::kSuccess ? std::string(buf) : failed(rc);
  } else {
    r.driver = missing;
  }
  for (unsigned int i = 0; i < n; ++i) {
    nvml::Device d = nv.devices()[i];
    GpuFacts g;
    g.index = uint("nvmlDeviceGetIndex", d);
    if (g.index == missing) g.index = std::to_string(i);
    g.name = text("nvmlDeviceGetName", d, 96);
    g.uuid = text("nvmlDeviceGetUUID", d, 96);
    if (auto pci = reinterpret_cast<nvml::PciFn>(sym("nvmlDeviceGetPciInfo_v3"))) {
      nvml::PciInfo p{};
      nvml::Return rc = pci(d, &p);
      g.busId = rc == nvml::kSuccess ? std::string(p.busId, strnlen(p.busId, sizeof p.busId)) : failed(rc);
    } else {
      g.busId = missing;
    }
    if (auto mem = reinterpret_cast<nvml::MemoryFn>(sym("nvmlDeviceGetMemoryInfo"))) {
      nvml::Memory mi{};
      nvml::Return rc = mem(d, &mi);
      g.memoryMib = rc == nvml::kSuccess ? std::to_string(mi.total / (1024ull * 1024ull)) : failed(rc);
    } else {
      g.memoryMib = missing;
    }
    g.driverVersion = r.driver;
    g.vbiosVersion = text("nvmlDeviceGetVbiosVersion", d, 32);
    g.pcieGenCurrent = uint("nvmlDeviceGetCurrPcieLinkGeneration", d);
    g.pcieGenMax = uint("nvmlDeviceGetMaxPcieLinkGeneration", d);
    g.pcieWidthCurrent = uint("nvmlDeviceGetCurrPcieLinkWidth", d);
    g.pcieWidthMax = uint("nvmlDeviceGetMaxPcieLinkWidth", d);
    if (auto mig = reinterpret_cast<nvml::MigFn>(sym("nvmlDeviceGetMigMode"))) {
      unsigned int cur = 0, pending = 0;
      nvml::Return rc = mig(d, &cur, &pending);
      g.migMode = rc == nvml::kSuccess ? (cur == nvml::kMigEnable ? "Enabled" : "Disabled") : failed(rc);
    } else {
      g.migMode = missing;
    }
    r.gpus.push_back(std::move(g));
  }
  r.ok = true;
  return r;
}

// The GPU x GPU matrix from NVML (see GpuLinkMatrix).
namespace {
// An n x n GPU matrix: "X" on the diagonal, cell(i, j) elsewhere.
template <class Cell>
std::vector<std::vector<std::string>> gpuMatrix(std::size_t n, Cell cell) {
  std::vector<std::vector<std::string>> m(n, std::vector<std::string>(n));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) m[i][j] = i == j ? "X" : cell(i, j);
  return m;
}
}  // namespace

bool readNvmlLinks(const NvmlSession& nv, GpuLinkMatrix& out) {
  NvmlSymbols syms(nv);
  auto pci = syms.need<nvml::PciFn>("nvmlDeviceGetPciInfo_v3");
  auto state = syms.need<nvml::NvLinkStateFn>("nvmlDeviceGetNvLinkState");
  auto remote = syms.need<nvml::NvLinkRemotePciFn>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
  auto ancestor = syms.need<nvml::CommonAncestorFn>("nvmlDeviceGetTopologyCommonAncestor");
  if (!syms.usable(out.nvmlWhy)) return false;
  const auto& devices = nv.devices();
  const std::size_t n = devices.size();
  auto busOf = [](const nvml::PciInfo& p) { return std::string(p.busId, strnlen(p.busId, sizeof p.busId)); };
  std::vector<std::string> bus(n);
  for (std::size_t i = 0; i < n; ++i) {
    nvml::PciInfo p{};
    if (nvml::Return rc = pci(devices[i], &p); rc != nvml::kSuccess) {
      out.nvmlWhy = "nvmlDeviceGetPciInfo_v3: " + nv.err(rc);
      return false;
    }
    bus[i] = busOf(p);
  }
  // Per GPU: its active links to each other GPU, and to anything else (an NVSwitch).
  std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
  std::vector<int> viaSwitch(n, 0);
  out.activeNvlinks.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (unsigned int link = 0; link < nvml::kNvLinkMaxLinks; ++link) {
      unsigned int active = 0;
      if (state(devices[i], link, &active) != nvml::kSuccess || active != nvml::kFeatureEnabled) continue;
      ++out.activeNvlinks[i];
      nvml::PciInfo p{};
      if (remote(devices[i], link, &p) != nvml::kSuccess) continue;
      auto peer = std::find(bus.begin(), bus.end(), busOf(p));
      if (peer == bus.end()) ++viaSwitch[i];
      else ++direct[i][static_cast<std::size_t>(peer - bus.begin())];
    }
  out.code = gpuMatrix(n, [&](std::size_t i, std::size_t j) -> std::string {
    int links = direct[i][j] + std::min(viaSwitch[i], viaSwitch[j]);
    if (links > 0) return "NV" + std::to_string(links);
    unsigned int level = 0;
    nvml::Return rc = ancestor(devices[i], devices[j], &level);
    if (rc != nvml::kSuccess) return "[" + nv.err(rc) + "]";
    switch (level) {
      case 10: return "PIX";
      case 20: return "PXB";
      case 30: return "PHB";
      case 40: return "NODE";
      case 50: return "SYS";
      default: return "level " + std::to_string(level);  // INTERNAL (one board): no topo -m code
    }
  });
  out.source = "nvml";
  return true;
}

// The P2P read matrix from NVML (see readGpuP2p).
bool readNvmlP2p(const NvmlSession& nv, GpuLinkMatrix& out) {
  NvmlSymbols syms(nv);
  auto status = syms.need<nvml::P2PStatusFn>("nvmlDeviceGetP2PStatus");
  if (!syms.usable(out.nvmlWhy)) return false;
  const auto& devices = nv.devices();
  const std::size_t n = devices.size();
  out.code = gpuMatrix(n, [&](std::size_t i, std::size_t j) -> std::string {
    int st = 0;
    nvml::Return rc = status(devices[i], devices[j], nvml::kP2pCapsRead, &st);
    return rc == nvml::kSuccess ? p2pStatusCode(st) : "[" + nv.err(rc) + "]";
  });
  out.source = "nvml";
  return true;
}

// The NVLink speeds from NVML: per active link its speed field (per link, else the device's common
// speed); a failed read of an active link's speed fails the whole answer, so the text takes over.
bool readNvmlSpeeds(const NvmlSession& nv, GpuNvlinkSpeeds& out) {
  NvmlSymbols syms(nv);
  auto state = syms.need<nvml::NvLinkStateFn>("nvmlDeviceGetNvLinkState");
  auto fields = syms.need<nvml::FieldValuesFn>("nvmlDeviceGetFieldValues");
  if (!syms.usable(out.nvmlWhy)) return false;
  const auto& devices = nv.devices();
  auto version = reinterpret_cast<nvml::NvLinkVersionFn>(nv.symbol("nvmlDeviceGetNvLinkVersion"));  // optional
  // One field's value in MBps, or a reason.
  auto mbps = [&](nvml::Device d, unsigned int field, unsigned int scope, double& v) -> std::string {
    nvml::FieldValue f{};
    f.fieldId = field;
    f.scopeId = scope;
    if (nvml::Return rc = fields(d, 1, &f); rc != nvml::kSuccess) return nv.err(rc);
    if (f.nvmlReturn != nvml::kSuccess) return nv.err(f.nvmlReturn);
    switch (f.valueType) {
      case 0: v = f.value.dVal; break;
      case 1: v = f.value.uiVal; break;
      case 2: v = static_cast<double>(f.value.ulVal); break;
      case 3: v = static_cast<double>(f.value.ullVal); break;
      case 4: v = static_cast<double>(f.value.sllVal); break;
      default: return "value type " + std::to_string(f.valueType);
    }
    return {};
  };
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const int gpu = static_cast<int>(i);
    auto& speeds = out.gbps[gpu];
    auto& versions = out.version[gpu];
    for (unsigned int link = 0; link < nvml::kNvLinkMaxLinks; ++link) {
      unsigned int active = 0;
      if (state(devices[i], link, &active) != nvml::kSuccess || active != nvml::kFeatureEnabled) continue;
      double v = 0;
      std::string whyLink = mbps(devices[i], nvml::kFiNvLinkGetSpeed, link, v);
      if (!whyLink.empty()) {
        std::string whyCommon = mbps(devices[i], nvml::kFiNvLinkSpeedCommon, 0, v);
        if (!whyCommon.empty()) {
          out.nvmlWhy = "NVLink speed of GPU" + std::to_string(i) + " link " + std::to_string(link) +
                        ": nvmlDeviceGetFieldValues: " + whyLink + " (per link), " + whyCommon + " (common)";
          out.gbps.clear();
          out.version.clear();
          return false;
        }
      }
      speeds.push_back(v / 1000.0);
      unsigned int ver = 0;
      versions.push_back(version && version(devices[i], link, &ver) == nvml::kSuccess ? ver : 0);
    }
  }
  out.source = "nvml";
  return true;
}

}  // namespace fb::topo

#include "doctor/util.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <sstream>

namespace fb::doctor::util {

int compareVersions(const std::string& a, const std::string& b) {
  auto parts = [](const std::string& s) {
    std::vector<long> v;
    std::string cur;
    for (char c : s + ".") {
      if (std::isdigit(static_cast<unsigned char>(c))) {
        cur += c;
      } else {
        if (!cur.empty()) v.push_back(std::stol(cur));
        cur.clear();
      }
    }
    return v;
  };
  auto pa = parts(a), pb = parts(b);
  for (std::size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    long x = i < pa.size() ? pa[i] : 0, y = i < pb.size() ? pb[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

GpuList gpuList(const Machine& m) {
  GpuList g;
  topo::GpuInventory inv = topo::readGpus(m, topo::GpuSource::kAuto, std::chrono::seconds(10));
  g.nvml = inv.source == "nvml";
  g.tool = g.nvml || inv.smiFound;
  if (!g.tool) {
    g.why = "nvidia-smi not found (no NVIDIA driver tools on this node)";
    return g;
  }
  if (!g.nvml && !inv.smiOk) {
    std::string t = trim(inv.smiOut);
    g.why = "nvidia-smi failed (" + inv.smiError + (t.empty() ? "" : ": " + t.substr(0, 120)) + ")";
    if (t.find("No devices were found") != std::string::npos) g.why = "nvidia-smi: No devices were found";
    return g;
  }
  g.ok = true;
  for (const auto& f : inv.gpus) {
    Gpu x;
    try {
      x.index = std::stoi(f.index);
    } catch (...) {
      continue;
    }
    x.name = f.name;
    x.busId = f.busId;
    x.mig = f.migMode;
    g.driver = f.driverVersion;
    g.gpus.push_back(x);
  }
  if (g.gpus.empty()) g.why = g.nvml ? "NVML lists no GPU" : "nvidia-smi lists no GPU";
  return g;
}

bool isBdf(const std::string& s) {
  static const std::regex k(R"(^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$)");
  return std::regex_match(s, k);
}

std::vector<std::string> rdmaDevices(const Machine& m) {
  std::vector<std::string> out;
  for (const auto& d : topo::readRdma(m)) out.push_back(d.name);
  return out;
}

}  // namespace fb::doctor::util

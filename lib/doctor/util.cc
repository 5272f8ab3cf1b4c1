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
  auto c = m.run({"nvidia-smi", "--query-gpu=index,name,pci.bus_id,mig.mode.current,driver_version",
                  "--format=csv,noheader"});
  g.tool = c.found;
  if (!c.found) {
    g.why = "nvidia-smi not found (no NVIDIA driver tools on this node)";
    return g;
  }
  if (!c.ok) {
    std::string t = trim(c.out);
    g.why = "nvidia-smi failed (" + c.error + (t.empty() ? "" : ": " + t.substr(0, 120)) + ")";
    if (t.find("No devices were found") != std::string::npos) g.why = "nvidia-smi: No devices were found";
    return g;
  }
  g.ok = true;
  for (const auto& l : lines(c.out)) {
    auto f = split(l, ',');
    if (f.size() < 5) continue;
    Gpu x;
    try {
      x.index = std::stoi(f[0]);
    } catch (...) {
      continue;
    }
    x.name = f[1];
    x.busId = f[2];
    x.mig = f[3];
    g.driver = f[4];
    g.gpus.push_back(x);
  }
  if (g.gpus.empty()) g.why = "nvidia-smi lists no GPU";
  return g;
}

bool isBdf(const std::string& s) {
  static const std::regex k(R"(^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$)");
  return std::regex_match(s, k);
}

std::vector<std::string> rdmaDevices(const Machine& m) { return m.list("/sys/class/infiniband"); }

}  // namespace fb::doctor::util

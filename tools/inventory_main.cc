// fabricbench-inventory: what the machine inventory (lib/topology/inventory.h) reads on this node
// (or on a recorded machine root): GPUs from NVML and/or nvidia-smi, RDMA ports.
//   fabricbench-inventory                      GPUs (NVML, else nvidia-smi) and RDMA ports
//   fabricbench-inventory --gpu-source nvml    one source only (nvml | nvidia-smi | auto)
//   fabricbench-inventory --compare            both GPU sources, field by field; the GPU x GPU
//                                              link (topo -m) and P2P read (topo -p2p r) matrices
//                                              cell by cell; the NVLink speeds (nvlink -s) link by
//                                              link; exit 1 where they differ or one does not answer
//   --root DIR                                 a recorded machine (tests/data/doctor/<name>)
// Bad arguments: one line and exit 2.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "topology/inventory.h"

namespace {

using namespace fb::topo;

int usage(const std::string& why) {
  std::cerr << "fabricbench-inventory: " << why
            << " (usage: fabricbench-inventory [--root DIR] [--gpu-source auto|nvml|nvidia-smi | --compare])\n";
  return 2;
}

void printGpus(const std::string& label, const GpuInventory& inv) {
  std::cout << label << ": source " << (inv.source.empty() ? "none" : inv.source);
  if (!inv.nvmlWhy.empty()) std::cout << " (NVML: " << inv.nvmlWhy << ")";
  if (inv.source.empty() && inv.smiFound) std::cout << " (nvidia-smi: " << inv.smiError << ")";
  std::cout << ", " << inv.gpus.size() << " GPU(s)\n";
  for (const auto& g : inv.gpus) {
    auto v = gpuFactValues(g);
    for (std::size_t k = 0; k < v.size(); ++k)
      std::cout << "  GPU" << g.index << " " << gpuFactNames()[k] << " = " << v[k] << "\n";
  }
}

void printLinks(const std::string& label, const GpuLinkMatrix& l) {
  std::cout << label << ": source " << (l.source.empty() ? "none" : l.source);
  if (!l.nvmlWhy.empty()) std::cout << " (NVML: " << l.nvmlWhy << ")";
  if (!l.smiError.empty()) std::cout << " (nvidia-smi: " << l.smiError << ")";
  std::cout << "\n";
  for (std::size_t i = 0; i < l.code.size(); ++i) {
    std::cout << "  GPU" << i;
    for (const auto& c : l.code[i]) std::cout << " " << c;
    if (i < l.activeNvlinks.size() && l.activeNvlinks[i] >= 0) std::cout << "  (" << l.activeNvlinks[i] << " active NVLinks)";
    std::cout << "\n";
  }
}

void printSpeeds(const std::string& label, const GpuNvlinkSpeeds& s) {
  std::cout << label << " NVLink speeds: source " << (s.source.empty() ? "none" : s.source);
  if (!s.nvmlWhy.empty()) std::cout << " (NVML: " << s.nvmlWhy << ")";
  if (!s.smiError.empty()) std::cout << " (nvidia-smi: " << s.smiError << ")";
  std::cout << "\n";
  for (const auto& [gpu, v] : s.gbps) {
    std::cout << "  GPU" << gpu << " " << v.size() << " active link(s) GB/s:";
    for (double x : v) std::cout << " " << nvlinkSpeedText(x);
    auto ver = s.version.find(gpu);
    if (ver != s.version.end() && !ver->second.empty()) {
      std::cout << "  NVLink version:";
      for (unsigned x : ver->second) std::cout << " " << x;
    }
    std::cout << "\n";
  }
}

// Prints the differences and the summary line; returns the number of differences.
int report(const SourceComparison& c, const std::string& unit) {
  for (const auto& l : c.lines) std::cout << l << "\n";
  std::cout << "compare: " << c.differ << " difference(s) over " << c.compared << " " << unit << "\n";
  return c.differ;
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = "/", source = "auto";
  bool compare = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--root" || a == "--gpu-source") && i + 1 >= argc) return usage(a + " needs a value");
    if (a == "--root") root = argv[++i];
    else if (a == "--gpu-source") source = argv[++i];
    else if (a == "--compare") compare = true;
    else return usage("unknown argument '" + a + "'");
  }
  if (source != "auto" && source != "nvml" && source != "nvidia-smi")
    return usage("--gpu-source '" + source + "': expected auto, nvml or nvidia-smi");
  Machine m(root);
  if (!compare) {
    GpuSource s = source == "nvml" ? GpuSource::kNvml : source == "nvidia-smi" ? GpuSource::kNvidiaSmi : GpuSource::kAuto;
    printGpus("GPUs", readGpus(m, s));
    printLinks("GPU links", readGpuLinks(m, s));
    printLinks("GPU P2P read", readGpuP2p(m, s));
    printSpeeds("GPU", readNvlinkSpeeds(m, s));
    for (const auto& d : readRdma(m))
      for (const auto& p : d.ports)
        std::cout << "RDMA " << d.name << " port " << p.port << ": " << p.linkLayer << ", " << p.state << ", "
                  << p.rate << ", fw " << d.fwVer << ", " << p.gids.size() << " GID(s)\n";
    return 0;
  }
  GpuInventory nv = readGpus(m, GpuSource::kNvml), smi = readGpus(m, GpuSource::kNvidiaSmi);
  printGpus("NVML", nv);
  printGpus("nvidia-smi", smi);
  int differ = 0;
  // A source that did not answer counts one difference; the link facts are still compared.
  if (nv.source != "nvml" || smi.source != "nvidia-smi") {
    std::cout << "compare: not both sources answered (NVML: " << (nv.source.empty() ? "no" : "yes")
              << ", nvidia-smi: " << (smi.source.empty() ? "no" : "yes") << ")\n";
    ++differ;
  } else if (nv.gpus.size() != smi.gpus.size()) {
    ++differ;
    std::cout << "compare: NVML lists " << nv.gpus.size() << " GPU(s), nvidia-smi " << smi.gpus.size() << "\n";
  }
  std::size_t fields = 0;
  for (std::size_t i = 0; i < std::min(nv.gpus.size(), smi.gpus.size()); ++i) {
    auto a = gpuFactValues(nv.gpus[i]), b = gpuFactValues(smi.gpus[i]);
    for (std::size_t k = 0; k < a.size(); ++k, ++fields)
      if (a[k] != b[k]) {
        ++differ;
        std::cout << "compare: GPU" << i << " " << gpuFactNames()[k] << ": NVML '" << a[k] << "', nvidia-smi '" << b[k]
                  << "'\n";
      }
  }
  std::cout << "compare: " << differ << " difference(s) over " << fields << " field(s) of " << nv.gpus.size()
            << " GPU(s)\n";
  GpuLinkMatrix nvl = readGpuLinks(m, GpuSource::kNvml), smil = readGpuLinks(m, GpuSource::kNvidiaSmi);
  printLinks("NVML links", nvl);
  printLinks("nvidia-smi links", smil);
  differ += report(compareGpuMatrices("links", nvl, smil), "link cell(s)");
  GpuLinkMatrix nvp = readGpuP2p(m, GpuSource::kNvml), smip = readGpuP2p(m, GpuSource::kNvidiaSmi);
  printLinks("NVML P2P read", nvp);
  printLinks("nvidia-smi P2P read", smip);
  differ += report(compareGpuMatrices("p2p", nvp, smip), "P2P cell(s)");
  GpuNvlinkSpeeds nvs = readNvlinkSpeeds(m, GpuSource::kNvml), smis = readNvlinkSpeeds(m, GpuSource::kNvidiaSmi);
  printSpeeds("NVML", nvs);
  printSpeeds("nvidia-smi", smis);
  differ += report(compareNvlinkSpeeds(nvs, smis), "NVLink count(s) and speed(s)");
  return differ ? 1 : 0;
}

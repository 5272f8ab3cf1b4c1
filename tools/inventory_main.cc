// fabricbench-inventory: what the machine inventory (lib/topology/inventory.h) reads on this node
// (or on a recorded machine root): GPUs from NVML and/or nvidia-smi, RDMA ports.
//   fabricbench-inventory                      GPUs (NVML, else nvidia-smi) and RDMA ports
//   fabricbench-inventory --gpu-source nvml    one source only (nvml | nvidia-smi | auto)
//   fabricbench-inventory --compare            both GPU sources, field by field, and the GPU x GPU
//                                              link matrix (topo -m) cell by cell; exit 1 where
//                                              they differ or one does not answer
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
  std::cout << label << " links: source " << (l.source.empty() ? "none" : l.source);
  if (!l.nvmlWhy.empty()) std::cout << " (NVML: " << l.nvmlWhy << ")";
  if (!l.smiError.empty()) std::cout << " (nvidia-smi: " << l.smiError << ")";
  std::cout << "\n";
  for (std::size_t i = 0; i < l.code.size(); ++i) {
    std::cout << "  GPU" << i;
    for (const auto& c : l.code[i]) std::cout << " " << c;
    if (l.activeNvlinks[i] >= 0) std::cout << "  (" << l.activeNvlinks[i] << " active NVLinks)";
    std::cout << "\n";
  }
}

// The two link matrices cell by cell; returns the differences (a missing source counts one).
int compareLinks(const GpuLinkMatrix& nv, const GpuLinkMatrix& smi, std::size_t& cells) {
  if (nv.source != "nvml" || smi.source != "nvidia-smi") {
    std::cout << "compare: links: not both sources answered (NVML: " << (nv.source.empty() ? "no" : "yes")
              << ", nvidia-smi: " << (smi.source.empty() ? "no" : "yes") << ")\n";
    return 1;
  }
  int differ = 0;
  if (nv.code.size() != smi.code.size()) {
    ++differ;
    std::cout << "compare: links: NVML has " << nv.code.size() << " GPU(s), nvidia-smi topo -m " << smi.code.size() << "\n";
  }
  for (std::size_t i = 0; i < std::min(nv.code.size(), smi.code.size()); ++i)
    for (std::size_t j = 0; j < std::min(nv.code[i].size(), smi.code[i].size()); ++j, ++cells)
      if (nv.code[i][j] != smi.code[i][j]) {
        ++differ;
        std::cout << "compare: link GPU" << i << "-GPU" << j << ": NVML '" << nv.code[i][j] << "', nvidia-smi '"
                  << smi.code[i][j] << "'\n";
      }
  return differ;
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
    printLinks("GPU", readGpuLinks(m, s));
    for (const auto& d : readRdma(m))
      for (const auto& p : d.ports)
        std::cout << "RDMA " << d.name << " port " << p.port << ": " << p.linkLayer << ", " << p.state << ", "
                  << p.rate << ", fw " << d.fwVer << ", " << p.gids.size() << " GID(s)\n";
    return 0;
  }
  GpuInventory nv = readGpus(m, GpuSource::kNvml), smi = readGpus(m, GpuSource::kNvidiaSmi);
  printGpus("NVML", nv);
  printGpus("nvidia-smi", smi);
  if (nv.source != "nvml" || smi.source != "nvidia-smi") {
    std::cout << "compare: not both sources answered (NVML: " << (nv.source.empty() ? "no" : "yes")
              << ", nvidia-smi: " << (smi.source.empty() ? "no" : "yes") << ")\n";
    return 1;
  }
  int differ = nv.gpus.size() == smi.gpus.size() ? 0 : 1;
  if (differ) std::cout << "compare: NVML lists " << nv.gpus.size() << " GPU(s), nvidia-smi " << smi.gpus.size() << "\n";
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
  printLinks("NVML", nvl);
  printLinks("nvidia-smi", smil);
  std::size_t cells = 0;
  int linkDiffer = compareLinks(nvl, smil, cells);
  std::cout << "compare: " << linkDiffer << " difference(s) over " << cells << " link cell(s)\n";
  differ += linkDiffer;
  return differ ? 1 : 0;
}

// fabricbench-model nccl project: projected NCCL times on N nodes x G GPUs, each row with the error band
// that validation evidence gives its algorithm and size regime, and where it goes beyond validation.
#include "model_nccl_common.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "model/nccl.h"
#include "report/import.h"
#include "report/result_sink.h"

namespace fs = std::filesystem;
using namespace fb::model;
using fb::InputError;


namespace fb::tools::ncclcmd {
namespace {

struct Band {
  double pct = -1;      // max |error| of the evidence cell; -1 = none
  std::string beyond;   // why the projection is outside what validation covered; "" = inside
};

Band bandOf(const nlohmann::json& ev, NcclAlgo a, double bytes, int nodes) {
  Band b;
  const std::string name = ncclAlgoInfo(a).name, reg = regimeOf(bytes);
  if (!ev.is_object() || !ev.contains("cells")) {
    b.beyond = "no validation evidence";
    return b;
  }
  int algoMaxNodes = 0;
  double lo = 0, hi = 0;
  for (const auto& c : ev["cells"]) {
    if (c["algo"] != name) continue;
    algoMaxNodes = std::max(algoMaxNodes, c["max_nodes"].get<int>());
    double cl = c["min_bytes"], ch = c["max_bytes"];
    lo = lo == 0 ? cl : std::min(lo, cl);
    hi = std::max(hi, ch);
    if (c["regime"] == reg) b.pct = c["max_abs_err_pct"];
  }
  std::vector<std::string> why;
  if (algoMaxNodes == 0) why.push_back(name + " never validated");
  else {
    if (nodes > algoMaxNodes) why.push_back(fmt::format("{} nodes > the {} validated for {}", nodes, algoMaxNodes, name));
    if (bytes < lo || bytes > hi) why.push_back(fmt::format("size outside {}'s validated {}..{}", name, human(lo), human(hi)));
    if (b.pct < 0) why.push_back(fmt::format("{} not validated at {}", name, reg));
  }
  for (auto& w : why) b.beyond += (b.beyond.empty() ? "" : "; ") + w;
  return b;
}


}  // namespace

int cmdProject() {
  if (g.nodes.empty()) throw InputError("project needs --nodes LIST (e.g. 16,64,256,1024)");
  for (int n : g.nodes)
    if (n < 1) throw InputError(fmt::format("--nodes {}: must be >= 1", n));
  for (int x : g.gpus)
    if (x < 1) throw InputError(fmt::format("--gpus {}: must be >= 1", x));
  std::vector<double> sizes;
  {
    std::stringstream ss(g.sizes);
    std::string t;
    while (std::getline(ss, t, ',')) {
      auto b = fb::parseSize(t);
      if (b == 0) throw InputError(fmt::format("--sizes {}: a size must be > 0", t));
      sizes.push_back(static_cast<double>(b));
    }
  }
  std::vector<std::string> colls = g.colls.empty() ? std::vector<std::string>{"allreduce"} : g.colls;
  for (auto& c : colls) ncclBusFactor(c, 2);  // throws on an unknown collective
  nlohmann::json ev;
  if (!g.evidence.empty()) {
    std::ifstream in(g.evidence);
    if (!in) throw InputError(fmt::format("--evidence {}: cannot read it", g.evidence));
    try {
      in >> ev;
    } catch (const std::exception& e) {
      throw InputError(fmt::format("--evidence {}: not JSON ({})", g.evidence, e.what()));
    }
  }
  // Fabrics: NAME=nic=GBPS,nics=R (per-NIC rate and NICs per node); "measured" = the fitted machine.
  struct Fabric {
    std::string name;
    double nic = 0, nics = -1;
  };
  std::vector<Fabric> fabrics;
  for (auto& f : g.fabrics) {
    auto eq = f.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError(fmt::format("--fabric {}: expected NAME=nic=GBPS[,nics=R]", f));
    Fabric x{f.substr(0, eq)};
    std::stringstream ss(f.substr(eq + 1));
    std::string kv;
    while (std::getline(ss, kv, ',')) {
      auto e2 = kv.find('=');
      std::string k = kv.substr(0, e2), v = e2 == std::string::npos ? "" : kv.substr(e2 + 1);
      double d = 0;
      try {
        std::size_t used = 0;
        d = std::stod(v, &used);
        if (used != v.size()) throw 0;
      } catch (...) {
        throw InputError(fmt::format("--fabric {}: '{}' needs a number", f, kv));
      }
      if (!(d > 0)) throw InputError(fmt::format("--fabric {}: '{}' must be > 0", f, kv));
      if (k == "nic") x.nic = d;
      else if (k == "nics") x.nics = d;
      else throw InputError(fmt::format("--fabric {}: unknown key '{}' (nic, nics)", f, k));
    }
    fabrics.push_back(x);
  }
  auto runs = loadRuns(g.fitRuns, g.mo.given);
  NcclFitOptions fo;
  fo.minBytes = static_cast<double>(fb::parseSize(g.minBytes));
  std::string priorNote;
  auto fit = ncclCalibrate(priorOf(g.mo, runs, &priorNote), runs, fo);
  if (fabrics.empty()) fabrics.push_back({"measured"});
  std::vector<int> gpus = g.gpus.empty() ? std::vector<int>{runs.front().gpusPerNode} : g.gpus;

  std::string md = "# fabricbench-model nccl project (projections, not measurements)\n\nCalibrated on: ";
  for (auto& r : runs) md += r.label + " [" + runShape(r) + "]; ";
  md += "\nPriors: " + priorNote + ".\nMachine: " + machineLine(fit) + ".\n";
  // Runs made with NCCL_NVLS_ENABLE=0 say nothing of NVLS; the projected clusters may run it (NCCL's choice).
  if (!runs.empty() && std::all_of(runs.begin(), runs.end(), [](const NcclRun& r) { return r.nvlsOff; }) &&
      fit.machine.nvlsGBps > 0)
    md += fmt::format("NVLS: every fitted run had NCCL_NVLS_ENABLE=0, so NVLS and NVLSTree rows below use the prior "
                      "{:.0f} GB/s (8 GPUs), not a measured rate.\n", fit.machine.nvlsGBps);
  md += g.evidence.empty() ? "\nNo --evidence file: projections carry no error band (run `nccl validate -o DIR` and pass DIR/nccl-evidence.json).\n"
                           : "\nError bands: the largest |error| that validation (" + g.evidence +
                                 ") saw for the same algorithm and size regime on predicted runs.\n";
  std::string csv = "fabric,nodes,gpus_per_node,coll,bytes,time_us,busbw_gbps,algo,proto,band_pct,beyond_validation\n";
  for (auto& fab : fabrics) {
    NcclMachine m = fit.machine;
    if (fab.nic > 0) m.nicGBps = fab.nic, m.nicLineGBps = fab.nic * 50 / 48;  // another fabric: its own line rate
    if (fab.nics > 0) m.nicsPerNode = fab.nics;
    md += fmt::format("\n## {} (per-NIC {:.1f} GB/s{})\n", fab.name, m.nicGBps,
                      m.nicsPerNode > 0 ? fmt::format(", {:g} NICs per node", m.nicsPerNode) : ", one NIC per GPU");
    for (auto& c : colls)
      for (int G : gpus) {
        md += fmt::format("\n### {} on N x {} GPUs\n\n| nodes | size | time us | busbw GB/s | band | NCCL pick (model) | beyond validation |\n"
                          "|---:|---:|---:|---:|---:|---|---|\n",
                          c, G);
        for (int N : g.nodes)
          for (double S : sizes) {
            m.nodes = N;
            m.gpusPerNode = G;
            auto best = ncclChoose(c, m, S).best;
            double busbw = S * ncclBusFactor(c, N * G) / (best.timeUs * 1e3);
            auto b = bandOf(ev, best.algo, S, N);
            md += fmt::format("| {} | {} | {:.1f} | {:.1f} | {} | {} | {} |\n", N, human(S), best.timeUs, busbw,
                              b.pct >= 0 ? fmt::format("±{:.0f} %", b.pct) : "n/a", pick(best.algo, best.proto),
                              b.beyond.empty() ? "-" : b.beyond);
            csv += fmt::format("{},{},{},{},{},{:.3f},{:.3f},{},{},{},\"{}\"\n", fab.name, N, G, c, static_cast<long long>(S),
                               best.timeUs, busbw, ncclAlgoInfo(best.algo).name, ncclProtoName(best.proto),
                               b.pct >= 0 ? fmt::format("{:.1f}", b.pct) : "", b.beyond);
          }
      }
  }
  std::fputs(md.c_str(), stdout);
  if (!g.out.empty()) {
    writeOut(g.out, "nccl-projection.md", md);
    writeOut(g.out, "nccl-projected.csv", csv);
  }
  return 0;
}


}  // namespace fb::tools::ncclcmd

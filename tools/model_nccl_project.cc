// fabricbench-model nccl project: projected NCCL times on N nodes x G GPUs, each row with the error band
// that validation evidence gives its algorithm and size regime, and where it goes beyond validation.
#include "model_nccl_common.h"
#include "model_evidence.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
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

// What --force asks of the projected rows: NCCL_ALGO, NCCL_PROTO, NCCL_MIN_CTAS (channels), NCCL_NVLS_ENABLE=0;
// the keys of --given (the fitted runs' ncclRunsOf reads the same spellings).
struct Forced {
  NcclForce force;
  int channels = 0;
  bool nvlsOff = false;
  std::vector<std::string> parts;  // "NCCL_ALGO=Ring", "NCCL_PROTO=Simple", ...
  std::string text;                // the parts joined: "NCCL_ALGO=Ring, NCCL_PROTO=Simple"
  bool any() const { return force.algo || force.proto || channels > 0 || nvlsOff; }
};

// What a run was forced to: its algorithm, protocol, NCCL_MIN_CTAS (not a channel count only seen in its INFO)
// and, with `nvls`, NVLS off.
Forced forcedOf(const NcclRun& r, bool nvls = true) {
  Forced f;
  f.force = r.force;
  f.channels = r.channelsForced ? r.channels : 0;
  f.nvlsOff = nvls && r.nvlsOff;
  auto& t = f.parts;
  if (f.force.algo) t.push_back("NCCL_ALGO=" + ncclAlgoInfo(*f.force.algo).name);
  if (f.force.proto) t.push_back("NCCL_PROTO=" + ncclProtoName(*f.force.proto));
  if (f.channels > 0) t.push_back(fmt::format("NCCL_MIN_CTAS={} ({} channels)", f.channels, f.channels));
  if (f.nvlsOff) t.push_back("NCCL_NVLS_ENABLE=0");
  for (auto& x : t) f.text += (f.text.empty() ? "" : ", ") + x;
  return f;
}

// --force KEY=VALUE,...: the keys of --given (one parser, lib/model applyNcclSettings); nccl= is checked and
// otherwise ignored (the projected cluster's release is not forced).
Forced parseForce(const std::string& spec, const std::string& option) {
  NcclRun scratch;
  applyNcclSettings(scratch, spec, option);
  return forcedOf(scratch);
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
    if (sizes.empty()) throw InputError("--sizes: no size given (e.g. --sizes 16M,1G)");
  }
  std::vector<std::string> colls = g.colls.empty() ? std::vector<std::string>{"allreduce"} : g.colls;
  for (auto& c : colls) ncclBusFactor(c, 2);  // throws on an unknown collective
  // Bands: --evidence FILE, --evidence none (every row unvalidated), else the public validation built in.
  Evidence ev;
  const bool builtIn = g.evidence.empty();
  if (g.evidence == "none") ev.source = "none";
  else if (builtIn) ev = parseEvidence(publicNcclEvidence(), publicNcclEvidencePath());
  else ev = readEvidence(g.evidence, "--evidence");
  if (ev.j.is_object() && ev.j.value("kind", std::string("nccl")) != "nccl")
    throw InputError(fmt::format("--evidence {}: the evidence of `fabricbench-model validate` ({} algorithms); nccl project "
                                 "takes nccl validate's nccl-evidence.json", g.evidence, ev.j.value("kind", std::string())));
  // --force: the projected rows as a run with those settings would go, not NCCL's own choice. An explicit list is
  // checked here, before any log is read; `--force given` (what the fitted runs ran with) once they are read.
  Forced forced;
  if (!g.force.empty() && g.force != "given") {
    forced = parseForce(g.force, "--force");
    if (!forced.any()) throw InputError(fmt::format("--force '{}': forces nothing", g.force));
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
    for (const auto& [k, d] : positiveSettings(f.substr(eq + 1), "--fabric " + f, {"nic", "nics"}))
      (k == "nic" ? x.nic : x.nics) = d;
    if (!(x.nic > 0)) throw InputError(fmt::format("--fabric {}: needs nic=GBPS (the fabric's per-NIC rate)", f));
    fabrics.push_back(x);
  }
  auto runs = loadRuns(g.fitRuns, g.mo.given);
  if (g.force == "given") {
    // The fitted runs' own settings (their logs' NCCL_* lines and --given); they must agree.
    forced = forcedOf(runs.front());
    for (auto& r : runs)
      if (forcedOf(r).text != forced.text)
        throw InputError(fmt::format("--force given: the fitted runs ran differently ({} has '{}', {} '{}'); "
                                     "give --force KEY=VALUE,...",
                                     runs.front().label, forced.text, r.label, forcedOf(r).text));
    if (!forced.any())
      throw InputError("--force given: the fitted runs force nothing (no NCCL_ALGO, NCCL_PROTO, NCCL_MIN_CTAS or "
                       "NCCL_NVLS_ENABLE=0 in their logs or --given)");
  }
  NcclFitOptions fo;
  fo.minBytes = static_cast<double>(fb::parseSize(g.minBytes));
  std::string priorNote;
  auto fit = calibrateRuns(g.mo, runs, fo, &priorNote);
  if (fabrics.empty()) fabrics.push_back({"measured"});
  std::vector<int> gpus = g.gpus.empty() ? std::vector<int>{runs.front().gpusPerNode} : g.gpus;

  std::string md = "# fabricbench-model nccl project (projections, not measurements)\n\nCalibrated on: ";
  for (auto& r : runs) md += r.label + " [" + runShape(r) + "]; ";
  md += "\nPriors: " + priorNote + ".\nMachine: " + machineLine(fit) + ".\n";
  // Runs made without NVLS (NCCL_NVLS_ENABLE=0, "0 nvls channels" in their INFO, or --given nvls=0) say nothing
  // of NVLS; the projected clusters may run it (NCCL's choice).
  if (!runs.empty() && std::all_of(runs.begin(), runs.end(), [](const NcclRun& r) { return r.nvlsOff; }) &&
      fit.machine.nvlsGBps > 0 && !forced.nvlsOff)
    md += fmt::format("NVLS: every fitted run ran without it (NCCL_NVLS_ENABLE=0 or 0 nvls channels), so NVLS and NVLSTree rows below use the prior "
                      "{:.0f} GB/s (8 GPUs), not a measured rate.\n", fit.machine.nvlsGBps);
  else if (fit.machine.nvlsGBps > 0 && !forced.nvlsOff &&
           std::none_of(fit.freed.begin(), fit.freed.end(), [](const std::string& p) { return p == "nvlsGBps"; }))
    md += fmt::format("NVLS: no fitted run could show its rate (forced to another algorithm, or no AllReduce on 2+ GPUs "
                      "a node), so NVLS and NVLSTree rows below use the prior {:.0f} GB/s (8 GPUs), not a measured rate.\n",
                      fit.machine.nvlsGBps);
  // The sizes the fit saw (from --min-bytes up): a projected size outside them is an extrapolation in size too.
  double fitLo = 0, fitHi = 0;
  for (const auto& p : fit.points)
    if (p.counts(fo.minBytes)) {
      fitLo = fitLo == 0 ? p.bytes : std::min(fitLo, p.bytes);
      fitHi = std::max(fitHi, p.bytes);
    }
  // What the fitted runs forced (forcedOf's parts, each once), and whether the projection follows it. NVLS off
  // has its own line above when every run had it; when only some did, it is named here.
  const bool allNvlsOff = std::all_of(runs.begin(), runs.end(), [](const NcclRun& r) { return r.nvlsOff; });
  std::vector<std::string> runForced;
  for (auto& r : runs)
    for (auto& x : forcedOf(r, !allNvlsOff).parts)
      if (std::find(runForced.begin(), runForced.end(), x) == runForced.end()) runForced.push_back(x);
  std::string runForcedText;
  for (auto& x : runForced) runForcedText += (runForcedText.empty() ? "" : ", ") + x;
  if (forced.any())
    md += "Forced: every projected row runs " + forced.text + " (--force " + g.force +
          "): the time of a run so forced, not NCCL's own choice; the pick column says \"forced\".\n";
  else if (!runForcedText.empty())
    md += "Forced runs: the fitted runs had " + runForcedText +
          "; the projected rows are NCCL's own choice (--force given projects them forced too).\n";
  if (ev.empty())
    md += "\nNo validation evidence (" + (g.evidence == "none" ? std::string("--evidence none") : ev.source + " has no cells") +
          "): no row carries an error band, every row is marked unvalidated "
          "(run `nccl validate -o DIR` and pass DIR/nccl-evidence.json).\n";
  else {
    const std::string from = builtIn ? std::string("the repository's public validation built into this binary, ") +
                                           publicNcclEvidencePath() +
                                           ": nccl validate --sets tests/data/public-nccl-tests/sets.json; pass --evidence "
                                           "FILE for your own"
                                     : g.evidence;
    md += "\nError bands: the largest |error| that validation (" + from +
          ") saw for the same algorithm and size regime on predicted runs" +
          (ev.coverage ? ", over every collective validated there; 'beyond validation' names what it did not cover.\n"
                       : ". This evidence file predates GPUs-per-node and collective coverage: those are not checked.\n");
  }
  std::string csv = "fabric,nodes,gpus_per_node,coll,bytes,time_us,busbw_gbps,algo,proto,band_pct,beyond_validation,forced\n";
  for (auto& fab : fabrics) {
    NcclMachine m = fit.machine;
    if (fab.nic > 0) m.nicGBps = fab.nic, m.nicLineGBps = fab.nic * 50 / 48;  // another fabric: its own line rate
    if (fab.nics > 0) m.nicsPerNode = fab.nics;
    if (forced.channels > 0) m.channels = forced.channels;
    if (forced.nvlsOff) m.nvlsGBps = 0;
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
            NcclCost best;
            try {
              best = ncclChoose(c, m, S, forced.force).best;
            } catch (const InputError& e) {
              if (!forced.any()) throw;
              // A forced algorithm or protocol that this shape does not offer: the row says so.
              md += fmt::format("| {} | {} | - | - | - | forced | not projected: {} |\n", N, human(S), e.what());
              csv += fmt::format("{},{},{},{},{},,,,,,\"not projected: {}\",\"{}\"\n", fab.name, N, G, c,
                                 static_cast<long long>(S), e.what(), forced.text);
              continue;
            }
            double busbw = S * ncclBusFactor(c, N * G) / (best.timeUs * 1e3);
            auto b = bandOf(ev, ncclAlgoInfo(best.algo).name, c, S, N, G);
            if (fitLo > 0 && (S < fitLo || S > fitHi))
              b.beyond += (b.beyond.empty() ? "" : "; ") +
                          (S < fitLo ? "below the fitted sizes (from " + human(fitLo) + ")"
                                     : "above the fitted sizes (to " + human(fitHi) + ")");
            md += fmt::format("| {} | {} | {:.1f} | {:.1f} | {} | {}{} | {} |\n", N, human(S), best.timeUs, busbw, bandText(b),
                              pick(best.algo, best.proto), forced.any() ? " (forced)" : "", b.beyond.empty() ? "-" : b.beyond);
            csv += fmt::format("{},{},{},{},{},{:.3f},{:.3f},{},{},{},\"{}\",\"{}\"\n", fab.name, N, G, c, static_cast<long long>(S),
                               best.timeUs, busbw, ncclAlgoInfo(best.algo).name, ncclProtoName(best.proto),
                               bandCsv(b), b.beyond, forced.text);
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

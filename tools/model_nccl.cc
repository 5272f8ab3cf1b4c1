#include "model_nccl.h"

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

namespace fb::tools {
namespace {

// ---- options shared by the three subcommands ----------------------------------------------------

struct MachineOpts {
  double nics = 0, nicGBps = 48, ringGBps = 365, nvlsGBps = 480;
  bool pcie = false, collNet = false;
  std::string given;  // KEY=VALUE,... applied to every run (algo=ring, proto=simple, channels=24)
};

void addMachineOptions(CLI::App* c, MachineOpts& o) {
  c->add_option("--nics", o.nics, "NICs per node (default: one per GPU, rails)");
  c->add_option("--nic-gbps", o.nicGBps, "prior per-NIC rate as rings deliver it, GB/s (default 48: NDR 400G)");
  c->add_option("--ring-gbps", o.ringGBps, "prior intra-node ring busbw, GB/s (default 365: H100 NVLink)");
  c->add_option("--nvls-gbps", o.nvlsGBps, "prior NVLS busbw inside a node, GB/s; 0 = no NVSwitch multicast (default 480)");
  c->add_flag("--pcie", o.pcie, "GPUs inside a node talk over PCIe (tuning.cc's PCI latencies), not NVLink");
  c->add_flag("--collnet", o.collNet, "the fabric offers CollNet/SHARP");
  c->add_option("--given", o.given, "what every run forced, KEY=VALUE,... (algo=ring, proto=simple, channels=24)");
}

void positive(double v, const char* what, bool zeroOk = false) {
  if (!(std::isfinite(v) && (v > 0 || (zeroOk && v == 0))))
    throw InputError(fmt::format("{} {}: must be {}", what, v, zeroOk ? ">= 0" : "> 0"));
}

NcclMachine priorOf(const MachineOpts& o) {
  positive(o.nics, "--nics", true);
  positive(o.nicGBps, "--nic-gbps");
  positive(o.ringGBps, "--ring-gbps");
  positive(o.nvlsGBps, "--nvls-gbps", true);
  NcclMachine m;
  m.nicsPerNode = o.nics;
  m.nicGBps = o.nicGBps;
  m.ringIntraGBps = o.ringGBps;
  m.nvlsGBps = o.nvlsGBps;
  m.nvlink = !o.pcie;
  m.collNet = o.collNet;
  return m;
}

std::vector<NcclRun> loadRuns(const std::vector<std::string>& files, const std::string& given) {
  std::vector<NcclRun> out;
  for (const auto& f : files) {
    for (const auto& rd : loadRunsAny(f)) {
      auto rs = ncclRunsOf(rd, given);
      if (rs.empty()) throw InputError(fmt::format("{}: no measured rows to use", f));
      out.insert(out.end(), rs.begin(), rs.end());
    }
  }
  return out;
}

std::string human(double b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int k = 0;
  while (k < 4 && b >= 1024) b /= 1024, ++k;
  return b == std::floor(b) ? fmt::format("{:.0f} {}", b, u[k]) : fmt::format("{:.3g} {}", b, u[k]);
}

std::string pick(NcclAlgo a, NcclProto p) { return ncclAlgoInfo(a).name + "/" + ncclProtoName(p); }

// Size regimes the evidence is kept by: latency-bound, the middle, bandwidth-bound.
std::string regimeOf(double bytes) { return bytes < (1 << 20) ? "<1MiB" : bytes < (64 << 20) ? "1-64MiB" : ">=64MiB"; }

std::string machineLine(const NcclFit& f) {
  const auto& m = f.machine;
  std::string s = fmt::format("per-NIC {:.1f} GB/s, node ring {:.0f} GB/s, NVLS {:.0f} GB/s, latency x{:.2f} intra / x{:.2f} net, "
                              "LL eff {:.2f}, LL128 eff {:.2f}",
                              m.nicGBps, m.ringIntraGBps, m.nvlsGBps, m.latIntraScale, m.latNetScale, m.effLL, m.effLL128);
  std::string freed;
  for (auto& p : f.freed) freed += (freed.empty() ? "" : ", ") + p;
  return s + " (calibrated: " + freed + "; the others stay at the prior)";
}

std::string runShape(const NcclRun& r) {
  std::string s = fmt::format("{} x {} GPUs, {}", r.nodes, r.gpusPerNode, r.coll);
  if (r.force.algo) s += ", NCCL_ALGO=" + ncclAlgoInfo(*r.force.algo).name;
  if (r.force.proto) s += ", NCCL_PROTO=" + ncclProtoName(*r.force.proto);
  if (r.channels > 0) s += fmt::format(", {} channels", r.channels);
  return s;
}

// Per-size table of one run: measured, model, error, NCCL's pick in the model.
std::string pointsTable(const std::vector<NcclFitPoint>& pts) {
  std::string s = "| size | measured us | model us | error % | model's NCCL pick | note |\n|---:|---:|---:|---:|---|---|\n";
  for (const auto& p : pts)
    s += fmt::format("| {} | {:.1f} | {:.1f} | {:+.1f} | {} | {} |\n", human(p.bytes), p.measuredUs, p.modelUs, p.errPct,
                     pick(p.algo, p.proto), p.noisy ? "noisy: in/out-of-place differ > 20 %, outside the bound" : "");
  return s;
}

// ---- evidence: |error| of predicted (never fitted) points by algorithm and regime ---------------

struct Evidence {
  struct Cell {
    std::vector<double> err;
    int maxNodes = 0;
    double minBytes = 0, maxBytes = 0;
  };
  std::map<std::pair<std::string, std::string>, Cell> cells;  // (algorithm, regime)
  void add(const NcclFitPoint& p, int nodes) {
    if (p.noisy) return;
    auto& c = cells[{ncclAlgoInfo(p.algo).name, regimeOf(p.bytes)}];
    c.err.push_back(std::fabs(p.errPct));
    c.maxNodes = std::max(c.maxNodes, nodes);
    c.minBytes = c.minBytes == 0 ? p.bytes : std::min(c.minBytes, p.bytes);
    c.maxBytes = std::max(c.maxBytes, p.bytes);
  }
  nlohmann::json toJson(const std::string& origin) const {
    nlohmann::json j;
    j["origin"] = origin;
    j["cells"] = nlohmann::json::array();
    for (const auto& [k, c] : cells) {
      auto e = c.err;
      std::sort(e.begin(), e.end());
      j["cells"].push_back({{"algo", k.first}, {"regime", k.second}, {"points", e.size()}, {"median_abs_err_pct", e[e.size() / 2]},
                            {"max_abs_err_pct", e.back()}, {"max_nodes", c.maxNodes}, {"min_bytes", c.minBytes},
                            {"max_bytes", c.maxBytes}});
    }
    return j;
  }
};

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

// ---- validation of one set ----------------------------------------------------------------------

struct SetSpec {
  std::string name, source;
  std::vector<std::string> fit, predict;
  MachineOpts prior;
};

struct SetResult {
  std::string md, csv;
  int missed = 0, runs = 0;
};

SetResult validateSet(const SetSpec& s, double minBytes, double boundMed, double boundMax, Evidence& ev) {
  auto fitRuns = loadRuns(s.fit, s.prior.given);
  auto predRuns = loadRuns(s.predict, s.prior.given);
  NcclFitOptions fo;
  fo.minBytes = minBytes;
  auto fit = ncclCalibrate(priorOf(s.prior), fitRuns, fo);
  SetResult r;
  r.md += fmt::format("### Set {}{}\n\nFitted on {} run(s): {}.\nMachine: {}.\n\n", s.name,
                      s.source.empty() ? "" : " (" + s.source + ")", fitRuns.size(),
                      [&] {
                        std::string x;
                        for (auto& f : fitRuns) x += (x.empty() ? "" : "; ") + f.label + " [" + runShape(f) + "]";
                        return x;
                      }(),
                      machineLine(fit));
  r.md += fmt::format("| run | shape | role | sizes >= {} | median abs err % | max abs err % | bound ({:.0f} / {:.0f} %) | noisy sizes left out |\n"
                      "|---|---|---|---:|---:|---:|---|---|\n",
                      human(minBytes), boundMed, boundMax);
  std::string detail;
  auto row = [&](const NcclRun& run, bool predicted) {
    auto pts = ncclPredict(fit.machine, run);
    auto [med, mx] = ncclErrStats(pts, minBytes);
    int n = 0;
    std::string noisy;
    for (auto& p : pts) {
      if (p.bytes < minBytes) continue;
      if (p.noisy) noisy += (noisy.empty() ? "" : ", ") + human(p.bytes);
      else ++n;
      if (predicted) ev.add(p, run.nodes);
      r.csv += fmt::format("{},{},{},{},{},{},{:.3f},{:.3f},{:.2f},{},{}\n", s.name, run.label, predicted ? "predicted" : "fitted",
                           run.nodes, run.gpusPerNode, static_cast<long long>(p.bytes), p.measuredUs, p.modelUs, p.errPct,
                           pick(p.algo, p.proto), p.noisy ? 1 : 0);
    }
    bool ok = med <= boundMed && mx <= boundMax;
    std::string verdict = !predicted ? "(fit)" : n == 0 ? "no sizes" : ok ? "within" : "MISSED";
    if (predicted) {
      ++r.runs;
      if (!ok || n == 0) ++r.missed;
    }
    r.md += fmt::format("| {} | {} | {} | {} | {:.1f} | {:.1f} | {} | {} |\n", run.label, runShape(run),
                        predicted ? "predicted" : "fitted", n, med, mx, verdict, noisy.empty() ? "-" : noisy);
    detail += fmt::format("\n#### {} ({}, {})\n\n", run.label, runShape(run), predicted ? "predicted" : "fitted") + pointsTable(pts);
  };
  for (auto& f : fitRuns) row(f, false);
  for (auto& p : predRuns) row(p, true);
  r.md += "\n<details><summary>every size</summary>\n" + detail + "\n</details>\n\n";
  return r;
}

MachineOpts priorFromJson(const nlohmann::json& j, const std::string& where) {
  MachineOpts o;
  static const std::set<std::string> keys = {"nics", "nic_gbps", "ring_gbps", "nvls_gbps", "pcie", "collnet", "given"};
  for (auto& [k, v] : j.items()) {
    if (!keys.count(k)) throw InputError(fmt::format("{}: unknown prior key '{}' (known: nics, nic_gbps, ring_gbps, nvls_gbps, pcie, collnet, given)", where, k));
    if (k == "pcie" || k == "collnet") {
      if (!v.is_boolean()) throw InputError(fmt::format("{}: '{}' must be true or false", where, k));
      (k == "pcie" ? o.pcie : o.collNet) = v.get<bool>();
    } else if (k == "given") {
      if (!v.is_string()) throw InputError(fmt::format("{}: 'given' must be a string", where));
      o.given = v.get<std::string>();
    } else {
      if (!v.is_number()) throw InputError(fmt::format("{}: '{}' must be a number", where, k));
      double x = v.get<double>();
      (k == "nics" ? o.nics : k == "nic_gbps" ? o.nicGBps : k == "ring_gbps" ? o.ringGBps : o.nvlsGBps) = x;
    }
  }
  return o;
}

std::vector<SetSpec> readSets(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw InputError(fmt::format("{}: cannot read the set file", file));
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: not JSON ({})", file, e.what()));
  }
  if (!j.contains("sets") || !j["sets"].is_array()) throw InputError(fmt::format("{}: needs a \"sets\" array", file));
  const fs::path dir = fs::path(file).parent_path();
  auto rel = [&](const std::string& p) { return fs::path(p).is_absolute() ? p : (dir / p).string(); };
  std::vector<SetSpec> out;
  for (const auto& s : j["sets"]) {
    SetSpec x;
    x.name = s.value("name", std::string("?"));
    const std::string where = file + " set " + x.name;
    for (auto& [k, v] : s.items())
      if (k != "name" && k != "source" && k != "fit" && k != "predict" && k != "prior" && k != "about")
        throw InputError(fmt::format("{}: unknown key '{}' (known: name, source, fit, predict, prior)", where, k));
    x.source = s.value("source", std::string());
    if (!s.contains("fit") || !s["fit"].is_array() || s["fit"].empty())
      throw InputError(fmt::format("{}: needs a non-empty \"fit\" list", where));
    for (auto& f : s["fit"]) x.fit.push_back(rel(f.get<std::string>()));
    if (s.contains("predict"))
      for (auto& f : s["predict"]) x.predict.push_back(rel(f.get<std::string>()));
    if (s.contains("prior")) x.prior = priorFromJson(s["prior"], where);
    out.push_back(x);
  }
  return out;
}

void writeOut(const std::string& dir, const std::string& name, const std::string& text) {
  fs::create_directories(dir);
  fb::writeFileAtomic((fs::path(dir) / name).string(), text);
}

// ---- the subcommands ----------------------------------------------------------------------------

struct Args {
  CLI::App *fit = nullptr, *val = nullptr, *prj = nullptr;
  MachineOpts mo;
  std::vector<std::string> fitRuns, predRuns;
  std::string setsFile, out, evidence, minBytes = "1M", sizes = "1M,16M,256M,1G,8G";
  std::vector<std::string> fabrics, colls;
  std::vector<int> nodes, gpus;
  double boundMed = 10, boundMax = 20;
  bool require = false;
} g;

int cmdFit() {
  auto runs = loadRuns(g.fitRuns, g.mo.given);
  NcclFitOptions fo;
  fo.minBytes = static_cast<double>(fb::parseSize(g.minBytes));
  auto fit = ncclCalibrate(priorOf(g.mo), runs, fo);
  std::string md = "# fabricbench-model nccl fit\n\nMachine: " + machineLine(fit) + ".\n\n";
  for (auto& r : runs) {
    auto pts = ncclPredict(fit.machine, r);
    auto [med, mx] = ncclErrStats(pts, fo.minBytes);
    md += fmt::format("## {} ({})\n\nFit residual at sizes >= {}: median {:.1f} %, max {:.1f} % (in-sample, not a validation).\n\n",
                      r.label, runShape(r), human(fo.minBytes), med, mx) +
          pointsTable(pts) + "\n";
  }
  std::fputs(md.c_str(), stdout);
  if (!g.out.empty()) writeOut(g.out, "nccl-fit.md", md);
  return 0;
}

int cmdValidate() {
  const double minBytes = static_cast<double>(fb::parseSize(g.minBytes));
  positive(g.boundMed, "--median-err");
  positive(g.boundMax, "--max-err");
  std::vector<SetSpec> sets;
  if (!g.setsFile.empty()) {
    if (!g.fitRuns.empty() || !g.predRuns.empty()) throw InputError("--sets replaces --fit/--predict: give one or the other");
    sets = readSets(g.setsFile);
  } else {
    if (g.fitRuns.empty() || g.predRuns.empty()) throw InputError("validate needs --fit RUN... and --predict RUN... (or --sets FILE.json)");
    SetSpec s;
    s.name = "given";
    s.fit = g.fitRuns;
    s.predict = g.predRuns;
    s.prior = g.mo;
    sets.push_back(s);
  }
  std::string md = fmt::format("# fabricbench-model nccl validate\n\nEach set is fitted on the runs marked fitted and predicts the others "
                               "(projections of the model, not measurements). Bound at every size >= {}: median |error| <= {:.0f} %, "
                               "max <= {:.0f} %; sizes whose log's own in- and out-of-place times differ by more than 20 % are listed "
                               "and left out.\n\n",
                               human(minBytes), g.boundMed, g.boundMax);
  std::string csv = "set,run,role,nodes,gpus_per_node,bytes,measured_us,model_us,err_pct,model_pick,noisy\n";
  Evidence ev;
  int missed = 0, runs = 0;
  std::string summary = "| set | predicted runs | within the bound |\n|---|---:|---:|\n", body;
  for (auto& s : sets) {
    auto r = validateSet(s, minBytes, g.boundMed, g.boundMax, ev);
    summary += fmt::format("| {} | {} | {} |\n", s.name, r.runs, r.runs - r.missed);
    body += r.md;
    csv += r.csv;
    missed += r.missed;
    runs += r.runs;
  }
  md += summary + fmt::format("\n{} of {} predicted runs within the bound.\n\n", runs - missed, runs) + body;
  std::fputs(md.c_str(), stdout);
  if (!g.out.empty()) {
    writeOut(g.out, "nccl-validation.md", md);
    writeOut(g.out, "nccl-validation.csv", csv);
    writeOut(g.out, "nccl-evidence.json", ev.toJson(g.setsFile.empty() ? "validate --fit/--predict" : g.setsFile).dump(2) + "\n");
  }
  return g.require && missed > 0 ? 1 : 0;
}

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
  auto fit = ncclCalibrate(priorOf(g.mo), runs, fo);
  if (fabrics.empty()) fabrics.push_back({"measured"});
  std::vector<int> gpus = g.gpus.empty() ? std::vector<int>{runs.front().gpusPerNode} : g.gpus;

  std::string md = "# fabricbench-model nccl project (projections, not measurements)\n\nCalibrated on: ";
  for (auto& r : runs) md += r.label + " [" + runShape(r) + "]; ";
  md += "\nMachine: " + machineLine(fit) + ".\n";
  md += g.evidence.empty() ? "\nNo --evidence file: projections carry no error band (run `nccl validate -o DIR` and pass DIR/nccl-evidence.json).\n"
                           : "\nError bands: the largest |error| that validation (" + g.evidence +
                                 ") saw for the same algorithm and size regime on predicted runs.\n";
  std::string csv = "fabric,nodes,gpus_per_node,coll,bytes,time_us,busbw_gbps,algo,proto,band_pct,beyond_validation\n";
  for (auto& fab : fabrics) {
    NcclMachine m = fit.machine;
    if (fab.nic > 0) m.nicGBps = fab.nic;
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

}  // namespace

CLI::App* addNcclCommands(CLI::App& app) {
  auto* n = app.add_subcommand("nccl", "NCCL's algorithms and protocols calibrated on nccl-tests logs: fit, validate, project");
  n->require_subcommand(1);
  g.fit = n->add_subcommand("fit", "calibrate on runs; the machine, the error and the model's NCCL pick at every size");
  g.fit->add_option("runs", g.fitRuns, "nccl-tests logs or fabricbench nccl runs (FILE[:coll=..,ranks=..,nodes=..][#k])")->required();
  g.val = n->add_subcommand("validate", "fit on some runs, predict the others; the validation table and nccl-evidence.json");
  g.val->add_option("--fit", g.fitRuns, "runs to calibrate on (repeatable)");
  g.val->add_option("--predict", g.predRuns, "runs to predict (repeatable)");
  g.val->add_option("--sets", g.setsFile, "JSON file of sets: {\"sets\":[{name, source, fit:[...], predict:[...], prior:{...}}]}");
  g.val->add_option("--median-err", g.boundMed, "bound on the median |error| of a predicted run, % (default 10)");
  g.val->add_option("--max-err", g.boundMax, "bound on the max |error| of a predicted run, % (default 20)");
  g.val->add_flag("--require", g.require, "exit 1 when a predicted run misses the bound");
  g.prj = n->add_subcommand("project", "projected NCCL times on N nodes x G GPUs with error bands (projections, not measurements)");
  g.prj->add_option("--fit", g.fitRuns, "runs to calibrate on (repeatable)")->required();
  g.prj->add_option("--nodes", g.nodes, "node counts (e.g. 16,64,256,1024)")->delimiter(',');
  g.prj->add_option("--gpus", g.gpus, "GPUs per node (default: the first fitted run's)")->delimiter(',');
  g.prj->add_option("--coll", g.colls, "collectives (default allreduce)")->delimiter(',');
  g.prj->add_option("--sizes", g.sizes, "sizes, comma-separated (default 1M,16M,256M,1G,8G; K/M/G = 1024^k)");
  g.prj->add_option("--fabric", g.fabrics, "a fabric to project (repeatable): NAME=nic=GBPS[,nics=R]; default: the fitted one");
  g.prj->add_option("--evidence", g.evidence, "nccl-evidence.json from `nccl validate -o DIR`: the error bands");
  for (auto* c : {g.fit, g.val, g.prj}) {
    addMachineOptions(c, g.mo);
    c->add_option("--min-bytes", g.minBytes, "smallest size in the loss and the statistics (default 1M)");
    c->add_option("-o,--out", g.out, "output folder (the tables as .md/.csv)");
  }
  return n;
}

int runNcclCommands(CLI::App*) {
  if (*g.fit) return cmdFit();
  if (*g.val) return cmdValidate();
  if (*g.prj) return cmdProject();
  return 2;
}

}  // namespace fb::tools

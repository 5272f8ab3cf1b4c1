#include "model_nccl.h"
#include "model_nccl_common.h"
#include "model_evidence.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "model/nccl.h"
#include "report/import.h"
#include "report/result_sink.h"

namespace fs = std::filesystem;
using namespace fb::model;
using fb::InputError;


namespace fb::tools::ncclcmd {

Args g;

// ---- options shared by the three subcommands ----------------------------------------------------

void addMachineOptions(CLI::App* c, MachineOpts& o) {
  c->add_option("--nics", o.nics, "NICs per node (default: one per GPU, rails)");
  c->add_option("--nic-gbps", o.nicGBps, "prior per-NIC rate as rings deliver it, GB/s (default 48: 46-48 per NDR NIC, nccl-tests issues 290, 267)");
  c->add_option("--nic-line-gbps", o.nicLineGBps,
                "per-NIC signalling rate, reached with more than 2 channels on a NIC, GB/s (default: the per-NIC rate x 50/48, "
                "the fitted one where a fit moves it: NDR 48 -> 50)");
  c->add_option("--ring-gbps", o.ringGBps, "prior intra-node ring busbw, GB/s (default: by the logs' GPU, e.g. 240 for A100 SXM "
                 "from NCCL's 12 x 20; else 365: 8 x H100 Ring 365-370, NVIDIA/nccl issue 1455)");
  c->add_option("--nvls-gbps", o.nvlsGBps, "prior NVLS AllReduce busbw of 8 GPUs in a node, GB/s (G GPUs get x 2(G-1)/(G+1) / (14/9)); 0 = no "
                 "NVSwitch multicast (default: by the logs' GPU, 0 before Hopper; else 480: 8 x H100, nccl-tests issue 212)");
  c->add_flag_callback("--pcie", [&o] { o.pcie = true; },
                       "GPUs inside a node talk over PCIe (tuning.cc's PCI latencies, no NVLS), not NVLink (default: by the logs' GPU)");
  c->add_flag_callback("--nvlink", [&o] { o.pcie = false; },
                       "GPUs inside a node talk over NVLink (e.g. PCIe cards joined by NVLink bridges), whatever the GPU");
  c->add_flag("--collnet", o.collNet, "the fabric offers CollNet/SHARP");
  c->add_option("--given", o.given, "what every run forced, KEY=VALUE,... (algo=ring, proto=simple, channels=24, nvls=0 "
                "for NCCL_NVLS_ENABLE=0)");
}

void positive(double v, const char* what, bool zeroOk) {
  if (!(std::isfinite(v) && (v > 0 || (zeroOk && v == 0))))
    throw InputError(fmt::format("{} {}: must be {}", what, v, zeroOk ? ">= 0" : "> 0"));
}

void checkMachineOptions(const MachineOpts& o) {
  // 0 NICs is no fabric; one per GPU is the default, not a value to give.
  if (o.nics && !(std::isfinite(*o.nics) && *o.nics > 0)) throw InputError(fmt::format("--nics = {}: must be > 0", *o.nics));
  positive(o.nicGBps, "--nic-gbps");
  positive(o.nicLineGBps, "--nic-line-gbps", true);
  if (o.ringGBps) positive(*o.ringGBps, "--ring-gbps");
  if (o.nvlsGBps) positive(*o.nvlsGBps, "--nvls-gbps", true);
}

// The first run's GPU name that a log gives ("" when none does).
static std::string firstGpu(const std::vector<NcclRun>& runs) {
  for (const auto& r : runs)
    if (!r.gpu.empty()) return r.gpu;
  return "";
}

// A GPU's name as drivers spell it, folded: case, spaces and the vendor words older drivers leave out
// ("A100-SXM4-40GB" and "NVIDIA A100-SXM4-40GB", "Tesla V100-SXM2-32GB" and "NVIDIA Tesla V100-SXM2-32GB").
static std::string gpuKey(const std::string& gpu) {
  std::string key;
  for (const auto& w : text::words(gpu)) {
    std::string lw;
    for (char c : w) lw += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lw == "nvidia" || lw == "tesla" || lw == "geforce" || lw == "amd") continue;
    key += (key.empty() ? "" : " ") + lw;
  }
  return key;
}

// One fit is one machine: runs whose logs name different GPUs, or rccl-tests beside nccl-tests, are refused (the
// prior and every calibrated rate would be one machine's, fitted to two). A run naming no GPU joins any, with a warning.
static void checkOneMachine(const std::vector<NcclRun>& runs) {
  auto name = [](const NcclRun& r) { return r.source.empty() ? r.label : r.source; };
  const NcclRun *named = nullptr, *unnamed = nullptr;
  for (const auto& r : runs) {
    if (r.gpu.empty()) {
      if (!unnamed) unnamed = &r;
      continue;
    }
    if (!named) named = &r;
    else if (gpuKey(r.gpu) != gpuKey(named->gpu))
      throw InputError(fmt::format("{} ran on {} GPUs and {} on {}: one fit is one machine; fit each machine's logs "
                                   "apart",
                                   name(*named), named->gpu, name(r), r.gpu));
  }
  const auto rccl = std::find_if(runs.begin(), runs.end(), [](const NcclRun& r) { return r.rccl; });
  const auto other = std::find_if(runs.begin(), runs.end(), [](const NcclRun& r) { return !r.rccl; });
  if (rccl != runs.end() && other != runs.end())
    throw InputError(fmt::format("{} is an rccl-tests log (AMD's RCCL) and {} {}: one fit is one machine; fit each "
                                 "machine's logs apart",
                                 name(*rccl), name(*other),
                                 other->gpu.empty() ? "says nothing of rccl-tests" : "ran on " + other->gpu + " GPUs"));
  if (named && unnamed)
    printLine(programName(), ": warning: ", name(*unnamed), " names no GPU: taken to be the same machine as ",
              name(*named), " (", named->gpu, ")");
}

NcclMachine priorOf(const MachineOpts& o, const std::vector<NcclRun>& runs, std::string* note) {
  checkMachineOptions(o);
  checkOneMachine(runs);
  NcclMachine m;
  m.nicsPerNode = o.nics.value_or(0);
  m.nicGBps = o.nicGBps;
  // Not given: the line follows the per-NIC rate the fit finds (x 50/48, as NDR's 48 of 50), since a NIC that
  // moves 13.5 GB/s on 2 channels is no 400G NIC that more channels could take to 50 (set G's AllToAll).
  m.nicLineGBps = o.nicLineGBps;
  m.nvlink = true;
  m.collNet = o.collNet;
  const std::string gpu = firstGpu(runs);
  const auto fam = gpu.empty() ? std::nullopt : ncclGpuPrior(gpu);
  if (fam) {
    if (fam->ringGBps > 0) m.ringIntraGBps = fam->ringGBps;
    m.ringLineGBps = fam->ringLineGBps;
    m.nvlsGBps = fam->nvlsGBps;
    if (fam->pcie) m.nvlink = false;
  }
  const auto warp = gpu.empty() ? std::nullopt : ncclP2pWarpPrior(gpu);
  if (warp) m.p2pWarpGBps = warp->gbps;
  const bool rccl = std::any_of(runs.begin(), runs.end(), [](const NcclRun& r) { return r.rccl; });
  if (rccl) m.nvlsGBps = 0;  // RCCL has no NVLS, wherever it runs
  if (o.pcie) m.nvlink = !*o.pcie;
  const bool pcieGiven = o.pcie && *o.pcie && !(fam && fam->pcie);  // --pcie on a GPU the table does not call PCIe
  if (pcieGiven) {
    m.nvlsGBps = 0;  // no NVLink, so no NVSwitch to multicast through
    m.ringLineGBps = 0;  // and no NVLink rate to bound the ring
  }
  if (o.ringGBps) m.ringIntraGBps = *o.ringGBps;
  if (o.nvlsGBps) m.nvlsGBps = *o.nvlsGBps;
  if (note) {
    *note = gpu.empty() ? "the logs name no GPU: the Hopper defaults"
            : fam       ? fmt::format("from the logs' GPU, {}: {}, {}", gpu, fam->family, fam->source)
                        : fmt::format("the logs' GPU, {}, is not in the GPU table: the Hopper defaults", gpu);
    if (rccl && !(fam && fam->nvlsGBps == 0)) *note += "; rccl-tests logs: RCCL has no NVLS";
    if (warp) *note += "; P2P across nodes: " + warp->source;
    if (pcieGiven && !o.nvlsGBps) *note += "; --pcie: no NVLS";
    if (o.ringGBps || o.nvlsGBps || o.pcie) *note += "; the options given replace these";
  }
  return m;
}

// The fit of the runs, made with and without NVLS where the logs leave it open (below).
static NcclFit calibrateRunsNvls(const MachineOpts& o, const std::vector<NcclRun>& runs, const NcclFitOptions& fo,
                                 std::string* note) {
  NcclMachine prior = priorOf(o, runs, note);
  NcclFit fit = ncclCalibrate(prior, runs, fo);
  // NVLS left open: no GPU named (or one the table lacks), no --nvls-gbps, and a run NVLS could serve. The Hopper
  // prior assumes NVSwitch multicast, which an A100, a V100 or a PCIe node lacks: fit without it as well and keep
  // the fit closer to the logs.
  const std::string gpu = firstGpu(runs);
  const bool open = (gpu.empty() || !ncclGpuPrior(gpu)) && !o.nvlsGBps && prior.nvlsGBps > 0 &&
                    std::any_of(runs.begin(), runs.end(), [](const NcclRun& r) { return !r.nvlsOff && r.gpusPerNode > 1; });
  if (!open) return fit;
  NcclMachine without = prior;
  without.nvlsGBps = 0;
  NcclFit other = ncclCalibrate(without, runs, fo);
  // The Hopper prior stays unless the fit without NVLS is closer by over kNvlsMargin points of median |error|: an
  // H100 node's curve can be fitted by the ring alone within a few points (NVIDIA's DGX H100 sample without its GPU
  // names: 3.6 % without, 7.2 % with), while an A100 pair fitted with NVLS misses by tens (AWS p4de: 38.3 against 2.5).
  constexpr double kNvlsMargin = 10;
  const bool keepOther = other.medianAbsErrPct + kNvlsMargin < fit.medianAbsErrPct;
  const bool points = std::any_of(fit.points.begin(), fit.points.end(),
                                  [&](const NcclFitPoint& p) { return p.counts(fo.minBytes); });
  if (note)
    *note += !points ? std::string("; whether the nodes have NVLS is not known from the logs and no size from --min-bytes "
                                   "up tells: kept the Hopper prior (--nvls-gbps decides it)")
                     : fmt::format("; whether the nodes have NVLS is not known from the logs: fitted with it (the Hopper "
                                   "prior) and without, median |error| {:.1f} % with, {:.1f} % without: {} (--nvls-gbps "
                                   "decides it)",
                                   fit.medianAbsErrPct, other.medianAbsErrPct,
                                   keepOther ? fmt::format("kept without (closer by over {:.0f} points)", kNvlsMargin)
                                             : fmt::format("kept the prior (without is not closer by over {:.0f} points)",
                                                           kNvlsMargin));
  return keepOther ? other : fit;
}

// The fit of the runs, marked where its node ring rate is a default that nothing here set: no GPU figure (a PCIe
// card, an AMD GPU, an unnamed one), no --ring-gbps, and no single-node run to fit it from.
NcclFit calibrateRuns(const MachineOpts& o, const std::vector<NcclRun>& runs, const NcclFitOptions& fo, std::string* note) {
  NcclFit fit = calibrateRunsNvls(o, runs, fo, note);
  const std::string gpu = firstGpu(runs);
  const auto fam = gpu.empty() ? std::nullopt : ncclGpuPrior(gpu);
  fit.ringDefault = !o.ringGBps && !(fam && fam->ringGBps > 0) &&
                    std::none_of(fit.freed.begin(), fit.freed.end(),  // "ringIntraGBps (on the single-node runs)" too
                                 [](const std::string& p) { return p.rfind("ringIntraGBps", 0) == 0; });
  return fit;
}

std::vector<NcclRun> loadRuns(const std::vector<std::string>& files, const std::string& given) {
  std::vector<NcclRun> out;
  for (const auto& f : files) {
    for (const auto& rd : loadRunsAny(f)) {
      auto rs = ncclRunsOf(rd, given);
      if (rs.empty()) throw InputError(fmt::format("{}: no measured rows to use", f));
      for (auto& r : rs) r.source = f;
      out.insert(out.end(), rs.begin(), rs.end());
    }
  }
  return out;
}

std::string pick(NcclAlgo a, NcclProto p) { return ncclAlgoInfo(a).name + "/" + ncclProtoName(p); }

std::string machineLine(const NcclFit& f) {
  const auto& m = f.machine;
  std::string s = fmt::format("per-NIC {:.1f} GB/s (line {:.1f}), node ring {:.0f} GB/s{}, NVLS {:.0f} GB/s (8 GPUs), latency x{:.2f} intra / x{:.2f} net, "
                              "LL eff {:.2f}, LL128 eff {:.2f} ring / {:.2f} tree",
                              m.nicGBps, m.nicLine(), m.ringIntraGBps,
                              f.ringDefault ? " (a default, not this node's: no 1 x G run to fit it; --ring-gbps gives it)" : "",
                              m.nvlsGBps, m.latIntraScale, m.latNetScale, m.effLL, m.effLL128, m.effTreeLL128);
  if (std::find(f.freed.begin(), f.freed.end(), "latDirectScale") != f.freed.end())
    s += fmt::format(", intra-node latency x{:.2f} between GPUs of one process (P2P/direct pointer)", m.latDirectScale);
  std::string freed;
  for (auto& p : f.freed) freed += (freed.empty() ? "" : ", ") + p;
  if (std::find(f.freed.begin(), f.freed.end(), "copyGBps") != f.freed.end())
    s += fmt::format(", one rank: max(launch {:.1f} us, {:.1f} us + S / {:.0f} GB/s)", m.launchUs, m.copyLatUs, m.copyGBps);
  if (std::find(f.freed.begin(), f.freed.end(), "p2pChGBps") != f.freed.end())
    s += fmt::format(", P2P {:.1f} GB/s a channel inside a node", m.p2pChGBps);
  if (std::find(f.freed.begin(), f.freed.end(), "a2aIntraGBps") != f.freed.end())
    s += fmt::format(", AllToAll inside a node {:.0f} GB/s", m.a2aIntra());
  std::string bounds;
  for (const auto& b : f.atBound) bounds += (bounds.empty() ? "" : ", ") + b;
  return s + " (calibrated: " + freed + "; the others stay at the prior)" +
         (bounds.empty() ? "" : "; left at a bound, where the data pushed them (the bound, not the data, sets the value): " + bounds);
}

std::string runShape(const NcclRun& r) {
  std::string s = fmt::format("{} x {} GPUs, {}", r.nodes, r.gpusPerNode, r.coll);
  if (r.force.algo) s += ", NCCL_ALGO=" + ncclAlgoInfo(*r.force.algo).name;
  if (r.force.proto) s += ", NCCL_PROTO=" + ncclProtoName(*r.force.proto);
  if (r.nvlsOff) s += ", NVLS off";  // NCCL_NVLS_ENABLE=0, or the INFO's 0 nvls channels
  if (r.channels > 0) s += fmt::format(", {} channels", r.channels);
  for (const auto& u : r.unmodelled) s += ", " + u + " (not modelled)";
  return s;
}

// The sizes left out of a run because nccl-tests counted wrong elements in them ("" when none): "2 MiB, 4 MiB (both
// placements); 64 MiB out of place (its in-place time is used)".
std::string wrongNote(const NcclRun& r) {
  if (r.wrongRows.empty()) return "";
  std::map<double, std::pair<bool, bool>> by;  // bytes -> (out of place wrong, in place wrong)
  for (const auto& [b, in] : r.wrongRows) (in ? by[b].second : by[b].first) = true;
  std::string both, one;
  for (const auto& [b, w] : by) {
    if (w.first && w.second) both += (both.empty() ? "" : ", ") + human(b);
    else one += fmt::format("{}{} {} (its {} time is used)", one.empty() ? "" : "; ", human(b),
                            w.first ? "out of place" : "in place", w.first ? "in-place" : "out-of-place");
  }
  return "Left out, nccl-tests counted wrong elements (#wrong > 0): " + (both.empty() ? "" : both + " (both placements)") +
         (both.empty() || one.empty() ? "" : "; ") + one + ".\n\n";
}

// Per-size table of one run: measured, model, error, NCCL's pick in the model.
std::string pointsTable(const std::vector<NcclFitPoint>& pts) {
  std::string s = "| size | measured us | model us | error % | model's NCCL pick | note |\n|---:|---:|---:|---:|---|---|\n";
  for (const auto& p : pts)
    s += fmt::format("| {} | {:.1f} | {:.1f} | {:+.1f} | {} | {} |\n", human(p.bytes), p.measuredUs, p.modelUs, p.errPct,
                     pick(p.algo, p.proto),
                     p.noisy     ? "noisy: in/out-of-place differ > 20 %, outside the bound"
                     : p.outlier ? "outlier: over twice a larger size's time, left out of the fit"
                                 : "");
  return s;
}

void writeOut(const std::string& dir, const std::string& name, const std::string& text) {
  fs::create_directories(dir);
  fb::writeFileAtomic((fs::path(dir) / name).string(), text);
}


}  // namespace fb::tools::ncclcmd

namespace fb::tools {
namespace {
using namespace ncclcmd;

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

SetResult validateSet(const SetSpec& s, double minBytes, double boundMed, double boundMax, EvidenceBuilder& ev) {
  auto fitRuns = loadRuns(s.fit, s.prior.given);
  auto predRuns = loadRuns(s.predict, s.prior.given);
  {
    auto all = fitRuns;
    all.insert(all.end(), predRuns.begin(), predRuns.end());
    checkOneMachine(all);  // the predicted runs are the fitted machine's too
  }
  NcclFitOptions fo;
  fo.minBytes = minBytes;
  std::string priorNote;
  auto fit = calibrateRuns(s.prior, fitRuns, fo, &priorNote);
  SetResult r;
  r.md += fmt::format("### Set {}{}\n\nFitted on {} run(s): {}.\nPriors: {}.\nMachine: {}.\n\n", s.name,
                      s.source.empty() ? "" : " (" + s.source + ")", fitRuns.size(),
                      [&] {
                        std::string x;
                        for (auto& f : fitRuns) x += (x.empty() ? "" : "; ") + f.label + " [" + runShape(f) + "]";
                        return x;
                      }(),
                      priorNote, machineLine(fit));
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
      // Evidence: predicted (never fitted) points, noisy sizes left out.
      if (predicted && !p.noisy) ev.add(ncclAlgoInfo(p.algo).name, run.coll, p.bytes, run.nodes, run.gpusPerNode, p.errPct);
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
    detail += fmt::format("\n#### {} ({}, {})\n\n", run.label, runShape(run), predicted ? "predicted" : "fitted") +
              wrongNote(run) + pointsTable(pts);
  };
  for (auto& f : fitRuns) row(f, false);
  for (auto& p : predRuns) row(p, true);
  r.md += "\n<details><summary>every size</summary>\n" + detail + "\n</details>\n\n";
  return r;
}

MachineOpts priorFromJson(const nlohmann::json& j, const std::string& where) {
  MachineOpts o;
  static const std::set<std::string> keys = {"nics", "nic_gbps", "nic_line_gbps", "ring_gbps", "nvls_gbps", "pcie", "collnet", "given"};
  for (auto& [k, v] : j.items()) {
    if (!keys.count(k)) throw InputError(fmt::format("{}: unknown prior key '{}' (known: nics, nic_gbps, nic_line_gbps, ring_gbps, nvls_gbps, pcie, collnet, given)", where, k));
    if (k == "pcie" || k == "collnet") {
      if (!v.is_boolean()) throw InputError(fmt::format("{}: '{}' must be true or false", where, k));
      if (k == "pcie") o.pcie = v.get<bool>();
      else o.collNet = v.get<bool>();
    } else if (k == "given") {
      if (!v.is_string()) throw InputError(fmt::format("{}: 'given' must be a string", where));
      o.given = v.get<std::string>();
    } else {
      if (!v.is_number()) throw InputError(fmt::format("{}: '{}' must be a number", where, k));
      double x = v.get<double>();
      if (k == "ring_gbps") o.ringGBps = x;
      else if (k == "nvls_gbps") o.nvlsGBps = x;
      else if (k == "nics" && !(x > 0)) throw InputError(fmt::format("{}: 'nics' = {}: must be > 0", where, x));
      else if (k == "nics") o.nics = x;
      else (k == "nic_gbps" ? o.nicGBps : o.nicLineGBps) = x;
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


// ---- fit and validate ----------------------------------------------------------------------------

int cmdFit() {
  auto runs = loadRuns(g.fitRuns, g.mo.given);
  NcclFitOptions fo;
  fo.minBytes = static_cast<double>(fb::parseSize(g.minBytes));
  std::string priorNote;
  auto fit = calibrateRuns(g.mo, runs, fo, &priorNote);
  std::string md = "# fabricbench-model nccl fit\n\nPriors: " + priorNote + ".\nMachine: " + machineLine(fit) + ".\n";
  const auto used = std::count_if(fit.points.begin(), fit.points.end(),
                                  [&](const NcclFitPoint& p) { return p.counts(fo.minBytes); });
  if (used <= static_cast<long>(fit.freed.size()))
    md += fmt::format("Few sizes: {} size(s) >= {} for {} calibrated parameter(s), so the residuals below say little "
                      "about the model; a sweep from 1 MiB up pins the latencies and protocols.\n",
                      used, human(fo.minBytes), fit.freed.size());
  std::string runsMd, faster;
  std::string csv = "run,nodes,gpus_per_node,bytes,measured_us,model_us,err_pct,model_pick,noisy,outlier\n";
  for (auto& r : runs) {
    auto pts = ncclPredict(fit.machine, r);
    auto [med, mx] = ncclErrStats(pts, fo.minBytes);
    for (const auto& p : pts)
      csv += fmt::format("{},{},{},{},{:.3f},{:.3f},{:.2f},{},{},{}\n", r.label, r.nodes, r.gpusPerNode,
                         static_cast<long long>(p.bytes), p.measuredUs, p.modelUs, p.errPct, pick(p.algo, p.proto),
                         p.noisy ? 1 : 0, p.outlier ? 1 : 0);
    runsMd += fmt::format("## {} ({})\n\nFit residual at sizes >= {}: median {:.1f} %, max {:.1f} % (in-sample, not a validation).\n\n",
                          r.label, runShape(r), human(fo.minBytes), med, mx) +
              wrongNote(r) + pointsTable(pts) + "\n";
    // A multi-node run far faster than the fitted machine can carry between nodes: most likely nodes that share one
    // NVLink domain (GB200/GB300 NVL72 racks, NCCL's MNNVL), which NCCL's tuning treats as one node.
    std::vector<double> signedErr;
    for (const auto& p : pts)
      if (p.counts(fo.minBytes)) signedErr.push_back(p.errPct);
    std::sort(signedErr.begin(), signedErr.end());
    if (r.nodes > 1 && !signedErr.empty() && signedErr[signedErr.size() / 2] > 50) {
      const std::string head = fmt::format("Faster than its nodes' NICs: {} ({}): the calibrated model is still {:+.0f} % "
                                           "slower at the median size",
                                           r.label, runShape(r), signedErr[signedErr.size() / 2]);
      // Only GPUs that NVLink can join across hosts (GB200/GB300, GH200 NVL32) or unnamed ones get the NVLink-domain
      // advice; a named GPU without it gets the checks alone.
      static const std::regex kNvlAcrossHosts(R"(\bG[BH][23]?00\b)", std::regex::icase);
      const bool nvlDomain = r.gpu.empty() || !ncclGpuPrior(r.gpu) || std::regex_search(r.gpu, kNvlAcrossHosts);
      if (!nvlDomain) {
        faster += head + "; check --nics, --nic-gbps and --collnet (SHARP in the switches), and the sizes the table "
                         "marks noisy or outlier.\n";
      } else {
        // The advice as an argument: the run's file, its coll= hint kept, the domains' counts, its #k. A domain
        // holds at most 72 GPUs (an NVL72 rack; 32 in a GH200 NVL32): the fewest domains of whole hosts that fit.
        static const std::regex kGh200(R"(\bGH200\b)", std::regex::icase);
        const int domainGpus = std::regex_search(r.gpu, kGh200) ? 32 : 72;
        const int hostsPerDomain = std::max(1, domainGpus / std::max(1, r.gpusPerNode));
        int domains = (r.nodes + hostsPerDomain - 1) / hostsPerDomain;
        while (r.nodes % domains != 0) ++domains;
        const auto arg = fb::splitInputArg(r.source.empty() ? r.label : r.source);
        const int n = r.nodes * r.gpusPerNode;
        const std::string advice = fmt::format("{}:{}ranks={},nodes={}{}", arg.file,
                                               arg.hints.coll.empty() ? "" : "coll=" + arg.hints.coll + ",", n, domains,
                                               arg.hints.pick > 0 ? fmt::format("#{}", arg.hints.pick) : "");
        faster += head + fmt::format(". Nodes that share one NVLink domain (GB200/GB300 NVL72, NCCL_MNNVL_ENABLE; at "
                                     "most {} GPUs) are one node to NCCL: give the run as {} x {} GPUs ({}); otherwise "
                                     "check --nics, --nic-gbps and --collnet (SHARP in the switches).\n",
                                     domainGpus, domains, n / domains, advice);
      }
    }
  }
  md += (faster.empty() ? "" : "\n" + faster) + "\n" + runsMd;
  std::fputs(md.c_str(), stdout);
  if (!g.out.empty()) {
    writeOut(g.out, "nccl-fit.md", md);
    writeOut(g.out, "nccl-fit.csv", csv);
  }
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
  EvidenceBuilder ev;
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
    writeOut(g.out, "nccl-evidence.json", ev.toJson("nccl", g.setsFile.empty() ? "nccl validate --fit/--predict" : g.setsFile).dump(2) + "\n");
  }
  return g.require && missed > 0 ? 1 : 0;
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
  g.prj->add_option("--evidence", g.evidence, "nccl-evidence.json from `nccl validate -o DIR`: the error bands (default: the "
                    "repository's public validation, built in; 'none': no bands, every row marked unvalidated)");
  g.prj->add_option("--force", g.force, "project every row forced, KEY=VALUE,... (algo=ring, proto=simple, channels=24, nvls=0), "
                    "or 'given' for --given's settings (default: NCCL's own choice, whatever the fitted runs forced)");
  for (auto* c : {g.fit, g.val, g.prj}) {
    addMachineOptions(c, g.mo);
    c->add_option("--min-bytes", g.minBytes, "smallest size in the loss and the statistics (default 1M)");
    c->add_option("-o,--out", g.out, "output folder (the tables as .md/.csv)");
  }
  return n;
}

int runNcclCommands(CLI::App*) {
  checkMachineOptions(g.mo);
  if (*g.fit) return cmdFit();
  if (*g.val) return cmdValidate();
  if (*g.prj) return ncclcmd::cmdProject();
  return 2;
}

}  // namespace fb::tools

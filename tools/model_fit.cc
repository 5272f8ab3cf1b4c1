// fabricbench-model fit: every series of the given runs fitted to per-hop latency and bandwidth, the
// parameters and the error at every measured size (fit.md, fit.csv, plots).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/units.h"
#include "model/model.h"
#include "model_common.h"
#include "report/import.h"
#include "report/process.h"
#include "report/result_sink.h"
#include "report/summary.h"

namespace fs = std::filesystem;
using namespace fb::model;
using fb::Series;

namespace fb::tools {

// ---- fit ---------------------------------------------------------------------------------------

std::string fitTable(const HopFit& f) {
  std::string md = "| size | algorithm | measured | fitted | error | segment |\n|---:|---|---:|---:|---:|---:|\n";
  for (auto& p : f.points)
    md += fmt::format("| {} | {} | {} | {} | {:+.1f}% | {} |\n", human(p.bytes), algoName(p.algo), us(p.measuredUs), us(p.fittedUs),
                      p.errPct, p.segment + 1);
  return md;
}

int cmdFit(const std::vector<std::string>& runs, const std::string& out, const std::string& pattern,
           const std::string& algo, bool noPlots, const std::string& intra, double nics) {
  FitOptions opt;
  if (!algo.empty()) opt.forceAlgo = parseAlgo(algo);
  opt.nicsPerNode = nics;
  std::optional<Source> intraSrc;
  if (!intra.empty()) {
    intraSrc = parseSource(intra, "intra");
    checkIntraSource(*intraSrc);
  }
  std::vector<Loaded> ls;
  for (auto& r : runs) ls.push_back(load(r));
  std::string dir = out.empty() ? (fs::path(ls[0].run.dir) / "model").string() : out;
  makeOutDir(dir);
  Plotter pl(dir, !noPlots);
  std::string md = "# fabricbench-model: fitted latency-bandwidth curves\n\n";
  md += "Per-hop model: a collective of S bytes on n ranks = hops x alpha + bytes on the hop x beta (see the formulas in "
        "lib/model/model.h), fitted to the measured time at every size (least squares on relative error, Eigen QR); "
        "a new segment starts where the data switch regime (protocol switch, e.g. NCCL LL -> LL128 -> Simple), chosen by "
        "BIC. Error = (fitted - measured) / measured. A series with fewer than 4 sizes, or a median |error| over 10%, "
        "is not used.\n\n";
  md += "Command: `fabricbench-model fit";
  for (auto& r : runs) md += " " + r;
  if (!pattern.empty()) md += " --series " + pattern;
  if (intraSrc) md += " --intra " + intra;
  if (nics != 1) md += fmt::format(" --nics {}", nics);
  md += "`\n\n";
  std::string csv = "kind,run,coll,impl,path,placement,nranks,nnodes,size_bytes,algo,measured_us,fitted_us,err_pct,segment\n";
  int n = 0;
  for (auto& l : ls)
    for (auto& s : l.series) {
      if (!pattern.empty() && !fb::seriesMatches(s, pattern) && s.impl != pattern) continue;
      ++n;
      std::string name = seriesName(l, s);
      md += fmt::format("## {}\n\n", cell(name));
      std::printf("%s\n", name.c_str());
      // N x G: the inter-node hop, given the intra-node link for this collective
      std::optional<Link> intraLink;
      FitOptions so = opt;
      if (intraSrc && s.nNodes > 1 && s.nRanks != s.nNodes) {
        try {
          // The same implementation's single-node series (tcp for tcp, mpi for mpi) unless --intra names one, fitted
          // with the same --algo.
          Source src = *intraSrc;
          if (!src.spec && src.pattern.empty()) src.pattern = s.impl;
          intraLink = resolve(src, s.coll, "intra", nullptr, 1, opt.forceAlgo);
        } catch (const InputError& e) {
          md += fmt::format("**Not fitted**: {}\n\n", e.what());
          std::printf("  not fitted: %s\n", e.what());
          continue;
        }
        so.intra = &*intraLink;
      }
      auto f = fitSeries(s, so);
      if (f.segs.empty()) {
        md += fmt::format("**Not fitted**: {}\n\n", f.why);
        std::printf("  not fitted: %s\n", f.why.c_str());
        continue;
      }
      if (!f.nxg.empty()) {
        md += fmt::format("Fitted: the {}.\n\n", f.nxg);
        std::printf("  fitted: the %s\n", f.nxg.c_str());
      }
      md += fmt::format("{}{}\n\n", f.usable ? "" : "**Not used**: " + f.why + ". ", segText(f.segs));
      md += fmt::format("Fit error: median |error| {:.1f}%, max {:.1f}%; knee (latency term = bandwidth term) at {}.\n\n",
                        f.medianAbsErrPct, f.maxAbsErrPct, std::isfinite(f.kneeBytes) ? human(f.kneeBytes) : "—");
      std::printf("  %s\n  median |err| %.1f%%, max %.1f%%%s\n", segText(f.segs).c_str(), f.medianAbsErrPct,
                  f.maxAbsErrPct, f.usable ? "" : ("  NOT USED: " + f.why).c_str());
      for (auto& p : f.points) {
        std::printf("    %10s  %-18s measured %12s  fitted %12s  %+6.1f%%\n", human(p.bytes).c_str(), algoName(p.algo).c_str(),
                    us(p.measuredUs).c_str(), us(p.fittedUs).c_str(), p.errPct);
        csv += fmt::format("fit,{},{},{},{},{},{},{},{},{},{},{},{:.3f},{}\n", csvq(l.run.label), s.coll, csvq(s.impl),
                           csvq(s.path), s.inPlace ? "in" : "out", s.nRanks, s.nNodes, p.bytes, algoName(p.algo), p.measuredUs,
                           p.fittedUs, p.errPct, p.segment + 1);
      }
      md += fitTable(f) + "\n";
      // measured points over the fitted curve
      std::string body = fmt::format(
          "set title '{}'\nset logscale x 2\nset logscale y 10\nset format x '%.0b%B'\nset xlabel 'size (bytes)'\nset ylabel 'time (us)'\n"
          "set key top left\nset grid\n$m << EOD\n",
          name);
      for (auto& p : f.points) body += fmt::format("{} {} {}\n", p.bytes, p.measuredUs, p.fittedUs);
      body += "EOD\nplot $m using 1:3 with lines lw 2 title 'fitted', $m using 1:2 with points pt 7 title 'measured'\n";
      auto png = pl.draw(safeName(fmt::format("fit_{}_{}_{}", n, s.coll, s.impl)), body);
      if (!png.empty()) md += fmt::format("![fit]({})\n\n", png);
    }
  if (n == 0) throw InputError(fmt::format("--series '{}' matches no series", pattern));
  fb::writeFileAtomic((fs::path(dir) / "fit.md").string(), md);
  fb::writeFileAtomic((fs::path(dir) / "fit.csv").string(), csv);
  std::printf("wrote %s/fit.md, %s/fit.csv\n", dir.c_str(), dir.c_str());
  if (!pl.skipped.empty()) std::printf("plots skipped: %s\n", pl.skipped.c_str());
  for (auto& e : pl.errors) std::fprintf(stderr, "fabricbench-model: plot failed: %s\n", e.c_str());
  return pl.errors.empty() ? 0 : 1;
}


std::function<int()> setupFit(CLI::App& fit) {
  struct A {
    std::vector<std::string> runs;
    std::string out, pattern, algo, intra;
    double nics = 1;
    bool noPlots = false;
  };
  auto a = std::make_shared<A>();
  fit.add_option("runs", a->runs, "run folders, table.csv files, nccl-tests logs, perftest output")->required();
  fit.add_option("-o,--out", a->out, "output folder (default: <first run>/model)");
  fit.add_option("--series", a->pattern, "only series matching this (impl, path or label)");
  fit.add_option("--algo", a->algo, "assume this algorithm for every row (default: the row's, else ring)");
  fit.add_option("--intra", a->intra, "intra-node link for N x G series (G > 1 ranks on each of N > 1 nodes), whose "
                 "inter-node hop is then fitted: RUN:SERIES of a single-node run (its fit for the same collective) or "
                 "spec:NAME[,eff=X][,lat=US]");
  auto* nicsOpt = fit.add_option("--nics", a->nics, "NICs per node in N x G runs (default 1: the node's ranks share one "
                                  "interface, as with the tcp backend)");
  fit.add_flag("--no-plots", a->noPlots, "do not run gnuplot");
  return [a, nicsOpt] {
    checkRange("--nics", a->nics, 0, true);
    if (nicsOpt->count() > 0 && a->intra.empty())
      throw InputError("--nics is the NICs of an N x G run fitted with --intra: give --intra SRC, or leave --nics out");
    return cmdFit(a->runs, a->out, a->pattern, a->algo, a->noPlots, a->intra, a->nics);
  };
}


}  // namespace fb::tools

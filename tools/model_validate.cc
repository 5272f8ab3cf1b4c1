// fabricbench-model validate: fit on small runs, predict bigger measured runs, the error at every size
// and the bound (validation.md, validation.csv, plots).
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

#include "core/impl_facts.h"
#include "core/units.h"
#include "model/model.h"
#include "model_common.h"
#include "model_evidence.h"
#include "report/import.h"
#include "report/process.h"
#include "report/result_sink.h"
#include "report/summary.h"

namespace fs = std::filesystem;
using namespace fb::model;
using fb::Series;

namespace fb::tools {

// ---- validate ----------------------------------------------------------------------------------

struct Band {
  double lo = 1 << 20, hi = 64.0 * (1 << 20);
};

int cmdValidate(const std::string& interRun, const std::string& intraRun, const std::vector<std::string>& checks,
                const std::string& out, const std::string& pattern, const std::string& algo, Band band, double maxPct,
                double medPct, bool require, bool noPlots, double nics) {
  if (interRun.empty() && intraRun.empty()) throw InputError("validate needs --inter RUN and/or --intra RUN to fit");
  std::optional<Loaded> inter, intra;
  if (!interRun.empty()) inter = load(interRun);
  if (!intraRun.empty()) intra = load(intraRun);
  std::vector<Loaded> cs;
  for (auto& c : checks) cs.push_back(load(c));
  std::optional<Algo> force;
  if (!algo.empty()) force = parseAlgo(algo);
  std::string dir = out;
  makeOutDir(dir);
  Plotter pl(dir, !noPlots);

  std::string cmd = "fabricbench-model validate";
  if (inter) cmd += " --inter " + interRun;
  if (intra) cmd += " --intra " + intraRun;
  for (auto& c : checks) cmd += " --check " + c;
  if (!pattern.empty()) cmd += " --series " + pattern;
  if (!algo.empty()) cmd += " --algo " + algo;
  if (nics != 1) cmd += fmt::format(" --nics {}", nics);

  std::string md = "# fabricbench-model validation: PROJECTED from smaller runs, compared with measured runs\n\n";
  md += "Every 'predicted' figure below is **projected** (a model output), fitted only on the runs named as fit inputs; "
        "'measured' figures are the rows of the check runs. Error = (predicted - measured) / measured.\n\n";
  md += fmt::format("Command: `{}`\n\n", cmd);
  md += fmt::format("NICs per node: {} (the tcp backend and Open MPI's tcp BTL use one interface; ranks on a node share "
                    "it).\n\n", nics);
  md += fmt::format("Bound checked: every size in {}..{} within ±{:.0f}%, median |error| in that band <= {:.0f}%.\n\n",
                    human(band.lo), human(band.hi), maxPct, medPct);
  md += "`evidence.json` beside this page keeps the largest and median |error| of the predicted rows per (algorithm, "
        "size regime < 1 MiB / 1-64 MiB / >= 64 MiB) with the node counts, ranks per node and collectives they covered: "
        "`fabricbench-model project --evidence` gives each projected row that band.\n\n";
  std::string csv =
      "kind,check_run,coll,impl,path,placement,nodes,ranks_per_node,size_bytes,algo,measured_us,predicted_us,err_pct,"
      "in_band,intra_input,inter_input\n";
  struct Sum {
    std::string run, coll, impl, shape, algos, closest;
    double maxAbs = 0, medAbs = 0, smallMax = 0;
    int inBand = 0, small = 0;
    bool pass = false;
  };
  std::vector<Sum> sums;
  // evidence.json: |error| of every predicted row per (algorithm, size regime), for project --evidence.
  EvidenceBuilder ev;
  std::string detail;
  bool allPass = true;
  int plotN = 0;
  for (auto& c : cs) {
    for (auto& s : c.series) {
      if (!pattern.empty() && !fb::seriesMatches(s, pattern) && s.impl != pattern) continue;
      int N = std::max(1, s.nNodes);
      if (s.nRanks % N != 0) continue;
      Shape sh{N, s.nRanks / N, nics};
      Inputs in;
      const fb::ImplFacts* facts = fb::findImplFacts(s.impl);
      std::string why, refNote, interNxg;
      // intraForNxG: the intra-node link an N x G fit input's inter-node hop is fitted with
      auto fitFrom = [&](const std::optional<Loaded>& l, const char* what,
                         const Link* intraForNxG = nullptr) -> std::optional<Link> {
        if (!l) {
          why = fmt::format("needs an {} fit input (--{})", what, what);
          return std::nullopt;
        }
        const Series* f = findSeries(*l, s.impl, s.coll, s.dtype, s.inPlace);
        if (!f) {
          why = fmt::format("{} has no {} series of {}", l->run.label, s.impl, s.coll);
          return std::nullopt;
        }
        FitOptions fo;
        fo.forceAlgo = force;
        fo.intra = intraForNxG;
        fo.nicsPerNode = nics;
        auto hf = fitSeries(*f, fo);
        if (!hf.usable && !hf.segs.empty() && facts && facts->modelReference) {
          // The reference rows (MPI) are reported, never held to the bound: Open MPI switches
          // algorithm by size and rank count, so its 2-node curve may be too irregular for the fit's
          // rule; it is used anyway and the rows say so.
          refNote += fmt::format("- {} fit input {}: {}; used anyway for this reference row (reported only)\n", what,
                                 seriesName(*l, *f), hf.why);
          hf.usable = true;
        }
        if (!hf.usable) {
          why = fmt::format("{}: {}", seriesName(*l, *f), hf.why);
          return std::nullopt;
        }
        if (intraForNxG) interNxg = hf.nxg;
        return linkFromFit(hf, seriesName(*l, *f));
      };
      std::string intraNote;
      if (sh.perNode > 1) {
        in.intra = fitFrom(intra, "intra");
        if (!in.intra && sh.nodes > 1) {  // the inter hop bounds each step; say that intra is not modelled
          intraNote = "intra-node hops not modelled (" + why + "): each step costs the inter-node hop";
          in.intraFree = true;
          why.clear();
        }
      }
      if (sh.nodes > 1 && why.empty()) {
        // An N x G --inter run: its inter-node hop is fitted given the intra-node fit input for this series.
        const Series* fi = inter ? findSeries(*inter, s.impl, s.coll, s.dtype, s.inPlace) : nullptr;
        std::optional<Link> nxgIntra;
        if (fi && fi->nNodes > 1 && fi->nRanks != fi->nNodes && intra) {
          nxgIntra = in.intra ? in.intra : fitFrom(intra, "intra");
          if (!nxgIntra)
            why = fmt::format("the inter fit input {} ran {} ranks on {} nodes: its inter-node hop needs a usable "
                              "intra-node fit: {}",
                              seriesName(*inter, *fi), fi->nRanks, fi->nNodes, why);
        }
        if (why.empty()) in.inter = fitFrom(inter, "inter", nxgIntra ? &*nxgIntra : nullptr);
      }
      // host rings (tcp, mpi) step together; NCCL/CUDA pipeline their chunks (core/impl_facts.h)
      in.pipelined = facts && facts->pipelined;
      std::string name = seriesName(c, s);
      if (!why.empty()) {
        detail += fmt::format("## {}\n\nNot predicted: {}\n\n", cell(name), why);
        std::printf("%s: not predicted: %s\n", name.c_str(), why.c_str());
        continue;
      }
      detail += fmt::format("## {}\n\n", cell(name));
      if (in.intra) detail += fmt::format("- intra-node input: {} — {}\n", in.intra->source, segText(in.intra->segs));
      if (in.inter) detail += fmt::format("- inter-node input: {} — {}\n", in.inter->source, segText(in.inter->segs));
      if (in.inter && !interNxg.empty()) detail += fmt::format("- inter-node input fitted as the {}\n", interNxg);
      if (!intraNote.empty()) detail += "- " + intraNote + "\n";
      detail += refNote;
      detail += "\n| size | algorithm (from the row) | measured | predicted (projected) | error |\n|---:|---|---:|---:|---:|\n";
      Sum sm{c.run.label, s.coll, s.impl + (s.inPlace ? " [in]" : ""), fmt::format("{} x {}", sh.nodes, sh.perNode), "", "", 0, 0, 0, 0, 0, false};
      bool named = force.has_value();
      std::map<std::string, std::vector<double>> altErr;  // rows without an algorithm: every formula's |error| in band
      std::vector<double> bandErr;
      std::set<std::string> algos;
      std::string pts;
      int unnamedOrRef = 0;  // rows left out of the evidence
      std::printf("%s\n", name.c_str());
      for (auto& r : s.rows) {
        if (r.bytes == 0 || r.wrong > 0 || !(r.timeUs > 0)) continue;
        auto rowAlgo = fb::model::algoOfRow(r);
        if (rowAlgo) named = true;
        Algo a = force ? *force : rowAlgo.value_or(defaultAlgo(s.coll));
        algos.insert(algoName(a) + (force || rowAlgo ? "" : " (assumed: the row names none)"));
        if (!force && !rowAlgo && r.bytes >= band.lo * 0.999 && r.bytes <= band.hi * 1.001)
          for (Algo alt : hostFormulas(s.coll, sh)) {
            try {
              double ta = timeOf(s.coll, alt, sh, static_cast<double>(r.bytes), in);
              altErr[algoName(alt)].push_back(std::fabs((ta - r.timeUs) / r.timeUs * 100));
            } catch (const InputError&) {
            }
          }
        if (const char* why = fb::model::foldUnfit(a, sh)) {  // as fit leaves them out
          detail += fmt::format("| {} | {} | {} | not predicted: {} | |\n", human(r.bytes), algoName(a), us(r.timeUs), why);
          std::printf("    %10s  %-12s measured %12s  not predicted: %s\n", human(r.bytes).c_str(), algoName(a).c_str(),
                      us(r.timeUs).c_str(), why);
          continue;
        }
        double t = timeOf(s.coll, a, sh, static_cast<double>(r.bytes), in);
        double e = (t - r.timeUs) / r.timeUs * 100;
        // Evidence only from rows held to the bound whose algorithm is known (forced or named by the row): a
        // reference (MPI) row or an assumed algorithm says nothing of that algorithm's error.
        const bool reference = facts && facts->modelReference;
        if (!reference && (force || rowAlgo))
          ev.add(algoName(a), s.coll, static_cast<double>(r.bytes), sh.nodes, sh.perNode, e, s.impl);
        else
          ++unnamedOrRef;
        // sizes rounded down to a multiple of ranks x element (1048572 B on 3 ranks) count as the band's edge
        bool inb = r.bytes >= band.lo * 0.999 && r.bytes <= band.hi * 1.001;
        if (inb) {
          bandErr.push_back(std::fabs(e));
          sm.maxAbs = std::max(sm.maxAbs, std::fabs(e));
          ++sm.inBand;
        } else if (r.bytes < band.lo * 0.999) {
          sm.smallMax = std::max(sm.smallMax, std::fabs(e));
          ++sm.small;
        }
        detail += fmt::format("| {} | {} | {} | {} | {:+.1f}%{} |\n", human(r.bytes), algoName(a), us(r.timeUs), us(t), e,
                              inb ? "" : " (outside the band)");
        std::printf("    %10s  %-12s measured %12s  predicted %12s  %+6.1f%%%s\n", human(r.bytes).c_str(),
                    algoName(a).c_str(), us(r.timeUs).c_str(), us(t).c_str(), e, inb ? "" : "");
        csv += fmt::format("projected,{},{},{},{},{},{},{},{},{},{},{},{:.3f},{},{},{}\n", csvq(c.run.label), s.coll,
                           csvq(s.impl), csvq(s.path), s.inPlace ? "in" : "out", sh.nodes, sh.perNode, r.bytes,
                           algoName(a), r.timeUs, t, e, inb ? "yes" : "no",
                           csvq(in.intra ? in.intra->source : (in.intraFree ? "not modelled" : "")),
                           csvq(in.inter ? in.inter->source : ""));
        (void)0;
        pts += fmt::format("{} {} {}\n", r.bytes, r.timeUs, t);
      }
      if (unnamedOrRef > 0)
        ev.leftOut.push_back(name + (facts && facts->modelReference
                                         ? ": a reference row (reported, never held to the bound)"
                                         : ": its rows name no algorithm (the formula was assumed)"));
      for (auto& a : algos) sm.algos += (sm.algos.empty() ? "" : ", ") + a;
      if (!altErr.empty()) {
        std::string bestA;
        double bestM = 1e300;
        std::string all;
        for (auto& [an, es] : altErr) {
          double med = fb::median(es);
          all += fmt::format("{}{} {:.1f}%", all.empty() ? "" : ", ", an, med);
          if (med < bestM) {
            bestM = med;
            bestA = an;
          }
        }
        sm.closest = fmt::format("{} (median |error| {:.1f}%; all: {})", bestA, bestM, all);
        detail += fmt::format("\nThe rows do not name their algorithm; the formula closest to the measurement in the band: "
                              "**{}**.\n", sm.closest);
      }
      (void)named;
      sm.medAbs = bandErr.empty() ? NAN : fb::median(bandErr);
      sm.pass = sm.inBand > 0 && sm.maxAbs <= maxPct && sm.medAbs <= medPct;
      if (!sm.pass) allPass = false;
      detail += fmt::format("\nIn {}..{}: max |error| {:.1f}%, median {:.1f}% ({} sizes) -> {}; below {}: max |error| "
                            "{:.1f}% ({} sizes).\n\n",
                            human(band.lo), human(band.hi), sm.maxAbs, sm.medAbs, sm.inBand,
                            sm.pass ? "within the bound" : "NOT within the bound", human(band.lo), sm.smallMax, sm.small);
      std::string body = fmt::format(
          "set title '{} (predicted = projected from the fit inputs)'\nset logscale x 2\nset logscale y 10\nset format x '%.0b%B'\n"
          "set xlabel 'size (bytes)'\nset ylabel 'time (us)'\nset key top left\nset grid\n$m << EOD\n{}EOD\n"
          "plot $m using 1:3 with lines lw 2 title 'predicted (projected)', $m using 1:2 with points pt 7 title "
          "'measured'\n",
          name, pts);
      auto png = pl.draw(safeName(fmt::format("validate_{}_{}_{}_{}x{}", ++plotN, s.coll, s.impl, sh.nodes, sh.perNode)),
                         body);
      if (!png.empty()) detail += fmt::format("![validation]({})\n\n", png);
      sums.push_back(sm);
    }
  }
  if (sums.empty()) throw InputError("no check series could be predicted (see the lines above)");
  md += "## Summary\n\n| check run | collective | impl | nodes x ranks/node | algorithm (rows) | sizes in band | max |error| "
        "in band | median |error| in band | max |error| below band | within bound | closest formula (rows without an algorithm) |\n|---|---|---|---|---|---:|---:|---:|---:|---|---|\n";
  for (auto& sm : sums)
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {:.1f}% | {:.1f}% | {} | {} | {} |\n", cell(sm.run), sm.coll, sm.impl,
                      sm.shape, sm.algos, sm.inBand, sm.maxAbs, sm.medAbs,
                      sm.small ? fmt::format("{:.1f}%", sm.smallMax) : "—", sm.pass ? "yes" : "**no**",
                      sm.closest.empty() ? "—" : cell(sm.closest));
  md += "\n" + detail;
  fb::writeFileAtomic((fs::path(dir) / "validation.md").string(), md);
  fb::writeFileAtomic((fs::path(dir) / "validation.csv").string(), csv);
  fb::writeFileAtomic((fs::path(dir) / "evidence.json").string(), ev.toJson("generic", cmd).dump(2) + "\n");
  std::printf("\nsummary (error = predicted/projected vs measured):\n");
  for (auto& sm : sums)
    std::printf("  %-34s %-13s %-4s %-6s max|err| %5.1f%%  median %5.1f%%  (%d sizes in band; below band max %.1f%%)  %s\n",
                sm.run.c_str(), sm.coll.c_str(), sm.impl.c_str(), sm.shape.c_str(), sm.maxAbs, sm.medAbs, sm.inBand,
                sm.smallMax, sm.pass ? "within bound" : "NOT within bound");
  for (auto& sm : sums)
    // fabricbench's host algorithms name theirs in the rows; for the others the closest formula
    if (const fb::ImplFacts* f = fb::findImplFacts(sm.impl); !sm.closest.empty() && !(f && f->hostAlgorithms))
      std::printf("  %s %s %s %s: closest formula %s\n", sm.run.c_str(), sm.coll.c_str(), sm.impl.c_str(), sm.shape.c_str(),
                  sm.closest.c_str());
  std::printf("wrote %s/validation.md, %s/validation.csv, %s/evidence.json (project --evidence: the error bands)\n",
              dir.c_str(), dir.c_str(), dir.c_str());
  if (!pl.skipped.empty()) std::printf("plots skipped: %s\n", pl.skipped.c_str());
  for (auto& e : pl.errors) std::fprintf(stderr, "fabricbench-model: plot failed: %s\n", e.c_str());
  if (require && !allPass) {
    std::fprintf(stderr, "fabricbench-model: validation bound missed (see the summary)\n");
    return 1;
  }
  return pl.errors.empty() ? 0 : 1;
}


std::function<int()> setupValidate(CLI::App& val) {
  struct A {
    std::string inter, intra, out, pattern, algo, band = "1M:64M";
    std::vector<std::string> checks;
    double maxErr = 10, medErr = 5, nics = 1;
    bool require = false, noPlots = false;
  };
  auto a = std::make_shared<A>();
  val.add_option("--inter", a->inter,
                 "run whose one-rank-per-node series give the inter-node hop (e.g. the 2-node run); an N x G run's "
                 "series give it fitted given --intra and --nics");
  val.add_option("--intra", a->intra, "run whose single-node series give the intra-node hop (e.g. 1 node x 2 ranks)");
  val.add_option("--check", a->checks, "measured runs to predict (repeatable)")->required();
  val.add_option("-o,--out", a->out, "output folder for validation.md/.csv and plots")->required();
  val.add_option("--series", a->pattern, "only series matching this (e.g. tcp)");
  val.add_option("--algo", a->algo, "assume this algorithm (default: each row's, else ring)");
  val.add_option("--band", a->band, "size band of the bound, LO:HI (default 1M:64M)");
  val.add_option("--max-err", a->maxErr, "bound on |error| at every size in the band, % (default 10)");
  val.add_option("--median-err", a->medErr, "bound on the median |error| in the band, % (default 5)");
  val.add_option("--nics", a->nics, "NICs per node in the check runs and an N x G --inter run (default 1: one "
                 "interface shared by the node's ranks)");
  val.add_flag("--require", a->require, "exit 1 when a series misses the bound");
  val.add_flag("--no-plots", a->noPlots, "do not run gnuplot");
  return [a] {
    Band b;
    auto c = a->band.find(':');
    if (c == std::string::npos) throw InputError(fmt::format("--band '{}': expected LO:HI, e.g. 1M:64M", a->band));
    b.lo = parseBytes(a->band.substr(0, c), "--band");
    b.hi = parseBytes(a->band.substr(c + 1), "--band");
    if (b.lo > b.hi) throw InputError(fmt::format("--band '{}': LO > HI", a->band));
    checkRange("--max-err", a->maxErr, 0, true);
    checkRange("--median-err", a->medErr, 0, true);
    checkRange("--nics", a->nics, 0, true);
    return cmdValidate(a->inter, a->intra, a->checks, a->out, a->pattern, a->algo, b, a->maxErr, a->medErr, a->require,
                       a->noPlots, a->nics);
  };
}


}  // namespace fb::tools

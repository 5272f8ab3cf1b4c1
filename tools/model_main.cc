// fabricbench-model: measured curves -> fitted per-hop latency/bandwidth -> projected collective
// time on N nodes x G ranks (ring, tree, hierarchical; the fastest per size, named) -> training-step
// estimate -> fabric cost. A plain program (no MPI). Subcommands:
//   fit       RUN...                           fitted parameters and the error at every measured size
//   validate  --inter RUN [--intra RUN] --check RUN...   predict measured runs from smaller ones
//   project   --inter SRC... [--intra SRC] --nodes LIST [--gpus LIST] ...   projected, costed rows
// RUN = a results folder, a table.csv, an nccl-tests log or perftest output. SRC = spec:NAME[,eff=X][,lat=US]
// or RUN:SERIES (the series of RUN that matches SERIES, per collective). Projected rows go to
// projected.csv / validation.csv (column kind = projected), never into a table.csv.
// Exit codes: 0 done, 1 a plot failed or a validation bound was missed (validate --require), 2 bad input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/units.h"
#include "model/model.h"
#include "model_nccl.h"
#include "report/import.h"
#include "report/process.h"
#include "report/result_sink.h"
#include "report/summary.h"

namespace fs = std::filesystem;
using namespace fb::model;
using fb::Series;

namespace {

// Output folders this process created: removed again when the run ends in bad input, so a rejected
// command leaves no result folder behind.
std::vector<std::string> gCreated;
void makeOutDir(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) gCreated.push_back(dir);
  fs::create_directories(dir);
}
void removeCreated() {
  for (auto& d : gCreated) {
    std::error_code ec;
    fs::remove_all(d, ec);
  }
}

std::string human(double b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int k = 0;
  while (k < 4 && b >= 1024) {
    b /= 1024;
    ++k;
  }
  return b == std::floor(b) ? fmt::format("{:.0f} {}", b, u[k]) : fmt::format("{:.4g} {}", b, u[k]);
}
std::string us(double v) {
  if (v >= 1e6) return fmt::format("{:.3f} s", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.2f} ms", v / 1e3);
  return fmt::format("{:.2f} us", v);
}
std::string bw(double g) {
  if (g >= 10) return fmt::format("{:.1f}", g);
  if (g >= 0.1) return fmt::format("{:.3f}", g);
  return fmt::format("{:.4f}", g);
}
std::string cell(std::string s) {
  std::string o;
  for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c == '\n' ? ' ' : c);
  return o;
}
std::string csvq(const std::string& f) {
  if (f.find_first_of(",\"\n") == std::string::npos) return f;
  std::string o = "\"";
  for (char c : f) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

// Sizes as everywhere in the suite (fb::parseSize: K, M, G = 1024^k; KB/KiB the same as K).
double parseBytes(const std::string& t, const char* what) {
  std::size_t b = 0;
  try {
    b = fb::parseSize(t);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: {}", what, e.what()));
  }
  if (b == 0) throw InputError(fmt::format("{}: size '{}' must be > 0", what, t));
  return static_cast<double>(b);
}

// A numeric option given on the command line: finite and within [lo, hi] (open at lo when loOpen).
void checkRange(const char* opt, double v, double lo, bool loOpen, double hi = HUGE_VAL) {
  bool ok = std::isfinite(v) && (loOpen ? v > lo : v >= lo) && v <= hi;
  if (ok) return;
  std::string range = std::isinf(hi) ? fmt::format("{} {}", loOpen ? ">" : ">=", lo)
                                     : fmt::format("in {}{}, {}]", loOpen ? "(" : "[", lo, hi);
  throw InputError(fmt::format("{} = {}: must be {}", opt, v, range));
}

std::vector<int> parseIntList(const std::string& t, const char* what) {
  std::vector<int> out;
  std::stringstream ss(t);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t pos = 0;
    long v = -1;
    try {
      v = std::stol(item, &pos);
    } catch (...) {
      pos = 0;
    }
    if (pos != item.size() || item.empty())
      throw InputError(fmt::format("{} '{}': '{}' is not a whole number", what, t, item));
    if (v < 1) throw InputError(fmt::format("{} = {}: must be >= 1", what, v));
    if (v > 1 << 20) throw InputError(fmt::format("{} = {}: too large", what, v));
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw InputError(fmt::format("{}: empty list", what));
  return out;
}

std::vector<std::string> splitComma(const std::string& t) {
  std::vector<std::string> out;
  std::stringstream ss(t);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

// ---- runs and series -------------------------------------------------------------------------

struct Loaded {
  fb::RunData run;
  std::vector<Series> series;
};

Loaded load(const std::string& arg) {
  Loaded l;
  l.run = fb::loadRunAny(arg);
  l.series = fb::groupSeries(l.run.rows, "");
  return l;
}

std::string seriesName(const Loaded& l, const Series& s) {
  return fmt::format("{}: {} {} {} ranks x {} nodes", l.run.label, s.coll, s.label(), s.nRanks, s.nNodes);
}

// The series of `l` for collective `coll` (same dtype and placement when given) that matches pattern.
const Series* findSeries(const Loaded& l, const std::string& pattern, const std::string& coll, const std::string& dtype,
                         bool inPlace) {
  const Series* any = nullptr;
  for (const auto& s : l.series) {
    if (s.coll != coll) continue;
    if (!pattern.empty() && !fb::seriesMatches(s, pattern) && s.impl != pattern) continue;
    if (!dtype.empty() && s.dtype != dtype) continue;
    if (s.inPlace == inPlace) return &s;
    if (!any) any = &s;
  }
  return any;
}

std::string seriesList(const Loaded& l) {
  std::string o;
  for (auto& s : l.series)
    o += fmt::format("{} {} {} ({} ranks x {} nodes)", o.empty() ? "" : ";", s.coll, s.label(), s.nRanks, s.nNodes);
  return o;
}

// ---- plots -----------------------------------------------------------------------------------

struct Plotter {
  std::string dir;
  bool enabled = true;
  bool have = false;
  std::string terminal = "png";
  std::vector<std::string> errors, files;
  std::string skipped;
  explicit Plotter(const std::string& outDir, bool on) : dir((fs::path(outDir) / "plots").string()), enabled(on) {
    if (!enabled) {
      skipped = "--no-plots";
      return;
    }
    if (fb::findInPath("gnuplot").empty()) {
      skipped = "gnuplot not found in PATH (apt-get install gnuplot-nox)";
      return;
    }
    have = true;
    if (fb::runCommand({"gnuplot", "-e", "set terminal pngcairo"}, std::chrono::seconds(30)).ok()) terminal = "pngcairo";
    makeOutDir(dir);
  }
  // Returns the png path relative to the report ("plots/x.png") or "" when not drawn.
  std::string draw(const std::string& name, const std::string& body) {
    if (!have) return "";
    fs::path png = fs::path(dir) / (name + ".png"), gp = fs::path(dir) / (name + ".gp");
    std::string s = fmt::format("set terminal {} size 1000,700 noenhanced\nset output '{}'\n", terminal, png.string());
    s += body;
    {
      std::ofstream o(gp);
      o << s;
    }
    auto r = fb::runCommand({"gnuplot", gp.string()}, std::chrono::seconds(60));
    if (r.ok() && fs::exists(png)) {
      files.push_back(png.string());
      return "plots/" + name + ".png";
    }
    errors.push_back(fmt::format("gnuplot {}: {}", gp.string(), r.error.empty() ? "no picture written" : r.error));
    return "";
  }
};

std::string safeName(std::string s) {
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  if (s.size() > 80) s = s.substr(0, 80);
  return s;
}

// ---- fit ---------------------------------------------------------------------------------------

std::string fitTable(const HopFit& f) {
  std::string md = "| size | algorithm | measured | fitted | error | segment |\n|---:|---|---:|---:|---:|---:|\n";
  for (auto& p : f.points)
    md += fmt::format("| {} | {} | {} | {} | {:+.1f}% | {} |\n", human(p.bytes), p.algo, us(p.measuredUs), us(p.fittedUs),
                      p.errPct, p.segment + 1);
  return md;
}

std::string segText(const std::vector<Segment>& segs) {
  std::string t;
  if (segs.size() == 1 && segs[0].points == 0)  // a spec: one line for every size
    return fmt::format("alpha {:.2f} us per hop, hop bandwidth {} GB/s (every size)", segs[0].alphaUs, bw(segs[0].gbps()));
  for (std::size_t k = 0; k < segs.size(); ++k)
    t += fmt::format("{}segment {} ({}..{}, {} sizes): alpha {:.2f} us per hop, hop bandwidth {} GB/s", k ? "; " : "",
                     k + 1, human(segs[k].lo), human(segs[k].hi), segs[k].points, segs[k].alphaUs, bw(segs[k].gbps()));
  return t;
}

int cmdFit(const std::vector<std::string>& runs, const std::string& out, const std::string& pattern,
           const std::string& algo, bool noPlots) {
  FitOptions opt;
  if (!algo.empty()) opt.forceAlgo = parseAlgo(algo);
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
  md += "`\n\n";
  std::string csv = "kind,run,coll,impl,path,placement,nranks,nnodes,size_bytes,algo,measured_us,fitted_us,err_pct,segment\n";
  int n = 0;
  for (auto& l : ls)
    for (auto& s : l.series) {
      if (!pattern.empty() && !fb::seriesMatches(s, pattern) && s.impl != pattern) continue;
      ++n;
      auto f = fitSeries(s, opt);
      std::string name = seriesName(l, s);
      md += fmt::format("## {}\n\n", cell(name));
      std::printf("%s\n", name.c_str());
      if (f.segs.empty()) {
        md += fmt::format("**Not fitted**: {}\n\n", f.why);
        std::printf("  not fitted: %s\n", f.why.c_str());
        continue;
      }
      md += fmt::format("{}{}\n\n", f.usable ? "" : "**Not used**: " + f.why + ". ", segText(f.segs));
      md += fmt::format("Fit error: median |error| {:.1f}%, max {:.1f}%; knee (latency term = bandwidth term) at {}.\n\n",
                        f.medianAbsErrPct, f.maxAbsErrPct, std::isfinite(f.kneeBytes) ? human(f.kneeBytes) : "—");
      std::printf("  %s\n  median |err| %.1f%%, max %.1f%%%s\n", segText(f.segs).c_str(), f.medianAbsErrPct,
                  f.maxAbsErrPct, f.usable ? "" : ("  NOT USED: " + f.why).c_str());
      for (auto& p : f.points) {
        std::printf("    %10s  %-18s measured %12s  fitted %12s  %+6.1f%%\n", human(p.bytes).c_str(), p.algo.c_str(),
                    us(p.measuredUs).c_str(), us(p.fittedUs).c_str(), p.errPct);
        csv += fmt::format("fit,{},{},{},{},{},{},{},{},{},{},{},{:.3f},{}\n", csvq(l.run.label), s.coll, csvq(s.impl),
                           csvq(s.path), s.inPlace ? "in" : "out", s.nRanks, s.nNodes, p.bytes, p.algo, p.measuredUs,
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

// ---- validate ----------------------------------------------------------------------------------

// Formulas a library may have used for a collective (for rows that do not name their algorithm).
std::vector<Algo> hostAlgos(const std::string& coll, int n) {
  bool p2 = n > 0 && (n & (n - 1)) == 0;
  if (coll == "allreduce") return {Algo::kRing, Algo::kRecDoubling, Algo::kRabenseifner, Algo::kTree};
  if (coll == "allgather") return p2 ? std::vector<Algo>{Algo::kRing, Algo::kBruck, Algo::kRecDoubling}
                                     : std::vector<Algo>{Algo::kRing, Algo::kBruck};
  if (coll == "reducescatter") return {Algo::kRing, Algo::kRecHalving};
  return {Algo::kRing};
}

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
      std::string why, refNote;
      auto fitFrom = [&](const std::optional<Loaded>& l, const char* what) -> std::optional<Link> {
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
        auto hf = fitSeries(*f, fo);
        if (!hf.usable && s.impl == "mpi") {
          // The reference rows are reported, never held to the bound: Open MPI switches algorithm by
          // size and rank count, so its 2-node curve may be too irregular for the fit's rule; it is
          // used anyway and the rows say so.
          refNote += fmt::format("- {} fit input {}: {}; used anyway for this reference row (reported only)\n", what,
                                 seriesName(*l, *f), hf.why);
          hf.usable = true;
        }
        if (!hf.usable) {
          why = fmt::format("{}: {}", seriesName(*l, *f), hf.why);
          return std::nullopt;
        }
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
      if (sh.nodes > 1 && why.empty()) in.inter = fitFrom(inter, "inter");
      // host rings (tcp, mpi) step together; NCCL/CUDA pipeline their chunks
      in.pipelined = s.impl == "nccl" || s.impl == "nccl-tests" || s.impl == "cuda";
      std::string name = seriesName(c, s);
      if (!why.empty()) {
        detail += fmt::format("## {}\n\nNot predicted: {}\n\n", cell(name), why);
        std::printf("%s: not predicted: %s\n", name.c_str(), why.c_str());
        continue;
      }
      detail += fmt::format("## {}\n\n", cell(name));
      if (in.intra) detail += fmt::format("- intra-node input: {} — {}\n", in.intra->source, segText(in.intra->segs));
      if (in.inter) detail += fmt::format("- inter-node input: {} — {}\n", in.inter->source, segText(in.inter->segs));
      if (!intraNote.empty()) detail += "- " + intraNote + "\n";
      detail += refNote;
      detail += "\n| size | algorithm (from the row) | measured | predicted (projected) | error |\n|---:|---|---:|---:|---:|\n";
      Sum sm{c.run.label, s.coll, s.impl + (s.inPlace ? " [in]" : ""), fmt::format("{} x {}", sh.nodes, sh.perNode), "", "", 0, 0, 0, 0, 0, false};
      bool named = force.has_value();
      std::map<std::string, std::vector<double>> altErr;  // rows without an algorithm: every formula's |error| in band
      std::vector<double> bandErr;
      std::set<std::string> algos;
      std::string pts;
      std::printf("%s\n", name.c_str());
      for (auto& r : s.rows) {
        if (r.bytes == 0 || r.wrong > 0 || !(r.timeUs > 0)) continue;
        auto rowAlgo = fb::model::algoOfRow(r);
        if (rowAlgo) named = true;
        Algo a = force ? *force : rowAlgo.value_or(Algo::kRing);
        algos.insert(algoName(a) + (force || rowAlgo ? "" : " (assumed: the row names none)"));
        if (!force && !rowAlgo && r.bytes >= band.lo * 0.999 && r.bytes <= band.hi * 1.001)
          for (Algo alt : hostAlgos(s.coll, sh.ranks())) {
            try {
              double ta = timeOf(s.coll, alt, sh, static_cast<double>(r.bytes), in);
              altErr[algoName(alt)].push_back(std::fabs((ta - r.timeUs) / r.timeUs * 100));
            } catch (const InputError&) {
            }
          }
        double t = timeOf(s.coll, a, sh, static_cast<double>(r.bytes), in);
        double e = (t - r.timeUs) / r.timeUs * 100;
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
  std::printf("\nsummary (error = predicted/projected vs measured):\n");
  for (auto& sm : sums)
    std::printf("  %-34s %-13s %-4s %-6s max|err| %5.1f%%  median %5.1f%%  (%d sizes in band; below band max %.1f%%)  %s\n",
                sm.run.c_str(), sm.coll.c_str(), sm.impl.c_str(), sm.shape.c_str(), sm.maxAbs, sm.medAbs, sm.inBand,
                sm.smallMax, sm.pass ? "within bound" : "NOT within bound");
  for (auto& sm : sums)
    if (!sm.closest.empty() && sm.impl != "tcp")
      std::printf("  %s %s %s %s: closest formula %s\n", sm.run.c_str(), sm.coll.c_str(), sm.impl.c_str(), sm.shape.c_str(),
                  sm.closest.c_str());
  std::printf("wrote %s/validation.md, %s/validation.csv\n", dir.c_str(), dir.c_str());
  if (!pl.skipped.empty()) std::printf("plots skipped: %s\n", pl.skipped.c_str());
  for (auto& e : pl.errors) std::fprintf(stderr, "fabricbench-model: plot failed: %s\n", e.c_str());
  if (require && !allPass) {
    std::fprintf(stderr, "fabricbench-model: validation bound missed (see the summary)\n");
    return 1;
  }
  return pl.errors.empty() ? 0 : 1;
}

// ---- project -----------------------------------------------------------------------------------

// A link source: spec (same link for every collective) or a measured run + series pattern.
struct Source {
  std::string label, text;
  bool spec = false;
  Link specLink;
  std::optional<Loaded> run;
  std::string pattern;
};

Source parseSource(const std::string& arg, const char* what) {
  Source s;
  std::string t = arg;
  auto eq = t.find('=');
  auto colon = t.find(':');
  if (eq != std::string::npos && (colon == std::string::npos || eq < colon)) {
    s.label = t.substr(0, eq);
    t = t.substr(eq + 1);
    if (s.label.empty()) throw InputError(fmt::format("--{} '{}': empty fabric name before '='", what, arg));
  }
  s.text = t;
  if (t.rfind("spec:", 0) == 0) {
    auto parts = splitComma(t.substr(5));
    const Spec& sp = findSpec(parts.empty() ? "" : parts[0]);
    double eff = -1, lat = -1;
    for (std::size_t i = 1; i < parts.size(); ++i) {
      auto e = parts[i].find('=');
      std::string k = parts[i].substr(0, e), v = e == std::string::npos ? "" : parts[i].substr(e + 1);
      double d = 0;
      try {
        std::size_t pos = 0;
        d = std::stod(v, &pos);
        if (pos != v.size()) throw 0;
      } catch (...) {
        throw InputError(fmt::format("--{} '{}': '{}' needs a number (eff=0.9, lat=5)", what, arg, parts[i]));
      }
      if (!std::isfinite(d) || d <= 0)
        throw InputError(fmt::format("--{} '{}': '{}' must be a number > 0", what, arg, parts[i]));
      if (k == "eff") eff = d;
      else if (k == "lat") lat = d;
      else throw InputError(fmt::format("--{} '{}': unknown setting '{}' (eff=, lat=)", what, arg, k));
    }
    if (std::string(what) == "inter" && sp.kind != "inter")
      throw InputError(fmt::format("--inter spec:{} is an intra-node link (use --intra)", sp.name));
    if (std::string(what) == "intra" && sp.kind != "intra")
      throw InputError(fmt::format("--intra spec:{} is a network link (use --inter)", sp.name));
    s.spec = true;
    s.specLink = linkFromSpec(sp, eff, lat);
    if (s.label.empty()) s.label = sp.name;
    return s;
  }
  // RUN[:SERIES]: the run may itself contain ':' only as the separator we split on last.
  std::string runPart = t, pat;
  auto c = t.rfind(':');
  if (c != std::string::npos && !fs::exists(t)) {
    runPart = t.substr(0, c);
    pat = t.substr(c + 1);
  }
  std::error_code ec;
  if (!fs::exists(runPart, ec))
    throw InputError(fmt::format("--{} '{}': '{}' is neither spec:NAME nor an existing run folder or log", what, arg,
                                 runPart));
  s.run = load(runPart);
  s.pattern = pat;
  if (s.label.empty()) s.label = s.run->run.label + (pat.empty() ? "" : ":" + pat);
  return s;
}

Link resolve(const Source& s, const std::string& coll, const char* what) {
  if (s.spec) return s.specLink;
  const Series* f = findSeries(*s.run, s.pattern, coll, "", false);
  if (!f) f = findSeries(*s.run, s.pattern, "allreduce", "", false);
  if (!f)
    throw InputError(fmt::format("--{} {}: no series matches '{}' for {} (nor allreduce); the series are:{}", what,
                                 s.text, s.pattern, coll, seriesList(*s.run)));
  auto hf = fitSeries(*f);
  if (!hf.usable) throw InputError(fmt::format("--{} {}: {}: {}", what, s.text, seriesName(*s.run, *f), hf.why));
  if (std::string(what) == "inter" && f->nNodes < 2)
    throw InputError(fmt::format("--inter {}: {} ran on one node: its hops are intra-node", s.text, seriesName(*s.run, *f)));
  if (std::string(what) == "intra" && f->nNodes > 1)
    throw InputError(fmt::format("--intra {}: {} ran on {} nodes: its hops are inter-node", s.text,
                                 seriesName(*s.run, *f), f->nNodes));
  return linkFromFit(hf, seriesName(*s.run, *f));
}

struct ProjectArgs {
  std::vector<std::string> inter;
  std::string intra;
  std::string nodes = "1,2,4,8,16,32,64,128,256,512,1024", gpus = "1", colls = "allreduce,allgather,reducescatter,p2pring";
  std::string sizes = "1M,16M,256M,1G";
  double nics = 0;
  std::string algo;
  // training
  double params = 0;
  std::string gradDtype = "bf16";
  int tp = 1;
  std::string bucket = "25MB";
  double computeMs = -1, overlap = 0;
  std::string prices;
  std::string trainNodes;
  std::string out;
  bool noPlots = false;
};

double dtypeBytes(const std::string& d) {
  if (d == "bf16" || d == "fp16" || d == "float16" || d == "bfloat16") return 2;
  if (d == "fp32" || d == "float32") return 4;
  if (d == "fp8") return 1;
  throw InputError(fmt::format("--grad-dtype '{}': bf16, fp16, fp32 or fp8", d));
}

int cmdProject(const ProjectArgs& a, const std::string& cmdLine) {
  if (a.inter.empty() && a.intra.empty()) throw InputError("project needs --inter SRC (repeatable) and/or --intra SRC");
  auto nodes = parseIntList(a.nodes, "--nodes");
  auto gpus = parseIntList(a.gpus, "--gpus");
  if (a.nics < 0) throw InputError("--nics must be >= 0");
  std::vector<double> sizes;
  for (auto& s : splitComma(a.sizes)) sizes.push_back(parseBytes(s, "--sizes"));
  auto colls = splitComma(a.colls);
  for (auto& c : colls)
    if (c != "allreduce" && c != "allgather" && c != "reducescatter" && c != "p2pring")
      throw InputError(fmt::format("--coll '{}': allreduce, allgather, reducescatter, p2pring", c));
  std::optional<Algo> force;
  if (!a.algo.empty()) force = parseAlgo(a.algo);
  std::vector<Source> fabrics;
  for (auto& i : a.inter) fabrics.push_back(parseSource(i, "inter"));
  std::optional<Source> intraSrc;
  if (!a.intra.empty()) intraSrc = parseSource(a.intra, "intra");
  if (fabrics.empty()) {  // intra-node only: one "fabric" = the node itself
    Source s;
    s.label = "single node";
    fabrics.push_back(s);
    for (int n : nodes)
      if (n != 1) throw InputError("--nodes > 1 needs an --inter link");
  }
  std::set<std::string> labels;
  for (auto& f : fabrics)
    if (!labels.insert(f.label).second) throw InputError(fmt::format("two fabrics named '{}': name them NAME=SRC", f.label));
  for (int g : gpus)
    if (g > 1 && !intraSrc) throw InputError(fmt::format("--gpus {} needs an --intra link (spec:nvlink4-h100, RUN:SERIES)", g));
  std::map<std::string, FabricPrice> prices;
  if (!a.prices.empty()) {
    prices = loadPrices(a.prices);
    for (auto& f : fabrics)
      if (!prices.count(f.label))
        throw InputError(fmt::format("price file {} has no fabric '{}' (name fabrics NAME=SRC to match its entries)",
                                     a.prices, f.label));
  }
  bool training = a.params > 0;
  TrainModel tm;
  if (training) {
    tm.params = a.params;
    tm.gradDtype = a.gradDtype;
    tm.gradBytesPerParam = dtypeBytes(a.gradDtype);
    tm.tp = a.tp;
    tm.bucketBytes = parseBytes(a.bucket, "--bucket");
    if (a.computeMs < 0) throw InputError("--params needs --compute-ms (compute time per step, user input)");
    tm.computeMs = a.computeMs;
    tm.overlap = a.overlap;
  }
  makeOutDir(a.out);
  Plotter pl(a.out, !a.noPlots);

  std::string md = "# fabricbench-model: PROJECTED collective times\n\n";
  md += "**Everything on this page is projected** (a model output, not a measurement): measured curves were fitted "
        "to per-hop latency and bandwidth and carried to other node counts with the algorithm formulas in "
        "lib/model/model.h; spec inputs are nominal line rate x efficiency, and their defaults are marked as such: "
        "replace them with a measurement.\n\n";
  md += fmt::format("Command: `{}`\n\n", cmdLine);
  md += "## Inputs\n\n| fabric | link | measured or spec | source | fitted / assumed per-hop figures | notes |\n|---|---|---|---|---|---|\n";
  std::optional<Link> intraAll;
  if (intraSrc && intraSrc->spec) intraAll = intraSrc->specLink;
  auto inputsFor = [&](const Source& f, const std::string& coll) {
    Inputs in;
    if (intraSrc) in.intra = resolve(*intraSrc, coll, "intra");
    if (f.spec || f.run) in.inter = resolve(f, coll, "inter");
    return in;
  };
  for (auto& f : fabrics) {
    Inputs in = inputsFor(f, colls[0]);
    if (in.intra)
      md += fmt::format("| {} | intra-node | {} | {} | {} | {} |\n", cell(f.label), in.intra->measured ? "measured" : "spec",
                        cell(in.intra->source), segText(in.intra->segs), cell(in.intra->notes));
    if (in.inter)
      md += fmt::format("| {} | inter-node | {} | {} | {} | {} |\n", cell(f.label), in.inter->measured ? "measured" : "spec",
                        cell(in.inter->source), segText(in.inter->segs), cell(in.inter->notes));
  }
  md += fmt::format("\nMeasured inputs are fitted per collective ({} shown; the CSV names the series used for each row). "
                    "NICs per node: {}.\n\n",
                    colls[0], a.nics > 0 ? fmt::format("{}", a.nics) : std::string("one per rank (rails)"));

  std::string csv =
      "kind,fabric,coll,nodes,ranks_per_node,nics_per_node,ranks,size_bytes,algo,time_us,algbw_GBps,busbw_GBps,"
      "candidates,intra_input,intra_measured,inter_input,inter_measured\n";
  // coll -> fabric -> rows
  std::map<std::string, std::map<std::string, std::vector<Projection>>> rows;
  for (auto& coll : colls)
    for (auto& f : fabrics) {
      Inputs in = inputsFor(f, coll);
      for (int g : gpus)
        for (int n : nodes)
          for (double S : sizes) {
            Shape sh{n, g, a.nics};
            if (sh.ranks() < 2) continue;
            Projection p = project(coll, sh, S, in, force);
            rows[coll][f.label].push_back(p);
            std::string cand;
            for (auto& [al, t] : p.candidates) cand += fmt::format("{}{}={:.3f}", cand.empty() ? "" : ";", algoName(al), t);
            bool useIntra = g > 1, useInter = n > 1;
            csv += fmt::format("projected,{},{},{},{},{},{},{:.0f},{},{:.3f},{:.6g},{:.6g},{},{},{},{},{}\n", csvq(f.label),
                               coll, n, g, sh.nics(), sh.ranks(), S, algoName(p.algo), p.timeUs, p.algbwGBps, p.busbwGBps,
                               csvq(cand), csvq(useIntra && in.intra ? in.intra->source : ""),
                               useIntra && in.intra ? (in.intra->measured ? "measured" : "spec") : "unused",
                               csvq(useInter && in.inter ? in.inter->source : ""),
                               useInter && in.inter ? (in.inter->measured ? "measured" : "spec") : "unused");
          }
    }
  for (auto& coll : colls) {
    md += fmt::format("## {} (projected)\n\n", coll);
    md += "| fabric | nodes x ranks/node | size | chosen algorithm | time | busbw per rank (GB/s) | every candidate |\n"
          "|---|---|---:|---|---:|---:|---|\n";
    for (auto& [fab, ps] : rows[coll])
      for (auto& p : ps) {
        std::string cand;
        for (auto& [al, t] : p.candidates) cand += fmt::format("{}{} {}", cand.empty() ? "" : ", ", algoName(al), us(t));
        md += fmt::format("| {} | {} x {} | {} | {} | {} | {} | {} |\n", cell(fab), p.shape.nodes, p.shape.perNode,
                          human(p.bytes), algoName(p.algo), us(p.timeUs), bw(p.busbwGBps), cand);
      }
    md += "\n";
    // plot: time vs nodes per fabric at each size (first G)
    std::string body = fmt::format(
        "set title '{} PROJECTED time vs node count ({} ranks per node)'\nset logscale x 2\nset logscale y 10\nset xlabel 'nodes'\n"
        "set ylabel 'time per operation (us, projected)'\nset key below\nset grid\n",
        coll, gpus[0]);
    std::string plots;
    int blk = 0;
    std::set<int> plotted;  // the node counts drawn: the x axis spans them and ticks at each
    for (auto& [fab, ps] : rows[coll])
      for (double S : sizes) {
        std::string data;
        for (auto& p : ps)
          if (p.bytes == S && p.shape.perNode == gpus[0]) {
            data += fmt::format("{} {}\n", p.shape.nodes, p.timeUs);
            plotted.insert(p.shape.nodes);
          }
        if (data.empty()) continue;
        body += fmt::format("$d{} << EOD\n{}EOD\n", blk, data);
        plots += fmt::format("{}$d{} using 1:2 with linespoints title '{} {}'", plots.empty() ? "" : ", ", blk, fab, human(S));
        ++blk;
      }
    if (!plotted.empty()) {
      std::string tics;
      for (int n : plotted) tics += fmt::format("{}\"{}\" {}", tics.empty() ? "" : ", ", n, n);
      body += fmt::format("set xrange [{}:{}]\nset xtics ({})\n", *plotted.begin() / 1.15, *plotted.rbegin() * 1.15, tics);
    }
    if (!plots.empty() && nodes.size() > 1) {
      auto png = pl.draw(safeName("projected_" + coll + "_time_vs_nodes"), body + "plot " + plots + "\n");
      if (!png.empty()) md += fmt::format("![{} projected]({})\n\n", coll, png);
    }
  }

  // Training step and cost.
  if (training || !prices.empty()) {
    md += "## Training step (projected)\n\n";
    if (training) {
      md += fmt::format(
          "Assumptions (user input, printed beside every number): {:.4g} parameters, {} gradients ({} B each), "
          "tensor parallel {} inside the node, data parallel over the rest, gradient buckets of {} (one AllReduce "
          "each, back to back), compute {:.1f} ms per step, {:.0f}% of communication overlapped with compute. "
          "Exposed communication = communication x (1 - overlap); step = compute + exposed.\n\n",
          tm.params, tm.gradDtype, tm.gradBytesPerParam, tm.tp, human(tm.bucketBytes), tm.computeMs, tm.overlap * 100);
    }
    md += "| fabric | nodes x GPUs/node | DP group (nodes x ranks/node, NICs) | gradient per rank | buckets | AllReduce "
          "algorithm | communication | exposed | step | step vs first fabric |";
    if (!prices.empty())
      md += " cost total | per node | cost includes | topology | $ per GB/s of busbw (1 GiB AllReduce) | steps/hour per $1M |";
    md += "\n|---|---|---|---:|---:|---|---:|---:|---:|---:|";
    if (!prices.empty()) md += "---:|---:|---|---|---:|---:|";
    md += "\n";
    std::map<std::pair<int, int>, double> firstStep;
    std::string tcsv = "kind,fabric,nodes,gpus_per_node,tp,params,grad_dtype,bucket_bytes,compute_ms,overlap,buckets,algo,"
                       "comm_ms,exposed_ms,step_ms,cost_total_usd,cost_per_node_usd,usd_per_GBps_busbw,cost_includes,inputs\n";
    auto tnodes = a.trainNodes.empty() ? nodes : parseIntList(a.trainNodes, "--train-nodes");
    for (auto& f : fabrics) {
      Inputs in = inputsFor(f, "allreduce");
      for (int g : gpus)
        for (int n : tnodes) {
          Shape sh{n, g, a.nics};
          StepEstimate e;
          bool haveStep = training && sh.ranks() / tm.tp > 0;
          if (training) e = trainingStep(tm, sh, in);
          auto key = std::make_pair(n, g);
          if (training && !firstStep.count(key)) firstStep[key] = e.stepMs;
          std::string costCols;
          double costTotal = 0, perNode = 0, usdPerGBps = 0;
          std::string costIncludes;
          if (!prices.empty()) {
            auto c = fabricCost(prices.at(f.label), n, g);
            costTotal = c.totalUsd;
            costIncludes = c.includes;
            perNode = c.perNodeUsd;
            double busbw = sh.ranks() > 1 ? project("allreduce", sh, 1073741824.0, in, force).busbwGBps : 0;
            double fabricUsd = c.nicUsd + c.switchUsd + c.cableUsd + c.opticsUsd;
            usdPerGBps = busbw > 0 ? fabricUsd / (busbw * sh.ranks()) : 0;
            double stepsPerHourPerM = training && e.stepMs > 0 ? 3.6e6 / e.stepMs / (c.totalUsd / 1e6) : 0;
            costCols = fmt::format(" ${:.0f} | ${:.0f} | {} | {} ({} leaf, {} spine{}, {} cables) | {} | {} |", c.totalUsd,
                                   c.perNodeUsd, cell(c.includes), c.topology, c.leaves, c.spines,
                                   c.cores ? fmt::format(", {} core", c.cores) : "", c.cables,
                                   usdPerGBps > 0 ? fmt::format("${:.0f}", usdPerGBps) : "—",
                                   stepsPerHourPerM > 0 ? fmt::format("{:.1f}", stepsPerHourPerM) : "—");
          }
          if (training && haveStep) {
            md += fmt::format("| {} | {} x {} | {} x {}, {:.3g} NICs | {} | {} | {} | {} | {} | {} | {:.3f} |{}\n",
                              cell(f.label), n, g, e.dpShape.nodes, e.dpShape.perNode, e.dpShape.nics(),
                              human(e.gradBytesPerRank), e.buckets, algoName(e.algo), us(e.commMs * 1e3),
                              us(e.exposedMs * 1e3), us(e.stepMs * 1e3), e.stepMs / firstStep[key], costCols);
          } else {
            md += fmt::format("| {} | {} x {} | — | — | — | — | — | — | — | — |{}\n", cell(f.label), n, g, costCols);
          }
          tcsv += fmt::format("projected,{},{},{},{},{},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.2f},{:.2f},{:.4f},{},{}\n",
                              csvq(f.label), n, g, tm.tp, tm.params, tm.gradDtype, tm.bucketBytes, tm.computeMs,
                              tm.overlap, e.buckets, algoName(e.algo), e.commMs, e.exposedMs, e.stepMs, costTotal,
                              perNode, usdPerGBps, csvq(costIncludes),
                              csvq((in.inter ? "inter: " + in.inter->source : "") +
                                   (in.intra ? "; intra: " + in.intra->source : "")));
        }
    }
    md += "\n";
    if (!prices.empty()) {
      md += "Prices are **user input** from " + a.prices +
            " (every entry says so); $ per GB/s = fabric cost (NICs, switches, cables, optics) / (projected per-rank AllReduce busbw at 1 GiB x ranks); "
            "steps/hour per $1M = projected steps per hour / (cost total / $1M). The cost total is the whole cluster's "
            "(NICs, switches, cables, optics, GPUs, nodes) only where the price file gives per_gpu_usd or per_node_usd; "
            "otherwise it is the fabric's alone, and the 'cost includes' column says which.\n\n";
      for (auto& [n, p] : prices)
        if (!p.note.empty()) md += fmt::format("- {}: {}\n", n, p.note);
      md += "\n";
    }
    fb::writeFileAtomic((fs::path(a.out) / "training.csv").string(), tcsv);
  }
  md += "## Link specs shipped with the tool\n\n| name | kind | line rate | GB/s per direction | efficiency (default) | "
        "per-hop latency (default) | line-rate source | where the defaults come from |\n|---|---|---|---:|---:|---:|---|---|\n";
  for (auto& s : specTable())
    md += fmt::format("| {} | {} | {} | {} | {:.2f} | {:.1f} us | {} | {} |\n", s.name, s.kind, s.rateText, s.lineGbps,
                      s.efficiency, s.latencyUs, cell(s.source), cell(s.defaultsSource));
  fb::writeFileAtomic((fs::path(a.out) / "projection.md").string(), md);
  fb::writeFileAtomic((fs::path(a.out) / "projected.csv").string(), csv);
  std::printf("%s", md.substr(0, md.find("## Link specs")).c_str());
  std::printf("wrote %s/projection.md, %s/projected.csv%s\n", a.out.c_str(), a.out.c_str(),
              training || !prices.empty() ? (", " + a.out + "/training.csv").c_str() : "");
  if (!pl.skipped.empty()) std::printf("plots skipped: %s\n", pl.skipped.c_str());
  for (auto& e : pl.errors) std::fprintf(stderr, "fabricbench-model: plot failed: %s\n", e.c_str());
  return pl.errors.empty() ? 0 : 1;
}

// One row per subcommand: name, help, and a setup that adds its options to the CLI11 subcommand and
// returns what runs it after parsing. A new subcommand (e.g. `nccl`, in its own file) is one row here.
struct Subcommand {
  const char* name;
  const char* help;
  std::function<std::function<int()>(CLI::App&)> setup;
};

std::function<int()> setupFit(CLI::App& fit) {
  struct A {
    std::vector<std::string> runs;
    std::string out, pattern, algo;
    bool noPlots = false;
  };
  auto a = std::make_shared<A>();
  fit.add_option("runs", a->runs, "run folders, table.csv files, nccl-tests logs, perftest output")->required();
  fit.add_option("-o,--out", a->out, "output folder (default: <first run>/model)");
  fit.add_option("--series", a->pattern, "only series matching this (impl, path or label)");
  fit.add_option("--algo", a->algo, "assume this algorithm for every row (default: the row's, else ring)");
  fit.add_flag("--no-plots", a->noPlots, "do not run gnuplot");
  return [a] { return cmdFit(a->runs, a->out, a->pattern, a->algo, a->noPlots); };
}

std::function<int()> setupValidate(CLI::App& val) {
  struct A {
    std::string inter, intra, out, pattern, algo, band = "1M:64M";
    std::vector<std::string> checks;
    double maxErr = 10, medErr = 5, nics = 1;
    bool require = false, noPlots = false;
  };
  auto a = std::make_shared<A>();
  val.add_option("--inter", a->inter, "run whose one-rank-per-node series give the inter-node hop (e.g. the 2-node run)");
  val.add_option("--intra", a->intra, "run whose single-node series give the intra-node hop (e.g. 1 node x 2 ranks)");
  val.add_option("--check", a->checks, "measured runs to predict (repeatable)")->required();
  val.add_option("-o,--out", a->out, "output folder for validation.md/.csv and plots")->required();
  val.add_option("--series", a->pattern, "only series matching this (e.g. tcp)");
  val.add_option("--algo", a->algo, "assume this algorithm (default: each row's, else ring)");
  val.add_option("--band", a->band, "size band of the bound, LO:HI (default 1M:64M)");
  val.add_option("--max-err", a->maxErr, "bound on |error| at every size in the band, % (default 10)");
  val.add_option("--median-err", a->medErr, "bound on the median |error| in the band, % (default 5)");
  val.add_option("--nics", a->nics, "NICs per node in the check runs (default 1: one interface shared by the node's ranks)");
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

std::function<int()> setupProject(CLI::App& prj, const std::string& cmdLine) {
  auto pp = std::make_shared<ProjectArgs>();
  ProjectArgs& pa = *pp;
  prj.add_option("--inter", pa.inter,
                 "inter-node link per fabric (repeatable): [NAME=]spec:ib-hdr[,eff=X][,lat=US] or [NAME=]RUN:SERIES");
  prj.add_option("--intra", pa.intra, "intra-node link: spec:nvlink4-h100 or RUN:SERIES (single-node run)");
  prj.add_option("--nodes", pa.nodes, "node counts N (default 1,2,4,...,1024)");
  prj.add_option("--gpus", pa.gpus, "ranks (GPUs) per node G, a list (default 1)");
  prj.add_option("--nics", pa.nics, "NICs per node (default: one per rank, rails)");
  prj.add_option("--coll", pa.colls, "collectives (default allreduce,allgather,reducescatter,p2pring)");
  prj.add_option("--sizes", pa.sizes, "message sizes (default 1M,16M,256M,1G; K/M/G = KB/MB/GB = 1024^k, as in fabricbench)");
  prj.add_option("--algo", pa.algo, "only this algorithm (default: the fastest of ring, tree, hier per size)");
  prj.add_option("--params", pa.params, "training: parameter count (e.g. 100e9)");
  prj.add_option("--grad-dtype", pa.gradDtype, "training: gradient dtype bf16|fp16|fp32|fp8 (default bf16)");
  prj.add_option("--tp", pa.tp, "training: tensor-parallel degree inside the node (default 1)");
  prj.add_option("--bucket", pa.bucket, "training: gradient bucket size (default 25M = 25 MiB, PyTorch DDP's bucket_cap_mb)");
  prj.add_option("--compute-ms", pa.computeMs, "training: compute time per step in ms (user input)");
  prj.add_option("--overlap", pa.overlap, "training: fraction of communication hidden behind compute, 0..1 (default 0)");
  prj.add_option("--train-nodes", pa.trainNodes, "node counts for the training-step and cost table (default: --nodes)");
  prj.add_option("--prices", pa.prices, "JSON price file per fabric (see tools/prices-example.json)");
  prj.add_option("-o,--out", pa.out, "output folder for projection.md, projected.csv, plots")->required();
  prj.add_flag("--no-plots", pa.noPlots, "do not run gnuplot");
  CLI::App* app = &prj;
  return [pp, app, cmdLine] {
    const ProjectArgs& pa = *pp;
    auto given = [&](const char* o) { return app->get_option(o)->count() > 0; };
    if (given("--nics")) checkRange("--nics", pa.nics, 0, true);
    if (given("--params")) checkRange("--params", pa.params, 0, true);
    if (given("--compute-ms")) checkRange("--compute-ms", pa.computeMs, 0, false);
    checkRange("--overlap", pa.overlap, 0, false, 1);
    if (pa.tp < 1) throw InputError(fmt::format("--tp = {}: must be >= 1", pa.tp));
    return cmdProject(pa, cmdLine);
  };
}

std::function<int()> setupSpecs(CLI::App&) {
  return [] {
    for (auto& s : specTable())
      std::printf("%-14s %-5s %-32s %8.2f GB/s  eff %.2f (default)  %5.1f us/hop (default)\n    rate: %s\n    defaults: %s\n",
                  s.name.c_str(), s.kind.c_str(), s.rateText.c_str(), s.lineGbps, s.efficiency, s.latencyUs,
                  s.source.c_str(), s.defaultsSource.c_str());
    return 0;
  };
}

int run(int argc, char** argv) {
  CLI::App app{"fabricbench-model: fit measured curves, project collectives to N nodes x G ranks (ring, tree, "
               "hierarchical), estimate a training step and the fabric cost. Projected rows are labelled as such."};
  app.require_subcommand(1);
  std::string cmdLine = "fabricbench-model";
  for (int i = 1; i < argc; ++i) cmdLine += std::string(" ") + argv[i];
  const Subcommand table[] = {
      {"fit", "fit every series of the given runs; print the parameters and the error at every size", setupFit},
      {"validate", "fit on small runs, predict bigger measured runs, print the error", setupValidate},
      {"project", "projected collective times, training step and cost on N nodes x G ranks",
       [&](CLI::App& s) { return setupProject(s, cmdLine); }},
      {"specs", "print the link spec table with its sources", setupSpecs},
  };
  std::vector<std::pair<CLI::App*, std::function<int()>>> subs;
  for (auto& t : table) {
    CLI::App* s = app.add_subcommand(t.name, t.help);
    subs.emplace_back(s, t.setup(*s));
  }
  CLI::App* nccl = fb::tools::addNcclCommands(app);
  subs.emplace_back(nccl, [nccl] { return fb::tools::runNcclCommands(nccl); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::string w = e.what();
    std::fprintf(stderr, "fabricbench-model: error: %s (see fabricbench-model --help)\n", w.c_str());
    return 2;
  }
  for (auto& [s, runIt] : subs)
    if (*s) return runIt();
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const fb::InputError& e) {
    removeCreated();
    std::fprintf(stderr, "fabricbench-model: error: %s\n", e.what());
    return 2;
  } catch (const fb::ConfigError& e) {
    removeCreated();
    std::fprintf(stderr, "fabricbench-model: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabricbench-model: error: %s\n", e.what());
    return 1;
  }
}

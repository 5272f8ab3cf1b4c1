// fabricbench-model's shared pieces (model_common.h).
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
#include <fmt/ranges.h>

#include "core/units.h"
#include "model/model.h"
#include "model_common.h"
#include "report/import.h"
#include "report/plot.h"
#include "report/process.h"
#include "report/result_sink.h"
#include "report/summary.h"

namespace fs = std::filesystem;
using namespace fb::model;
using fb::Series;

namespace fb::tools {

// Output folders this process created: removed again when the run ends in bad input, so a rejected
// command leaves no result folder behind.
namespace {
std::vector<std::string> gCreated;
}  // namespace
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
void checkRange(const char* opt, double v, double lo, bool loOpen, double hi) {
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

std::vector<std::pair<std::string, double>> positiveSettings(const std::string& list, const std::string& context,
                                                             const std::vector<std::string>& keys) {
  std::vector<std::pair<std::string, double>> out;
  std::size_t at = 0;
  while (true) {  // every comma-separated item, empty ones too ("nic=24," has an empty second item)
    const std::size_t comma = list.find(',', at);
    const std::string kv = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const auto e = kv.find('=');
    const std::string k = kv.substr(0, e), v = e == std::string::npos ? "" : kv.substr(e + 1);
    if (kv.empty()) throw InputError(fmt::format("{}: an empty setting (KEY=NUMBER between commas)", context));
    if (std::find(keys.begin(), keys.end(), k) == keys.end())
      throw InputError(fmt::format("{}: unknown setting '{}' ({}=)", context, k, fmt::join(keys, "=, ")));
    for (const auto& [seen, unused] : out)
      if (seen == k) throw InputError(fmt::format("{}: '{}' given twice", context, k));
    // Decimal numbers only: stod would also take leading blanks, hex and "inf".
    if (v.empty() || v.find_first_not_of("0123456789.eE+-") != std::string::npos)
      throw InputError(fmt::format("{}: '{}' needs a number ({}=NUMBER)", context, kv, k));
    double d = 0;
    std::size_t used = 0;  // stays 0 when stod finds no number ("-", ".")
    try {
      d = std::stod(v, &used);
    } catch (const std::out_of_range&) {
      throw InputError(fmt::format("{}: '{}' is out of range", context, kv));
    } catch (const std::invalid_argument&) {
    }
    if (used != v.size()) throw InputError(fmt::format("{}: '{}' needs a number ({}=NUMBER)", context, kv, k));
    if (!std::isfinite(d) || d <= 0) throw InputError(fmt::format("{}: '{}' must be a number > 0", context, kv));
    out.emplace_back(k, d);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

// ---- runs and series -------------------------------------------------------------------------


Loaded load(const std::string& arg) {
  Loaded l;
  l.run = fb::loadRunAny(arg);
  l.series = fb::groupSeries(l.run.rows, "");
  // A row whose typed algorithm id (model_algo) the model does not know is refused here, with the file's name.
  for (const auto& r : l.run.rows) {
    try {
      fb::model::algoOfRow(r);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", arg, e.what()));
    }
  }
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

// ---- link sources (project --inter/--intra, fit --intra) ---------------------------------------

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
    const auto comma = t.find(',');  // spec:NAME[,KEY=NUMBER...]
    const Spec& sp = findSpec(t.substr(5, comma == std::string::npos ? std::string::npos : comma - 5));
    double eff = -1, lat = -1;
    if (comma != std::string::npos)
      for (const auto& [k, d] : positiveSettings(t.substr(comma + 1), fmt::format("--{} '{}'", what, arg), {"eff", "lat"}))
        (k == "eff" ? eff : lat) = d;
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

Link resolve(const Source& s, const std::string& coll, const char* what, const Link* intra, double fitNics,
             std::optional<Algo> forceAlgo) {
  if (s.spec) return s.specLink;
  const Series* f = findSeries(*s.run, s.pattern, coll, "", false);
  if (!f) f = findSeries(*s.run, s.pattern, "allreduce", "", false);
  if (!f)
    throw InputError(fmt::format("--{} {}: no series matches '{}' for {} (nor allreduce); the series are:{}", what,
                                 s.text, s.pattern, coll, seriesList(*s.run)));
  FitOptions fo;
  fo.intra = intra;
  fo.nicsPerNode = fitNics;
  fo.forceAlgo = forceAlgo;
  auto hf = fitSeries(*f, fo);
  if (!hf.usable) throw InputError(fmt::format("--{} {}: {}: {}", what, s.text, seriesName(*s.run, *f), hf.why));
  if (std::string(what) == "inter" && f->nNodes < 2)
    throw InputError(fmt::format("--inter {}: {} ran on one node: its hops are intra-node", s.text, seriesName(*s.run, *f)));
  if (std::string(what) == "intra" && f->nNodes > 1)
    throw InputError(fmt::format("--intra {}: {} ran on {} nodes: its hops are inter-node", s.text,
                                 seriesName(*s.run, *f), f->nNodes));
  return linkFromFit(hf, seriesName(*s.run, *f));
}

void checkIntraSource(const Source& s) {
  if (s.spec) return;
  const Series* single = nullptr;
  const Series* any = nullptr;
  for (const auto& x : s.run->series) {
    if (!s.pattern.empty() && !fb::seriesMatches(x, s.pattern) && x.impl != s.pattern) continue;
    if (!any) any = &x;
    if (x.nNodes <= 1 && !single) single = &x;
  }
  if (!any)
    throw InputError(fmt::format("--intra {}: no series matches '{}'; the series are:{}", s.text, s.pattern,
                                 seriesList(*s.run)));
  if (!single)
    throw InputError(fmt::format("--intra {}: {} ran on {} nodes: its hops are inter-node (give a single-node run)",
                                 s.text, seriesName(*s.run, *any), any->nNodes));
}

// ---- plots -----------------------------------------------------------------------------------

Plotter::Plotter(const std::string& outDir, bool on) : dir((fs::path(outDir) / "plots").string()), enabled(on) {
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

std::string Plotter::draw(const std::string& name, const std::string& body) {
  if (!have) return "";
  fs::path png = fs::path(dir) / (name + ".png"), gp = fs::path(dir) / (name + ".gp");
  std::string s = fmt::format("set terminal {} size 1000,700 noenhanced\nset output '{}'\n", terminal, png.string());
  // The suite's palette (lib/report/plot.h) in place of gnuplot's default, whose yellow is unreadable.
  for (std::size_t i = 0; i < plotPalette().size(); ++i)
    s += fmt::format("set linetype {} lc rgb '{}' lw 1.5\n", i + 1, plotPalette()[i]);
  s += fmt::format("set linetype cycle {}\n", plotPalette().size());
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

std::string safeName(std::string s) {
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  if (s.size() > 80) s = s.substr(0, 80);
  return s;
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


}  // namespace fb::tools

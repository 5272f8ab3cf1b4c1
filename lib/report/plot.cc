#include "report/plot.h"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "report/import.h"
#include "core/process.h"
#include "report/series.h"

namespace fb {

const std::vector<std::string>& plotPalette() {
  // Readable on white (no yellow): Okabe-Ito's dark hues, then Tableau's.
  static const std::vector<std::string> kPalette{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#000000", "#56B4E9",
                                                 "#8C564B", "#7F7F7F", "#9467BD", "#17BECF", "#BCBD22", "#1F4E79"};
  return kPalette;
}

namespace {

std::string gpString(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o + "\"";
}

}  // namespace

double nominalGBps(const Series& s) {
  for (const auto& r : s.rows)
    if (r.pctNominal > 0 && r.busBwGBps > 0) return r.busBwGBps * 100.0 / r.pctNominal;
  return -1;
}

bool wantsLogY(const std::vector<const Series*>& group) {
  double lo = 0, hi = 0;
  for (const auto* s : group) {
    double peak = 0;
    for (const auto& r : s->rows)
      if (r.wrong <= 0 && r.bytes > 0) peak = std::max(peak, r.busBwGBps);
    if (peak <= 0) continue;
    lo = lo == 0 ? peak : std::min(lo, peak);
    hi = std::max(hi, peak);
  }
  return lo > 0 && hi / lo > 10.0;
}

std::string gnuplotScript(const std::vector<const Series*>& group, const std::string& kind,
                          const std::string& terminal, const std::string& pngPath, const std::string& title,
                          const std::string& svgPath) {
  bool bw = kind == "busbw";
  std::string s = "reset\n";  // several scripts may run in one gnuplot
  s += fmt::format("set terminal {} size 1200,900 noenhanced\n", terminal);
  s += fmt::format("set output {}\n", gpString(pngPath));
  s += fmt::format("set title {}\n", gpString(title));
  s += "set logscale x 2\nset xlabel 'size (bytes, log2 scale; K = 1024, M = 1024^2, G = 1024^3)'\n";
  // Ticks 1, 1K, 1M, 1G (and 4K, 16K, ... between), over the sizes measured only.
  {
    std::size_t lo = 0, hi = 0;
    for (const auto* g : group)
      for (const auto& r : g->rows)
        if (r.bytes > 0) lo = lo == 0 ? r.bytes : std::min(lo, r.bytes), hi = std::max(hi, r.bytes);
    if (hi > 0) {
      s += fmt::format("set xrange [{}:{}]\n", lo, hi);
      std::string tics;
      for (int e = 0; e <= 50; e += 2) {
        double v = std::ldexp(1.0, e);
        if (v < static_cast<double>(lo) / 2 || v > static_cast<double>(hi) * 2) continue;
        const char* u[] = {"", "K", "M", "G", "T"};
        tics += fmt::format("{}'{}{}' {:.0f}", tics.empty() ? "" : ", ", 1 << (e % 10), u[e / 10], v);
      }
      if (!tics.empty()) s += "set xtics (" + tics + ")\n";
    }
  }
  // The legend outside the plot area, under it: curves are never hidden behind it, and long
  // path labels do not squeeze the plot.
  s += "set key outside below left vertical Left reverse noopaque nobox height 1\n";
  if (bw) {
    if (wantsLogY(group)) {
      // Paths more than 10x apart (socket beside NVLink): a linear axis would flatten the slow ones.
      s += "set logscale y 10\nset ylabel 'busbw (GB/s, GB = 1e9 bytes; log scale: paths differ by > 10x)'\n";
    } else {
      s += "set ylabel 'busbw (GB/s, GB = 1e9 bytes)'\nset yrange [0:*]\n";
    }
  } else {
    s += "set logscale y 10\nset ylabel 'time per operation (us, median of batches)'\n";
  }
  s += "set grid\nset pointsize 0.8\n";
  std::vector<std::string> plots;
  // One colour per path (run + impl/path): out-of-place solid, in-place dashed of that colour.
  const auto& kPalette = plotPalette();
  std::vector<std::string> pathColours;
  auto colourOf = [&](const Series& x) {
    std::string k = x.run + "\x1f" + x.implPath();
    auto it = std::find(pathColours.begin(), pathColours.end(), k);
    std::size_t i = it == pathColours.end() ? (pathColours.push_back(k), pathColours.size() - 1) : it - pathColours.begin();
    return kPalette[i % kPalette.size()];
  };
  std::vector<std::string> nominalDrawn;  // one line per path (in- and out-of-place share it)
  for (std::size_t i = 0; i < group.size(); ++i) {
    std::string block = fmt::format("$d{}", i);
    s += block + " << EOD\n";
    int n = 0;
    std::size_t lo = 0, hi = 0;
    for (const auto& r : group[i]->rows) {
      if (r.bytes == 0) continue;  // log scale
      if (r.wrong > 0) continue;   // wrong data is not a measurement
      double y = bw ? r.busBwGBps : r.timeUs;
      if (y <= 0) continue;        // log scales; a 0 GB/s row (1 rank) has no bandwidth to show
      s += fmt::format("{} {}\n", r.bytes, y);
      lo = n == 0 ? r.bytes : std::min(lo, r.bytes);
      hi = std::max(hi, r.bytes);
      ++n;
    }
    s += "EOD\n";
    if (n == 0) continue;
    std::string colour = colourOf(*group[i]);
    plots.push_back(fmt::format("{} using 1:2 with linespoints lc rgb '{}' dt {} lw 2 pt {} title {}", block, colour,
                                group[i]->inPlace ? 2 : 1, group[i]->inPlace ? 6 : 7, gpString(group[i]->label())));
    double nominal = bw ? nominalGBps(*group[i]) : -1;
    std::string pathKey = group[i]->run + "\x1f" + group[i]->implPath();
    if (nominal > 0 && std::find(nominalDrawn.begin(), nominalDrawn.end(), pathKey) == nominalDrawn.end()) {
      nominalDrawn.push_back(pathKey);
      // The nominal link rate of this path: a dashed line of the curve's colour.
      std::string nb = fmt::format("$n{}", i);
      s += fmt::format("{} << EOD\n{} {}\n{} {}\nEOD\n", nb, lo, nominal, hi, nominal);
      plots.push_back(fmt::format("{} using 1:2 with lines lc rgb '{}' dt 2 title {}", nb, colour,
                                  gpString(fmt::format("nominal {:.1f} GB/s: {}", nominal, group[i]->implPath()))));
    }
  }
  if (plots.empty()) return "";
  s += "plot ";
  for (std::size_t i = 0; i < plots.size(); ++i) s += (i ? ", \\\n     " : "") + plots[i];
  s += "\n";
  if (!svgPath.empty()) {
    s += fmt::format("set terminal svg size 1200,900 dynamic noenhanced\nset output {}\nreplot\n", gpString(svgPath));
  }
  s += "unset output\n";
  return s;
}

PlotResult writePlots(const std::vector<Series>& series, const std::string& outDir,
                      std::chrono::milliseconds timeout, bool svg) {
  namespace fs = std::filesystem;
  PlotResult res;
  if (findInPath("gnuplot").empty()) {
    res.skipped = "gnuplot not found in PATH (apt-get install gnuplot-nox)";
    return res;
  }
  // pngcairo looks better; plain png (libgd) is the fallback.
  std::string terminal = "png";
  auto probe = runCommand({"gnuplot", "-e", "set terminal pngcairo"}, timeout);
  if (probe.ok()) terminal = "pngcairo";

  fs::path dir = fs::path(outDir) / "plots";
  fs::create_directories(dir);
  std::vector<std::pair<std::string, std::vector<const Series*>>> groups;
  for (const auto& s : series) {
    std::string gid = groupId(s.coll, s.dtype);
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == gid; });
    if (it == groups.end()) {
      groups.push_back({gid, {}});
      it = groups.end() - 1;
    }
    it->second.push_back(&s);
  }
  struct Job {
    fs::path png, svg, gp;
  };
  std::vector<Job> jobs;
  for (auto& [gid, g] : groups) {
    for (const char* kind : {"busbw", "time"}) {
      Job j{dir / fmt::format("{}_{}.png", gid, kind), dir / fmt::format("{}_{}.svg", gid, kind),
            dir / fmt::format("{}_{}.gp", gid, kind)};
      std::string title = fmt::format("{} {} ({}) vs size{}", g[0]->coll, kind == std::string("busbw") ? "busbw" : "time",
                                      g[0]->dtype, g[0]->run.empty() ? fmt::format(", {} ranks", g[0]->nRanks) : "");
      std::string script = gnuplotScript(g, kind, terminal, j.png.string(), title, svg ? j.svg.string() : "");
      if (script.empty()) continue;
      fs::remove(j.png);
      std::ofstream(j.gp) << script;
      jobs.push_back(std::move(j));
    }
  }
  // One gnuplot for every script (each starts with reset; starting gnuplot costs more than most
  // plots); a script that stops it is run again on its own for its error, and those after it too.
  std::vector<std::string> all = {"gnuplot"};
  for (const auto& j : jobs) all.push_back(j.gp.string());
  std::chrono::milliseconds total = timeout * static_cast<long>(std::max<std::size_t>(1, jobs.size()));
  bool batchOk = jobs.empty() || runCommand(all, total).ok();
  for (const auto& j : jobs) {
    CommandResult r;
    if (!batchOk && !fs::exists(j.png)) r = runCommand({"gnuplot", j.gp.string()}, timeout);
    if (fs::exists(j.png)) {
      res.made = true;
      res.files.push_back(j.png.string());
      if (fs::exists(j.svg)) res.files.push_back(j.svg.string());
    } else {
      res.errors.push_back(fmt::format("gnuplot {}: {}", j.gp.string(), r.error.empty() ? "no picture written" : r.error));
    }
  }
  if (!res.made && res.errors.empty()) res.skipped = "no rows with a size > 0 to plot";
  return res;
}

std::string drawRunPlots(const std::string& dir, std::chrono::milliseconds budget) {
  std::vector<Sample> rows;
  try {
    rows = loadRunAny(dir + "/table.csv").rows;
  } catch (const std::exception& e) {
    return std::string("plots not drawn: ") + e.what();
  }
  if (rows.empty()) return "";
  auto series = groupSeries(rows);
  std::set<std::pair<std::string, std::string>> groups;  // (collective, dtype): two plots each
  for (const auto& s : series) groups.insert({s.coll, s.dtype});
  auto perPlot = std::max(std::chrono::milliseconds(500), budget / static_cast<long>(2 * std::max<std::size_t>(1, groups.size())));
  auto pr = writePlots(series, dir, perPlot, false);
  if (!pr.skipped.empty()) return "plots not drawn: " + pr.skipped + " (fabricbench-report draws them later)";
  if (!pr.errors.empty())
    return "plots: " + std::to_string(pr.errors.size()) + " failed, first: " + pr.errors.front();
  return "";
}

}  // namespace fb

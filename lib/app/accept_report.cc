#include "app/accept_report.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <utility>

#include "report/process.h"
#include "report/result_sink.h"

namespace fb::acceptcmd {

namespace fs = std::filesystem;

std::string fmtNum(double x, const char* spec) { return std::isfinite(x) ? fmt::format(fmt::runtime(spec), x) : "-"; }

void writeText(const fs::path& p, const std::string& text) { writeFileAtomic(p.string(), text); }

// gnuplot heatmap (PNG + SVG) of one matrix; "" when drawn, else why not.
std::string heatmap(const fs::path& dir, const std::string& stem, const std::string& title, const accept::PairMatrix& m,
                    const std::vector<double>& v, const std::string& unit) {
  std::string data;
  for (int a = 0; a < m.n; ++a) {
    for (int b = 0; b < m.n; ++b) data += (b ? " " : "") + (std::isfinite(m.get(v, a, b)) ? fmt::format("{:.6g}", m.get(v, a, b)) : std::string("NaN"));
    data += "\n";
  }
  writeText(dir / (stem + ".dat"), data);
  if (findInPath("gnuplot").empty()) return "gnuplot not found in PATH (apt-get install gnuplot-nox): " + stem + ".dat holds the matrix";
  std::string why;
  for (auto [term, ext] : {std::pair<const char*, const char*>{"pngcairo size 900,800", "png"}, {"svg size 900,800", "svg"}}) {
    std::string gp = fmt::format(
        "set terminal {}\nset output '{}'\nset title \"{}\" noenhanced\nset xlabel 'unit'\nset ylabel 'unit'\n"
        "set cblabel '{}'\nset size ratio -1\nset xtics {}\nset ytics {}\nset xrange [-0.5:{}.5]\nset yrange [{}.5:-0.5]\nset palette defined (0 'red', 0.5 'yellow', 1 'green')\n"
        "{}set datafile missing 'NaN'\nplot '{}' matrix with image notitle\n",
        term, (dir / (stem + "." + ext)).string(), title, unit, m.n <= 32 ? 1 : 4, m.n <= 32 ? 1 : 4, m.n - 1, m.n - 1,
        unit == "us" ? "set palette negative\n" : "", (dir / (stem + ".dat")).string());
    fs::path gpf = dir / (stem + "." + ext + ".gp");
    writeText(gpf, gp);
    auto r = runCommand({"gnuplot", gpf.string()}, std::chrono::seconds(30));
    if (!r.ok() || !fs::exists(dir / (stem + "." + ext))) why += fmt::format("gnuplot {} failed ({}); ", gpf.filename().string(), r.error.empty() ? "no picture" : r.error);
  }
  return why;
}

// A markdown matrix (values), for the report without pictures.
std::string mdMatrix(const accept::PairMatrix& m, const std::vector<double>& v) {
  std::string s = "| |";
  for (int b = 0; b < m.n; ++b) s += fmt::format(" {} |", b);
  s += "\n|---|";
  for (int b = 0; b < m.n; ++b) s += "---|";
  s += "\n";
  for (int a = 0; a < m.n; ++a) {
    s += fmt::format("| **{}** |", a);
    for (int b = 0; b < m.n; ++b) s += " " + (a == b ? std::string("·") : fmtNum(m.get(v, a, b))) + " |";
    s += "\n";
  }
  return s;
}

}  // namespace fb::acceptcmd

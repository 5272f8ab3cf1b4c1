// Series and their statistics: plateau, floor, nominal rate, fair ratios, pattern matching.
#include "report/series.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "report/markdown_text.h"

namespace fb {
using md::humanSize;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

std::string Series::label() const {
  std::string l = impl + "/" + path + (inPlace ? " [in]" : " [out]");
  return run.empty() ? l : run + ": " + l;
}

std::vector<Series> groupSeries(const std::vector<Sample>& rows, const std::string& run) {
  std::vector<Series> out;
  for (const auto& r : rows) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Series& s) {
      return s.coll == r.coll && s.impl == r.impl && s.path == r.path && s.dtype == r.dtype && s.inPlace == r.inPlace;
    });
    if (it == out.end()) {
      Series s;
      s.run = run;
      s.coll = r.coll;
      s.impl = r.impl;
      s.path = r.path;
      s.dtype = r.dtype;
      s.inPlace = r.inPlace;
      s.nRanks = r.nRanks;
      s.nNodes = r.nNodes;
      out.push_back(std::move(s));
      it = out.end() - 1;
    }
    auto same = std::find_if(it->rows.begin(), it->rows.end(), [&](const Sample& x) { return x.bytes == r.bytes; });
    if (same != it->rows.end()) *same = r;
    else it->rows.push_back(r);
  }
  for (auto& s : out)
    std::sort(s.rows.begin(), s.rows.end(), [](const Sample& a, const Sample& b) { return a.bytes < b.bytes; });
  return out;
}

double plateauBusBw(const std::vector<Sample>& rows) {
  std::size_t maxB = 0;
  for (const auto& r : rows) maxB = std::max(maxB, r.bytes);
  if (maxB == 0) return kNaN;
  std::vector<double> v;
  for (const auto& r : rows)
    if (validRow(r) && crossesLink(r) && static_cast<double>(r.bytes) >= kPlateauFraction * static_cast<double>(maxB))
      v.push_back(r.busBwGBps);
  return median(v);
}

std::vector<Sample> rowsAtCommonSizes(const std::vector<Sample>& rows, const std::vector<Sample>& other) {
  std::set<std::size_t> theirs;
  for (const auto& r : other)
    if (validRow(r)) theirs.insert(r.bytes);
  std::vector<Sample> out;
  for (const auto& r : rows)
    if (theirs.count(r.bytes)) out.push_back(r);
  return out;
}

std::string plateauWarning(const std::vector<Sample>& rows) {
  std::vector<const Sample*> v;
  for (const auto& r : rows)
    if (validRow(r) && crossesLink(r) && r.bytes > 0) v.push_back(&r);
  std::sort(v.begin(), v.end(), [](const Sample* a, const Sample* b) { return a->bytes < b->bytes; });
  if (v.size() < 2) return "";
  const Sample& last = *v.back();
  const Sample& prev = *v[v.size() - 2];
  if (prev.busBwGBps <= 0 || last.busBwGBps <= prev.busBwGBps * (1 + kPlateauRise)) return "";
  return fmt::format("not a plateau: the sweep stops at {} (busbw +{:.0f}% from {})", humanSize(last.bytes),
                     100.0 * (last.busBwGBps / prev.busBwGBps - 1), humanSize(prev.bytes));
}

double nominalGBps(const std::vector<Sample>& rows) {
  for (const auto& r : rows)
    if (r.pctNominal > 0 && r.busBwGBps > 0) return r.busBwGBps / r.pctNominal * 100.0;
  return -1;
}

std::string nominalBasis(const std::vector<Sample>& rows) {
  for (const auto& r : rows)
    for (const auto& [k, v] : r.extra)
      if (k == "nominal_basis" && !v.empty()) return v;
  return "";
}

double smallMessageFloorUs(const std::vector<Sample>& rows) {
  double best = kNaN;
  for (const auto& r : rows)
    if (validRow(r) && r.bytes > 0 && r.bytes <= kFloorMaxBytes && (std::isnan(best) || r.timeUs < best))
      best = r.timeUs;
  return best;
}

int seriesMatchLevel(const Series& s, const std::string& p) {
  if (p.empty()) return 0;
  if (p == s.label()) return 1;
  if (p == s.implPath() || (!s.run.empty() && (p == s.run + ":" + s.implPath() || p == s.run + ": " + s.implPath())))
    return 2;
  if (p == s.path || p == s.impl) return 3;
  if (s.label().find(p) != std::string::npos) return 4;
  return 0;
}

bool seriesMatches(const Series& s, const std::string& p) { return seriesMatchLevel(s, p) > 0; }

std::vector<std::string> patternCandidates(const std::vector<Series>& all, const std::string& p) {
  int best = 0;
  for (const auto& s : all) {
    int l = seriesMatchLevel(s, p);
    if (l > 0 && (best == 0 || l < best)) best = l;
  }
  std::vector<std::string> out;
  for (const auto& s : all) {
    if (best == 0 || seriesMatchLevel(s, p) != best) continue;
    std::string key = (s.run.empty() ? "" : s.run + ":") + s.implPath();
    if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
  }
  return out;
}

}  // namespace fb

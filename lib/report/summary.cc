// Markdown rendering: one run's report.md and the report tool's comparison page.
#include "report/summary.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "core/impl_facts.h"
#include "core/units.h"
#include "report/fingerprint.h"
#include "report/markdown_text.h"

namespace fb {
namespace {
using md::cell;
using md::humanSize;
using md::jsonText;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string fmtBw(double v) {
  if (std::isnan(v)) return "—";
  if (std::isinf(v)) return "inf";
  if (v < 0.01) return fmt::format("{:.4f}", v);
  if (v < 1) return fmt::format("{:.3f}", v);
  return fmt::format("{:.2f}", v);
}
std::string fmtUs(double v) {
  if (std::isnan(v)) return "—";
  return fmt::format("{:.2f}", v);
}
std::string fmtRatio(double v) {
  if (std::isnan(v) || std::isinf(v)) return "—";
  return fmt::format("{:.2f}", v);
}

const Sample* rowAt(const Series& s, std::size_t bytes) {
  for (const auto& r : s.rows)
    if (r.bytes == bytes) return &r;
  return nullptr;
}

std::string bwCell(const Sample* r) {
  if (!r) return "—";
  if (!crossesLink(*r)) return "no link";  // 1 rank: busbw 0 for every collective
  std::string v = fmtBw(r->busBwGBps);
  if (r->repeats > 1 && r->busBwMin() >= 0 && r->busBwMax() >= 0)
    v += fmt::format(" [{}–{}]", fmtBw(r->busBwMin()), fmtBw(r->busBwMax()));
  if (r->wrong > 0) v += fmt::format(" ✗ {} wrong", r->wrong);
  else if (r->wrong < 0) v += " †";
  return v;
}

std::string definitions() {
  return fmt::format(
      "How to read: `time_us` is per operation: the **median of** the timed batches (repeats) of each "
      "size, each batch divided by the iteration count and combined over ranks as its rows say (`timer`, "
      "`rank_time`: by default each rank's own batch time, maximum over ranks). busbw cells show the "
      "median and, in brackets, the slowest–fastest batch. `algbw = size / time`, `busbw = algbw × factor` with GB = 1e9 "
      "bytes; factor 2(n-1)/n for AllReduce, (n-1)/n for AllGather and ReduceScatter (size = the total "
      "buffer), 1 for the P2P ring. **plateau busbw** = median busbw over the sizes ≥ 1/4 of the "
      "largest size measured for that path (the large-message, bandwidth-bound end); flagged \"not a plateau\" "
      "when the largest size is still more than {:.0f}% faster than the one before, and ratios of plateaus are "
      "taken only over the sizes both paths measured. **% of nominal** = plateau busbw / the path's nominal "
      "rate (its basis is shown). **floor time** = "
      "the smallest time_us over sizes in (0, {}] (the small-message, latency-bound end). Rows with "
      "wrong elements are excluded from both and marked ✗; † = data not checked. No figure here is a "
      "mean over all sizes.\n",
      kPlateauRise * 100, humanSize(kFloorMaxBytes));
}

std::string plotLinks(const std::string& outDir, const std::string& gid) {
  namespace fs = std::filesystem;
  std::string out;
  for (const char* kind : {"busbw", "time"}) {
    std::string rel = fmt::format("plots/{}_{}.png", gid, kind);
    if (!outDir.empty() && fs::exists(fs::path(outDir) / rel))
      out += fmt::format("![{} {}]({}) ", gid, kind, rel);
  }
  if (!out.empty()) out += "\n\n";
  return out;
}

struct Group {
  std::string coll, dtype;
  std::vector<const Series*> series;
};

std::vector<Group> makeGroups(const std::vector<Series>& all) {
  std::vector<Group> groups;
  for (const auto& s : all) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return g.coll == s.coll && g.dtype == s.dtype; });
    if (it == groups.end()) {
      groups.push_back({s.coll, s.dtype, {}});
      it = groups.end() - 1;
    }
    it->series.push_back(&s);
  }
  return groups;
}

std::string renderGroups(const std::vector<Series>& all, const CompareOptions& opt, const std::string& outDir,
                         bool multiRun, std::vector<std::string>* notes) {
  std::string md;
  for (const auto& g : makeGroups(all)) {
    md += fmt::format("## {} ({})\n\n", g.coll, g.dtype);
    if (!multiRun && !g.series.empty())
      md += fmt::format("{} ranks on {} node(s).\n\n", g.series[0]->nRanks, g.series[0]->nNodes);
    md += plotLinks(outDir, groupId(g.coll, g.dtype));

    const Series* base = nullptr;
    int baseLevel = 0;
    if (!opt.baseline.empty()) {
      // The most exact match wins (full label, then impl/path, then path or impl, then a part).
      for (auto* s : g.series) {
        int l = seriesMatchLevel(*s, opt.baseline);
        if (l > 0 && (baseLevel == 0 || l < baseLevel)) {
          base = s;
          baseLevel = l;
        }
      }
      if (!base && notes)
        notes->push_back(fmt::format("{} ({}): no series matches baseline '{}', no ratios", g.coll, g.dtype,
                                     opt.baseline));
    }
    // Each series is held against a baseline series of its own placement when there is one
    // (in-place against in-place), else against the first match.
    auto baseFor = [&](const Series* s) -> const Series* {
      if (!base) return nullptr;
      for (auto* c : g.series)
        if (c->inPlace == s->inPlace && c->run == base->run && c->implPath() == base->implPath()) return c;
      return base;
    };
    auto isBase = [&](const Series* s) { return base && baseFor(s) == s; };
    bool anyPrice = false;
    for (auto* s : g.series)
      for (auto& [pat, usd] : opt.priceUsd)
        if (seriesMatches(*s, pat)) anyPrice = true;

    // Summary per series.
    md += "### Summary per path\n\n";
    md += "| impl/path | placement | ranks × nodes | timer | plateau busbw (GB/s) | plateau sizes | % of nominal | "
          "nominal rate | floor time (us) | floor at | rows | wrong rows |";
    if (base) md += " plateau / baseline (common sizes) |";
    if (anyPrice) md += " plateau GB/s per $1000 (user-supplied price) |";
    md += "\n|---|---|---|---|---|---|---|---|---|---|---|---|";
    if (base) md += "---|";
    if (anyPrice) md += "---|";
    md += "\n";
    for (auto* s : g.series) {
      std::size_t maxB = 0;
      for (auto& r : s->rows) maxB = std::max(maxB, r.bytes);
      double plateau = plateauBusBw(s->rows);
      double floor = smallMessageFloorUs(s->rows);
      std::string plateauSizes = s->nRanks > 1 ? "—" : "no link (1 rank)";
      if (!std::isnan(plateau)) {
        std::size_t lo = static_cast<std::size_t>(std::ceil(static_cast<double>(maxB) * kPlateauFraction));
        plateauSizes = fmt::format("{} … {}", humanSize(lo), humanSize(maxB));
        std::string warn = plateauWarning(s->rows);
        if (!warn.empty()) plateauSizes += " ⚠ " + warn;
      }
      double nominal = nominalGBps(s->rows);
      std::string basis = nominalBasis(s->rows);
      std::string pctNom = nominal > 0 && !std::isnan(plateau) ? fmt::format("{:.1f}%", 100.0 * plateau / nominal) : "—";
      std::string nomText = nominal > 0 ? fmt::format("{} GB/s{}", fmtBw(nominal), basis.empty() ? "" : " (" + basis + ")")
                                        : (basis.empty() ? "unknown" : basis);
      std::string timer = s->rows.empty() ? "—" : s->rows.front().timer + ", " + s->rows.front().rankTime;
      int maxRep = 0;
      for (auto& r : s->rows) maxRep = std::max(maxRep, r.repeats);
      if (maxRep > 1) timer += fmt::format(", median of ≤{}", maxRep);
      std::string floorAt = "—";
      if (!std::isnan(floor))
        for (auto& r : s->rows)
          if (validRow(r) && r.bytes > 0 && r.bytes <= kFloorMaxBytes && r.timeUs == floor) {
            floorAt = humanSize(r.bytes);
            break;
          }
      int wrongRows = 0;
      for (auto& r : s->rows)
        if (r.wrong > 0) ++wrongRows;
      std::string label = (multiRun ? s->run + ": " : "") + s->implPath();
      md += fmt::format("| {} | {} | {} × {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |", cell(label),
                        s->inPlace ? "in" : "out", s->nRanks, s->nNodes, cell(timer), fmtBw(plateau),
                        cell(plateauSizes), pctNom, cell(nomText), fmtUs(floor), floorAt, s->rows.size(),
                        wrongRows ? fmt::format("**{}**", wrongRows) : "0");
      if (base) {
        std::string r = "baseline";
        if (!isBase(s)) {
          // Only the sizes both series have: a plateau over 64 MiB … 256 MiB is not held against one over 2 GiB.
          auto mine = rowsAtCommonSizes(s->rows, baseFor(s)->rows);
          auto theirs = rowsAtCommonSizes(baseFor(s)->rows, s->rows);
          r = fmtRatio(plateauBusBw(mine) / plateauBusBw(theirs));
          std::size_t myMax = 0, common = 0;
          for (auto& x : s->rows) myMax = std::max(myMax, x.bytes);
          for (auto& x : mine) common = std::max(common, x.bytes);
          if (r != "—" && common != myMax) r += fmt::format(" (sizes ≤ {})", humanSize(common));
        }
        md += " " + r + " |";
      }
      if (anyPrice) {
        std::string v = "—";
        for (auto& [pat, usd] : opt.priceUsd)
          if (seriesMatches(*s, pat) && usd > 0) {
            v = fmt::format("{} (at ${:.0f}/port)", fmtBw(plateau / (usd / 1000.0)), usd);
            break;
          }
        md += " " + v + " |";
      }
      md += "\n";
    }
    md += "\n";

    std::set<std::size_t> sizes;
    for (auto* s : g.series)
      for (auto& r : s->rows) sizes.insert(r.bytes);

    // busbw by size, series side by side.
    md += "### busbw (GB/s) by size\n\n| size | bytes |";
    std::string sep = "|---|---:|";
    for (auto* s : g.series) {
      md += " " + cell(s->label()) + " |";
      sep += "---:|";
    }
    if (base)
      for (auto* s : g.series)
        if (!isBase(s)) {
          md += " " + cell(s->label()) + " / baseline |";
          sep += "---:|";
        }
    md += "\n" + sep + "\n";
    for (auto b : sizes) {
      md += fmt::format("| {} | {} |", humanSize(b), b);
      for (auto* s : g.series) md += " " + bwCell(rowAt(*s, b)) + " |";
      if (base) {
        for (auto* s : g.series)
          if (!isBase(s)) {
            const Sample* br = rowAt(*baseFor(s), b);
            const Sample* r = rowAt(*s, b);
            bool links = r && br && crossesLink(*r) && crossesLink(*br);  // 1 rank: no busbw to compare
            md += " " + ((links && br->busBwGBps > 0) ? fmtRatio(r->busBwGBps / br->busBwGBps) : "—") + " |";
          }
      }
      md += "\n";
    }
    md += "\n";

    // time for the small, latency-bound sizes.
    bool anySmall = false;
    for (auto b : sizes)
      if (b <= kTimeTableMaxBytes) anySmall = true;
    if (anySmall) {
      md += fmt::format("### time (us per operation: median of the batches, timer as in the summary) for sizes ≤ {}\n\n| size | bytes |", humanSize(kTimeTableMaxBytes));
      std::string sep2 = "|---|---:|";
      for (auto* s : g.series) {
        md += " " + cell(s->label()) + " |";
        sep2 += "---:|";
      }
      if (base)
        for (auto* s : g.series)
          if (!isBase(s)) {
            md += " " + cell(s->label()) + " time / baseline time |";
            sep2 += "---:|";
          }
      md += "\n" + sep2 + "\n";
      for (auto b : sizes) {
        if (b > kTimeTableMaxBytes) continue;
        md += fmt::format("| {} | {} |", humanSize(b), b);
        for (auto* s : g.series) {
          const Sample* r = rowAt(*s, b);
          md += " " + (r ? fmtUs(r->timeUs) + (r->wrong > 0 ? " ✗" : "") : std::string("—")) + " |";
        }
        if (base) {
          for (auto* s : g.series)
            if (!isBase(s)) {
              const Sample* br = rowAt(*baseFor(s), b);
              const Sample* r = rowAt(*s, b);
              md += " " + ((r && br && br->timeUs > 0) ? fmtRatio(r->timeUs / br->timeUs) : "—") + " |";
            }
        }
        md += "\n";
      }
      md += "\n";
    }
  }
  return md;
}

}  // namespace

const nlohmann::json* firstHostFingerprint(const RunData& r) {
  const auto& j = r.runJson;
  if (!j.is_object() || !j.contains("fingerprint") || !j["fingerprint"].is_object()) return nullptr;
  const auto& fp = j["fingerprint"];
  if (!fp.contains("hosts") || !fp["hosts"].is_array() || fp["hosts"].empty()) return nullptr;
  const auto& h0 = fp["hosts"][0];
  return h0.is_object() && h0.contains("fingerprint") ? &h0["fingerprint"] : nullptr;
}

std::string groupId(const std::string& coll, const std::string& dtype) {
  std::string id = coll + "_" + dtype;
  for (char& c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) c = '-';
  return id;
}

std::string renderRunReport(const RunMeta& meta, const std::vector<Sample>& rows, const RunSummary& summary,
                            const std::string& outDir) {
  std::string md = fmt::format("# fabricbench run {}\n\n", meta.runId.empty() ? "(no id)" : meta.runId);
  md += fmt::format("Status: **{}**{}\n\n", summary.ok ? "ok" : "NOT OK", summary.status.empty() ? "" : " — " + summary.status);
  for (const auto& n : summary.notes) md += "- note: " + n + "\n";
  if (!summary.notes.empty()) md += "\n";
  md += definitions() + "\n";
  md += renderFingerprintMarkdown(meta.fingerprint, meta.commandLine);
  if (rows.empty()) md += "No rows were measured.\n";
  std::vector<std::string> notes;
  // With the ratio baseline (NCCL) and another implementation in one run, the ratio columns are ÷
  // the baseline (the question a raw path answers: how much NCCL leaves on the table at each size).
  CompareOptions opt;
  auto series = groupSeries(rows);
  const ImplFacts* base = nullptr;  // the ratio baseline (core/impl_facts.h)
  bool anyOther = false;
  for (const auto& s : series) {
    const ImplFacts* f = findImplFacts(s.impl);
    if (f && f->ratioBaseline && (!base || base == f)) base = f;
    else anyOther = true;
  }
  if (base && anyOther) {
    opt.baseline = std::string(base->name);
    std::string_view t = base->title.empty() ? base->name : base->title;
    md += fmt::format("Ratios: every other path ÷ {} (`{}`, of the same placement where measured) at the same size — busbw "
                      "ratio (> 1: faster than {}) and, for the small sizes, time ratio (< 1: faster than {}).\n\n",
                      t, base->name, t, t);
  }
  md += renderGroups(series, opt, outDir, false, &notes);
  md += "Files: `table.csv` (every row, units in the header), `run.json` (fingerprint, config, rows).\n";
  return md;
}

std::string renderComparison(const std::vector<RunData>& runs, const CompareOptions& opt, const std::string& outDir) {
  bool multi = runs.size() > 1;
  std::vector<Series> all;
  for (const auto& r : runs) {
    auto s = groupSeries(r.rows, multi ? r.label : "");
    all.insert(all.end(), s.begin(), s.end());
  }
  std::string md = "# fabricbench comparison\n\nRuns:\n\n";
  for (const auto& r : runs) {
    std::string status = "—", cmd;
    if (r.runJson.is_object()) {
      auto sm = r.runJson.contains("summary") ? r.runJson["summary"] : nlohmann::json::object();
      if (sm.is_object()) status = jsonText(sm.value("status", nlohmann::json()));
      if (r.runJson.contains("command_line") && r.runJson["command_line"].is_string())
        cmd = r.runJson["command_line"].get<std::string>();
    }
    md += fmt::format("- `{}` ({}): {} rows, status {}{}\n", r.label, r.dir, r.rows.size(), status,
                      cmd.empty() ? "" : fmt::format(", command `{}`", cmd));
  }
  md += "\n";
  if (!opt.baseline.empty())
    md += fmt::format("Baseline for ratios: `{}` (busbw / baseline busbw at the same size; in the small-size table, "
                      "time / baseline time).\n\n",
                      opt.baseline);
  if (!opt.priceUsd.empty()) {
    md += "Prices are **user input** (`--price`), not measured: ";
    std::string p;
    for (auto& [k, v] : opt.priceUsd) p += (p.empty() ? "" : ", ") + fmt::format("`{}` = ${:.2f}/port", k, v);
    md += p + ". GB/s per $1000 = plateau busbw / (price / 1000).\n\n";
  }
  md += definitions() + "\n";
  std::vector<std::string> notes;
  std::string body = renderGroups(all, opt, outDir, multi, &notes);
  for (auto& n : notes) md += "- note: " + n + "\n";
  if (!notes.empty()) md += "\n";
  md += body;
  for (const auto& r : runs)
    if (r.runJson.is_object() && r.runJson.contains("fingerprint")) {
      md += fmt::format("# Fingerprint of run {}\n\n", r.label);
      try {
        std::string cl = r.runJson.contains("command_line") && r.runJson["command_line"].is_string()
                             ? r.runJson["command_line"].get<std::string>()
                             : "";
        md += renderFingerprintMarkdown(r.runJson["fingerprint"], cl);
      } catch (const nlohmann::json::exception& e) {
        md += fmt::format("The fingerprint in run.json could not be read: {}\n\n", e.what());
      }
    }
  return md;
}

}  // namespace fb

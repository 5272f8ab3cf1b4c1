#include <array>
#include "report/summary.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "core/units.h"

namespace fb {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool valid(const Sample& s) { return s.wrong <= 0; }  // -1 = not checked still counts

std::string humanSize(std::size_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  std::size_t v = b;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{} {}", v, units[u]);
}

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

// Markdown table cells must not contain '|' or newlines.
std::string cell(std::string s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n' || c == '\r') o += ' ';
    else o += c;
  }
  return o;
}

const Sample* rowAt(const Series& s, std::size_t bytes) {
  for (const auto& r : s.rows)
    if (r.bytes == bytes) return &r;
  return nullptr;
}

std::string bwCell(const Sample* r) {
  if (!r) return "—";
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
      std::string plateauSizes = "—";
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
          if (valid(r) && r.bytes > 0 && r.bytes <= kFloorMaxBytes && r.timeUs == floor) {
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
            md += " " + ((r && br && br->busBwGBps > 0) ? fmtRatio(r->busBwGBps / br->busBwGBps) : "—") + " |";
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

std::string jsonText(const nlohmann::json& v) {
  if (v.is_null()) return "—";
  if (v.is_string()) return v.get<std::string>();
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string Series::label() const {
  std::string l = impl + "/" + path + (inPlace ? " [in]" : " [out]");
  return run.empty() ? l : run + ": " + l;
}

std::string groupId(const std::string& coll, const std::string& dtype) {
  std::string id = coll + "_" + dtype;
  for (char& c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) c = '-';
  return id;
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

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

double plateauBusBw(const std::vector<Sample>& rows) {
  std::size_t maxB = 0;
  for (const auto& r : rows) maxB = std::max(maxB, r.bytes);
  if (maxB == 0) return kNaN;
  std::vector<double> v;
  for (const auto& r : rows)
    if (valid(r) && static_cast<double>(r.bytes) >= kPlateauFraction * static_cast<double>(maxB))
      v.push_back(r.busBwGBps);
  return median(v);
}

std::vector<Sample> rowsAtCommonSizes(const std::vector<Sample>& rows, const std::vector<Sample>& other) {
  std::set<std::size_t> theirs;
  for (const auto& r : other)
    if (valid(r)) theirs.insert(r.bytes);
  std::vector<Sample> out;
  for (const auto& r : rows)
    if (theirs.count(r.bytes)) out.push_back(r);
  return out;
}

std::string plateauWarning(const std::vector<Sample>& rows) {
  std::vector<const Sample*> v;
  for (const auto& r : rows)
    if (valid(r) && r.bytes > 0) v.push_back(&r);
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
    if (valid(r) && r.bytes > 0 && r.bytes <= kFloorMaxBytes && (std::isnan(best) || r.timeUs < best))
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

namespace {
// RDMA ports of one host's fingerprint as {device, port, state, rate, link layer, firmware}. Two
// layouts exist: sysfs ({dev: {fw_ver, ports: {n: {...}}}}, lib/report/fingerprint.cc) and verbs
// discovery ({devices: [{name, fw_ver, ports: [{port, ...}]}], selected|error}, which fabricbench
// records when it has the verbs backend).
std::vector<std::array<std::string, 6>> rdmaRows(const nlohmann::json& f) {
  using nlohmann::json;
  std::vector<std::array<std::string, 6>> rows;
  if (!f.is_object() || !f.contains("rdma") || !f["rdma"].is_object()) return rows;
  const json& r = f["rdma"];
  auto text = [](const json& o, const char* k) { return o.is_object() && o.contains(k) ? jsonText(o[k]) : std::string("—"); };
  if (r.contains("devices") && r["devices"].is_array()) {
    for (const auto& d : r["devices"]) {
      if (!d.is_object() || !d.contains("ports") || !d["ports"].is_array()) continue;
      for (const auto& p : d["ports"])
        rows.push_back({text(d, "name"), text(p, "port"), text(p, "state"), text(p, "rate"), text(p, "link_layer"),
                        text(d, "fw_ver")});
    }
    return rows;
  }
  for (const auto& [dev, d] : r.items()) {
    if (!d.is_object() || !d.contains("ports") || !d["ports"].is_object()) continue;
    for (const auto& [port, p] : d["ports"].items())
      rows.push_back({dev, port, text(p, "state"), text(p, "rate"), text(p, "link_layer"), text(d, "fw_ver")});
  }
  return rows;
}

std::string renderFingerprintImpl(const nlohmann::json& fp, const std::string& commandLine) {
  using nlohmann::json;
  std::string md = "## Where these numbers come from\n\n";
  json hosts = json::array();
  if (fp.is_object() && fp.contains("hosts") && fp["hosts"].is_array()) {
    hosts = fp["hosts"];
  } else if (fp.is_object() && !fp.empty()) {
    hosts.push_back({{"hostname", fp.value("hostname", "?")}, {"ranks", json::array()}, {"fingerprint", fp}});
  }
  if (hosts.empty()) md += "No fingerprint was recorded.\n\n";

  // Differences first: mismatched nodes are a classic cause of bad numbers.
  if (fp.is_object() && fp.contains("differences") && fp["differences"].is_array() && !fp["differences"].empty()) {
    md += "**⚠ Nodes differ** (mismatched nodes are a classic cause of bad numbers):\n\n";
    for (const auto& d : fp["differences"]) {
      std::map<std::string, std::vector<std::string>> byValue;
      for (auto& [host, v] : d["values"].items()) byValue[jsonText(v)].push_back(host);
      std::string parts;
      for (auto& [v, hs] : byValue) {
        std::string hl;
        for (auto& h : hs) hl += (hl.empty() ? "" : ", ") + h;
        parts += (parts.empty() ? "" : "; ") + fmt::format("`{}` on {}", v, hl);
      }
      md += fmt::format("- Nodes differ: `{}`: {}\n", d.value("key", "?"), parts);
    }
    md += "\n";
  } else if (hosts.size() > 1) {
    md += fmt::format("All {} nodes agree on the compared keys (kernel, OS, CPU model, GPU driver and models, "
                      "NCCL/CUDA/MPI versions, NIC driver, firmware, link speed and MTU, RDMA firmware and "
                      "port rate, git revision).\n\n",
                      hosts.size());
  }

  if (!hosts.empty()) {
    md += "| host | ranks | CPU | logical CPUs | memory | OS | kernel | GPUs | GPU driver |\n"
          "|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& h : hosts) {
      const json& f = h.contains("fingerprint") ? h["fingerprint"] : json::object();
      std::string ranks;
      for (auto& r : h.value("ranks", json::array())) ranks += (ranks.empty() ? "" : ",") + jsonText(r);
      std::string gpus = "none";
      if (f.contains("gpus") && f["gpus"].is_array() && !f["gpus"].empty()) {
        std::map<std::string, int> models;
        for (auto& g : f["gpus"]) models[g.value("name", "?")]++;
        gpus.clear();
        for (auto& [m, n] : models) gpus += (gpus.empty() ? "" : ", ") + fmt::format("{} × {}", n, m);
      } else if (f.contains("gpu_query")) {
        gpus = "none (" + jsonText(f["gpu_query"]) + ")";
      }
      double memGiB = f.contains("memory_bytes") && f["memory_bytes"].is_number()
                          ? f["memory_bytes"].get<double>() / (1024.0 * 1024 * 1024)
                          : kNaN;
      json cpu = f.value("cpu", json::object());
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(h.value("hostname", "?")),
                        ranks.empty() ? "—" : ranks, cell(jsonText(cpu.value("model", json()))),
                        jsonText(cpu.value("logical_cpus", json())),
                        std::isnan(memGiB) ? "—" : fmt::format("{:.1f} GiB", memGiB),
                        cell(jsonText(f.value("os", json()))), cell(jsonText(f.value("kernel", json()))),
                        cell(gpus), cell(jsonText(f.value("gpu_driver", json()))));
    }
    md += "\n";

    md += "Network interfaces (speed as the kernel reports it; lo not shown):\n\n";
    md += "| host | nic | state | speed (Mb/s) | MTU | driver | firmware | IPv4 | kind |\n"
          "|---|---|---|---|---|---|---|---|---|\n";
    bool anyRdma = false;
    for (const auto& h : hosts) {
      const json& f = h.contains("fingerprint") ? h["fingerprint"] : json::object();
      if (!rdmaRows(f).empty()) anyRdma = true;
      if (!f.contains("nics") || !f["nics"].is_object()) continue;
      for (auto& [name, n] : f["nics"].items()) {
        if (name == "lo") continue;
        std::string ips;
        for (auto& ip : n.value("ipv4", json::array())) ips += (ips.empty() ? "" : " ") + jsonText(ip);
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(h.value("hostname", "?")),
                          cell(name), jsonText(n.value("operstate", json())), jsonText(n.value("speed_mbps", json())),
                          jsonText(n.value("mtu", json())), jsonText(n.value("driver", json())),
                          cell(jsonText(n.value("firmware", json()))), ips.empty() ? "—" : ips,
                          (n.contains("virtual") && n["virtual"].is_boolean() && n["virtual"].get<bool>()) ? "virtual" : "physical");
      }
    }
    md += "\n";
    if (anyRdma) {
      md += "RDMA devices:\n\n| host | device | port | state | rate | link layer | firmware |\n"
            "|---|---|---|---|---|---|---|\n";
      for (const auto& h : hosts) {
        const json& f = h.contains("fingerprint") ? h["fingerprint"] : json::object();
        for (const auto& r : rdmaRows(f))
          md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", cell(h.value("hostname", "?")), cell(r[0]), r[1],
                            cell(r[2]), cell(r[3]), r[4], cell(r[5]));
      }
      md += "\n";
    }

    // What the verbs discovery said where it found nothing usable (e.g. "no RDMA device").
    for (const auto& h : hosts) {
      const json& f = h.contains("fingerprint") ? h["fingerprint"] : json::object();
      // "rdma_selection" (current layout) or inside "rdma" (run.json files written before it)
      for (const char* key : {"rdma_selection", "rdma"})
        if (f.contains(key) && f[key].is_object() && f[key].contains("error"))
          md += fmt::format("- RDMA on {}: {}\n", cell(h.value("hostname", "?")), cell(jsonText(f[key]["error"])));
    }
    const json& f0 = hosts[0].contains("fingerprint") ? hosts[0]["fingerprint"] : json::object();
    md += "\nSoftware (first host):\n\n";
    auto line = [&](const char* what, const json& v) {
      if (!v.is_null()) md += fmt::format("- {}: {}\n", what, cell(jsonText(v)));
    };
    line("MPI", f0.contains("mpi_version") && !f0["mpi_version"].is_null() ? f0["mpi_version"]
                                                                           : f0.value("mpi_library", json()));
    line("NCCL", f0.value("nccl_version", json()));
    line("CUDA driver", f0.value("cuda_driver_version", json()));
    line("CUDA runtime", f0.value("cuda_runtime_version", json()));
    line("compiler", f0.value("compiler", json()));
    if (f0.contains("build")) line("build", f0["build"]);
    if (f0.contains("git")) {
      const json& g = f0["git"];
      md += fmt::format("- git revision: {}{}{}\n", jsonText(g.value("rev", json())),
                        (g.contains("dirty") && g["dirty"].is_boolean() && g["dirty"].get<bool>()) ? " (dirty: uncommitted changes)"
                        : (g.contains("dirty") && g["dirty"].is_null() ? " (dirty flag unknown)" : ""),
                        g.contains("source") ? " [" + jsonText(g["source"]) + "]" : "");
    }
  }
  if (!commandLine.empty()) md += fmt::format("- command line: `{}`\n", commandLine);
  md += "\nThe full fingerprint (every host, environment variables) is in run.json.\n\n";
  return md;
}
}  // namespace

std::string renderFingerprintMarkdown(const nlohmann::json& fp, const std::string& commandLine) {
  try {
    return renderFingerprintImpl(fp, commandLine);
  } catch (const nlohmann::json::exception& e) {
    return fmt::format("## Where these numbers come from\n\nThe fingerprint could not be summarised ({}); "
                       "see run.json.\n\n- command line: `{}`\n\n",
                       e.what(), commandLine);
  }
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
  // With NCCL and another implementation in one run, NCCL is the baseline of the ratio columns
  // (the question a raw path answers: how much NCCL leaves on the table at each size).
  CompareOptions opt;
  auto series = groupSeries(rows);
  bool anyNccl = false, anyOther = false;
  for (const auto& s : series) (s.impl == "nccl" ? anyNccl : anyOther) = true;
  if (anyNccl && anyOther) {
    opt.baseline = "nccl";
    md += "Ratios: every other path ÷ NCCL (`nccl`, of the same placement where measured) at the same size — busbw "
          "ratio (> 1: faster than NCCL) and, for the small sizes, time ratio (< 1: faster than NCCL).\n\n";
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

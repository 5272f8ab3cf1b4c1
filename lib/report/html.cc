// The one-page HTML report; see html.h.
#include "report/html.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "report/fingerprint.h"
#include "report/html_files.h"
#include "report/markdown_text.h"
#include "report/plot.h"
#include "core/process.h"

namespace fb {
namespace fs = std::filesystem;
using nlohmann::json;
using md::humanSize;

std::string htmlEscape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

namespace html {

std::string esc(const std::string& s) { return htmlEscape(s); }

std::string num(double v, int digits) {
  if (std::isnan(v) || v < 0) return "—";
  return fmt::format("{:.{}f}", v, digits);
}

std::string jsonText(const json& v) {
  if (v.is_null()) return "—";
  if (v.is_string()) return v.get<std::string>();
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace html

namespace {

using namespace html;

const json* at(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return nullptr;
    p = &(*p)[k];
  }
  return p;
}

std::string str(const json& j, std::initializer_list<const char*> path) {
  const json* p = at(j, path);
  return p ? jsonText(*p) : std::string();
}

// ---- plots ----

// gnuplot's SVG, made ready to sit inline beside others: no XML prolog, ids made unique.
std::string inlineSvg(const std::string& svg, const std::string& prefix) {
  auto start = svg.find("<svg");
  if (start == std::string::npos) return "";
  std::string s = svg.substr(start);
  auto rep = [&](const std::string& from, const std::string& to) {
    for (std::size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
  };
  rep("id='", "id='" + prefix);
  rep("id=\"", "id=\"" + prefix);
  rep("href='#", "href='#" + prefix);
  rep("href=\"#", "href=\"#" + prefix);
  rep("url(#", "url(#" + prefix);
  return s;
}

struct Group {
  std::string id, coll, dtype;
  std::vector<const Series*> series;
};

std::vector<Group> groupsOf(const std::vector<Series>& all) {
  std::vector<Group> groups;
  for (const auto& s : all) {
    std::string gid = groupId(s.coll, s.dtype);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.id == gid; });
    if (it == groups.end()) {
      groups.push_back({gid, s.coll, s.dtype, {}});
      it = groups.end() - 1;
    }
    it->series.push_back(&s);
  }
  return groups;
}

// The busbw figures of a group as a table (the fallback when there are no plots).
std::string figureTable(const Group& g) {
  std::set<std::size_t> sizes;
  for (const auto* s : g.series)
    for (const auto& r : s->rows) sizes.insert(r.bytes);
  std::string h = "<table class='num'><tr><th>size</th>";
  for (const auto* s : g.series) h += "<th>" + esc(s->label()) + "</th>";
  h += "</tr>\n";
  for (auto b : sizes) {
    h += "<tr><td>" + esc(humanSize(b)) + "</td>";
    for (const auto* s : g.series) {
      auto it = std::find_if(s->rows.begin(), s->rows.end(), [&](const Sample& r) { return r.bytes == b; });
      h += "<td>" + (it == s->rows.end() ? std::string("—") : validRow(*it) ? num(it->busBwGBps) : "wrong") + "</td>";
    }
    h += "</tr>\n";
  }
  return h + "</table>\n";
}

struct TempDir {
  std::string path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "fb-html-XXXXXX").string();
    if (::mkdtemp(t.data())) path = t;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

std::string plotsSection(const std::vector<Series>& all, const HtmlInputs& in, std::vector<std::string>& notes) {
  auto groups = groupsOf(all);
  std::string h = "<h2 id='plots'>Plots</h2>\n";
  std::string why;
  if (!in.plots) why = "plots not made (--no-plots)";
  else if (findInPath("gnuplot").empty()) why = "plots need gnuplot, which is not installed here (apt-get install gnuplot-nox)";
  TempDir tmp;
  if (why.empty() && tmp.path.empty()) why = "plots not made: no temporary folder";
  if (!why.empty()) {
    notes.push_back(why);
    h += "<p class='note'>" + esc(why) + ": the busbw figures (GB/s) follow as tables.</p>\n";
    for (const auto& g : groups) h += fmt::format("<h3>{} {}: busbw (GB/s) by size</h3>\n", esc(g.coll), esc(g.dtype)) + figureTable(g);
    return h;
  }
  int n = 0;
  for (const auto& g : groups) {
    h += fmt::format("<h3>{} {}</h3>\n<div class='plots'>\n", esc(g.coll), esc(g.dtype));
    for (const char* kind : {"busbw", "time"}) {
      std::string svg = (fs::path(tmp.path) / fmt::format("{}_{}.svg", g.id, kind)).string();
      std::string title = fmt::format("{} {} ({}) vs size", g.coll, kind, g.dtype);
      // Shown at about half its 1200 px width beside its pair: a larger font keeps the labels readable.
      std::string script = gnuplotScript(g.series, kind, "svg font 'sans,22'", svg, title);
      if (script.empty()) continue;
      std::string gp = svg + ".gp";
      {
        std::ofstream out(gp);
        out << script;
      }
      auto r = runCommand({"gnuplot", gp}, in.plotTimeout);
      std::ifstream f(svg);
      std::stringstream ss;
      ss << f.rdbuf();
      std::string body = r.ok() ? inlineSvg(ss.str(), fmt::format("p{}_", n++)) : "";
      if (body.empty()) {
        std::string e = fmt::format("plot {} {} failed: {}", g.id, kind, r.error.empty() ? "no SVG written" : r.error);
        notes.push_back(e);
        h += "<p class='note'>" + esc(e) + "</p>\n" + (std::string(kind) == "busbw" ? figureTable(g) : "");
        continue;
      }
      h += "<figure>" + body + "</figure>\n";
    }
    h += "</div>\n";
  }
  return h;
}

// ---- the verdict per path x collective ----

std::string runVerdict(const RunData& r) {
  const json* ok = at(r.runJson, {"summary", "ok"});
  std::string status = str(r.runJson, {"summary", "status"});
  if (!ok || !ok->is_boolean()) return status.empty() ? "unknown (no run.json summary)" : status;
  return std::string(ok->get<bool>() ? "ok" : "NOT OK") + (status.empty() ? "" : ": " + status);
}

std::string summarySection(const std::vector<RunData>& runs, const std::vector<Series>& all, bool multi) {
  std::string h = "<h2 id='summary'>Verdict per path and collective</h2>\n";
  h += "<p class='def'>plateau busbw = median busbw over the sizes &ge; 1/4 of the largest measured; "
       "<em>rising, no plateau</em>: the largest size is still more than 5% above the one before it, so the "
       "fabric's limit was not reached. % of line rate = plateau / the path's nominal rate (where known). "
       "floor = the smallest time per operation for sizes &le; 8 KiB. GB = 1e9 bytes.</p>\n";
  h += "<table><tr>";
  if (multi) h += "<th>run</th>";
  h += "<th>collective</th><th>path</th><th>placement</th><th>ranks &times; nodes</th><th>plateau busbw (GB/s)</th>"
       "<th>vs best</th><th>% of line rate</th><th>floor (us)</th><th>rows checked</th><th>verdict</th></tr>\n";
  // "vs best": the plateau over the best plateau of the same collective and dtype.
  std::map<std::string, double> best;
  for (const auto& s : all) {
    double p = plateauBusBw(s.rows);
    if (!std::isnan(p)) best[groupId(s.coll, s.dtype)] = std::max(best[groupId(s.coll, s.dtype)], p);
  }
  for (const auto& s : all) {
    double plateau = plateauBusBw(s.rows);
    double floor = smallMessageFloorUs(s.rows);
    std::size_t maxB = 0, wrongRows = 0, checked = 0;
    for (const auto& r : s.rows) {
      maxB = std::max(maxB, r.bytes);
      wrongRows += r.wrong > 0;
      checked += r.wrong >= 0;
    }
    std::string warn = plateauWarning(s.rows);
    std::string pl = std::isnan(plateau) ? "—" : num(plateau);
    if (!warn.empty()) pl += " <span class='warn'>rising, no plateau</span>";
    else if (!std::isnan(plateau))
      pl += fmt::format(" <span class='sub'>({} … {})</span>",
                        esc(humanSize(static_cast<std::size_t>(std::ceil(static_cast<double>(maxB) * kPlateauFraction)))),
                        esc(humanSize(maxB)));
    double nominal = nominalGBps(s.rows);
    std::string basis = nominalBasis(s.rows);
    std::string pct = nominal > 0 && !std::isnan(plateau)
                          ? fmt::format("{:.1f}% <span class='sub'>of {} GB/s</span>", 100.0 * plateau / nominal, num(nominal, 1))
                          : "<span class='sub'>" + esc(basis.empty() ? "nominal rate unknown" : basis) + "</span>";
    double b = best[groupId(s.coll, s.dtype)];
    std::string vs = std::isnan(plateau) || b <= 0 ? "—" : fmt::format("{:.2f}", plateau / b);
    std::string fl = "—";
    if (!std::isnan(floor))
      for (const auto& r : s.rows)
        if (r.timeUs == floor && r.bytes > 0 && r.bytes <= kFloorMaxBytes && validRow(r)) {
          fl = fmt::format("{:.2f} <span class='sub'>at {}</span>", floor, esc(humanSize(r.bytes)));
          break;
        }
    const RunData* run = nullptr;
    for (const auto& r : runs)
      if (!multi || r.label == s.run) run = &r;
    std::string verdict, cls;
    if (wrongRows > 0) verdict = fmt::format("NOT OK: {} rows with wrong data", wrongRows), cls = "bad";
    else if (run && at(run->runJson, {"summary", "ok"}) && !run->runJson["summary"]["ok"].get<bool>())
      verdict = "run NOT OK (see Runs)", cls = "bad";
    else if (checked == 0) verdict = "measured, data not checked", cls = "warn";
    else if (!warn.empty()) verdict = "ok; " + warn, cls = "warn";
    else verdict = "ok", cls = "ok";
    h += "<tr>";
    if (multi) h += "<td>" + esc(s.run) + "</td>";
    h += fmt::format("<td>{} {}</td><td>{}</td><td>{}</td><td>{} &times; {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                     "<td>{} / {}</td><td class='{}'>{}</td></tr>\n",
                     esc(s.coll), esc(s.dtype), esc(s.implPath()), s.inPlace ? "in" : "out", s.nRanks, s.nNodes, pl, vs,
                     pct, fl, checked, s.rows.size(), cls, esc(verdict));
  }
  return h + "</table>\n";
}

// ---- runs and fingerprints ----

std::string runsSection(const std::vector<RunData>& runs) {
  std::string h = "<h2 id='runs'>Runs</h2>\n<table><tr><th>run</th><th>status</th><th>when (UTC)</th><th>machine</th>"
                  "<th>command</th></tr>\n";
  for (const auto& r : runs) {
    std::string machine;
    if (r.runJson.is_object()) {
      std::vector<std::string> hostNames;
      if (const json* hosts = at(r.runJson, {"fingerprint", "hosts"}); hosts && hosts->is_array())
        for (const auto& x : *hosts) hostNames.push_back(str(x, {"hostname"}));
      machine = fmt::format("{} ranks on {} node(s)", str(r.runJson, {"fingerprint", "nranks"}),
                            str(r.runJson, {"fingerprint", "nhosts"}));
      if (!hostNames.empty()) machine += " (" + fmt::format("{}", fmt::join(hostNames, ", ")) + ")";
      if (const json* fp = firstHostFingerprint(r)) {
        std::map<std::string, int> gpus;
        if (fp->contains("gpus") && (*fp)["gpus"].is_array())
          for (const auto& g : (*fp)["gpus"]) ++gpus[str(g, {"name"})];
        for (auto& [name, n] : gpus) machine += fmt::format("; {} x {}", n, name);
        std::string nccl = str(*fp, {"nccl_version"});
        if (!nccl.empty()) machine += "; NCCL " + nccl;
      }
    } else {
      machine = "no run.json (table only)";
    }
    std::string cls = str(r.runJson, {"summary", "ok"}) == "true" ? "ok" : "bad";
    h += fmt::format("<tr><td>{}<br><span class='sub'>{}</span></td><td class='{}'>{}</td><td>{}</td><td>{}</td>"
                     "<td><code>{}</code></td></tr>\n",
                     esc(r.label), esc(r.dir), cls, esc(runVerdict(r)), esc(str(r.runJson, {"started_utc"})),
                     esc(machine), esc(str(r.runJson, {"command_line"})));
    if (const json* notes = at(r.runJson, {"summary", "notes"}); notes && notes->is_array() && !notes->empty()) {
      h += "<tr><td></td><td colspan='4' class='sub'>";
      for (const auto& n : *notes) h += esc(jsonText(n)) + "<br>";
      h += "</td></tr>\n";
    }
  }
  return h + "</table>\n";
}

std::string fingerprintSection(const std::vector<RunData>& runs) {
  std::string h = "<h2 id='fingerprint'>Fingerprint differences</h2>\n";
  // Between the hosts of each run (the run's own comparison).
  bool anyHostDiff = false;
  for (const auto& r : runs) {
    const json* d = at(r.runJson, {"fingerprint", "differences"});
    if (!d || !d->is_array() || d->empty()) continue;
    anyHostDiff = true;
    h += fmt::format("<h3>Between the hosts of {}</h3>\n<table><tr><th>key</th><th>values</th></tr>\n", esc(r.label));
    for (const auto& x : *d)
      h += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", esc(str(x, {"key"})), esc(x.contains("values") ? jsonText(x["values"]) : ""));
    h += "</table>\n";
  }
  if (!anyHostDiff) h += "<p>Within each run, the hosts' fingerprints agree on every compared key (or the run had one host).</p>\n";
  if (runs.size() < 2) return h;
  // Between runs: the first host of each, on the compared keys, the NCCL_* environment and the run's settings.
  std::vector<std::map<std::string, std::string>> flat;
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (const auto& r : runs) {
    std::map<std::string, std::string> m;
    auto put = [&](const std::string& k, const std::string& v) {
      m[k] = v;
      if (seen.insert(k).second) order.push_back(k);
    };
    if (const json* fp = firstHostFingerprint(r)) {
      for (auto& [k, v] : flattenForComparison(*fp)) put(k, jsonText(v));
      if (fp->contains("env") && (*fp)["env"].is_object())
        for (auto& [k, v] : (*fp)["env"].items())
          if (k.rfind("NCCL_", 0) == 0) put("env." + k, jsonText(v));
    }
    if (const json* c = at(r.runJson, {"config"}); c && c->is_object())
      for (auto& [k, v] : c->items())
        if (!v.is_object()) put("config." + k, jsonText(v));
    if (r.runJson.is_object()) put("nodes x ranks", str(r.runJson, {"fingerprint", "nhosts"}) + " x " + str(r.runJson, {"fingerprint", "nranks"}));
    flat.push_back(std::move(m));
  }
  std::string rows;
  for (const auto& k : order) {
    std::set<std::string> distinct;
    for (const auto& m : flat) distinct.insert(m.count(k) ? m.at(k) : "(absent)");
    if (distinct.size() < 2) continue;
    rows += "<tr><td>" + esc(k) + "</td>";
    for (const auto& m : flat) rows += "<td>" + esc(m.count(k) ? m.at(k) : "(absent)") + "</td>";
    rows += "</tr>\n";
  }
  h += "<h3>Between runs</h3>\n<p class='def'>First host of each run: the compared fingerprint keys, NCCL_* "
       "environment variables and the run's settings; only keys whose values differ.</p>\n";
  if (rows.empty()) return h + "<p>None: the runs were measured on identical machines with the same settings.</p>\n";
  h += "<table><tr><th>key</th>";
  for (const auto& r : runs) h += "<th>" + esc(r.label) + "</th>";
  return h + "</tr>\n" + rows + "</table>\n";
}

constexpr const char* kStyle = R"(
body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; font-size: 14px; color: #1a1a1a; margin: 24px auto; max-width: 1280px; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 18px; border-bottom: 2px solid #1f4e79; padding-bottom: 3px; margin-top: 28px; color: #1f4e79; }
h3 { font-size: 15px; margin: 16px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border: 1px solid #c8c8c8; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #eef2f7; }
table.num td { text-align: right; font-variant-numeric: tabular-nums; }
td.ok { color: #116611; font-weight: bold; }
td.bad, .bad { color: #b00020; font-weight: bold; }
td.warn, .warn { color: #9a5b00; }
.sub { color: #555; font-size: 12px; }
.def, .note { color: #444; font-size: 13px; max-width: 1100px; }
.note { background: #fff6e0; border-left: 4px solid #e0a000; padding: 6px 10px; }
code { font-size: 12px; word-break: break-all; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; flex: 1 1 600px; max-width: 900px; }
figure svg { width: 100%; height: auto; }
nav a { margin-right: 14px; }
footer { margin-top: 30px; color: #666; font-size: 12px; }
@media print { .plots { display: block; } figure { page-break-inside: avoid; } }
)";

}  // namespace

HtmlReport renderHtmlReport(const HtmlInputs& in) {
  HtmlReport rep;
  bool multi = in.runs.size() > 1;
  std::vector<Series> all;
  for (const auto& r : in.runs) {
    auto s = groupSeries(r.rows, multi ? r.label : "");
    all.insert(all.end(), s.begin(), s.end());
  }
  std::string title = "fabricbench report: ";
  for (std::size_t i = 0; i < in.runs.size(); ++i) title += (i ? ", " : "") + in.runs[i].label;
  std::string h = "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n<title>" + esc(title) +
                  "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  h += "<h1>" + esc(title) + "</h1>\n";
  std::size_t rows = 0;
  for (const auto& r : in.runs) rows += r.rows.size();
  h += fmt::format("<p class='sub'>{} run(s), {} series, {} rows. Figures are medians over timed batches, per operation; "
                   "busbw as nccl-tests defines it.</p>\n",
                   in.runs.size(), all.size(), rows);
  h += "<nav><a href='#summary'>Verdict</a><a href='#plots'>Plots</a><a href='#runs'>Runs</a>"
       "<a href='#fingerprint'>Fingerprints</a><a href='#model'>Model</a><a href='#acceptance'>Acceptance</a></nav>\n";
  h += summarySection(in.runs, all, multi);
  h += plotsSection(all, in, rep.notes);
  h += runsSection(in.runs);
  h += fingerprintSection(in.runs);
  h += modelSection(in, rep.notes);
  h += acceptanceSection(in, rep.notes);
  h += "<footer>Made by <code>" + esc(in.commandLine.empty() ? "fabricbench-report --html" : in.commandLine) +
       "</code>. One self-contained file: no scripts, no network references.</footer>\n</body>\n</html>\n";
  rep.html = std::move(h);
  return rep;
}

}  // namespace fb

// The HTML report's sections read from files beside the runs (html_files.h): fabricbench-model's
// CSV outputs and acceptance.json, each read tolerantly.
#include "report/html_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/stats.h"
#include "report/csv.h"

namespace fb::html {
namespace fs = std::filesystem;
using nlohmann::json;
namespace {

// ---- the model ----

int col(const std::vector<std::string>& header, const std::string& name) {
  auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

std::string tableOf(const std::vector<std::vector<std::string>>& rows, const std::vector<std::string>& want,
                    std::size_t maxRows, const std::string& file) {
  const auto& header = rows[0];
  std::vector<int> idx;
  for (const auto& w : want)
    if (int c = col(header, w); c >= 0) idx.push_back(c);
  if (idx.empty())
    for (std::size_t c = 0; c < header.size() && c < 12; ++c) idx.push_back(static_cast<int>(c));
  std::string h = "<table class='num'><tr>";
  for (int c : idx) h += "<th>" + esc(header[c]) + "</th>";
  h += "</tr>\n";
  for (std::size_t i = 1; i < rows.size() && i <= maxRows; ++i) {
    h += "<tr>";
    for (int c : idx) h += "<td>" + esc(c < static_cast<int>(rows[i].size()) ? rows[i][c] : "") + "</td>";
    h += "</tr>\n";
  }
  h += "</table>\n";
  if (rows.size() - 1 > maxRows)
    h += fmt::format("<p class='sub'>First {} of {} rows; the rest are in {}.</p>\n", maxRows, rows.size() - 1, esc(file));
  return h;
}

std::string modelFile(const std::string& path, std::vector<std::string>& notes) {
  std::string h = fmt::format("<h3>{}</h3>\n", esc(path));
  std::vector<std::vector<std::string>> rows;
  try {
    rows = readCsvTable(path);
  } catch (const std::exception& e) {
    notes.push_back("model file absent or unreadable: " + path);
    return h + "<p class='warn'>absent or unreadable: " + esc(e.what()) + "</p>\n";
  }
  if (rows.size() < 2) return h + "<p class='warn'>no rows (an empty or header-only file)</p>\n";
  const auto& hd = rows[0];
  if (col(hd, "measured_us") >= 0 && col(hd, "predicted_us") >= 0) {
    // Measured against projected.
    int e = col(hd, "err_pct"), b = col(hd, "in_band");
    std::vector<double> errs;
    std::size_t inBand = 0, n = rows.size() - 1;
    for (std::size_t i = 1; i < rows.size(); ++i) {
      try {
        if (e >= 0 && e < static_cast<int>(rows[i].size())) errs.push_back(std::fabs(std::stod(rows[i][e])));
      } catch (...) {
      }
      if (b >= 0 && b < static_cast<int>(rows[i].size()) && rows[i][b] == "yes") ++inBand;
    }
    h += fmt::format("<p><b>Measured against projected</b>: {} points; {} within the model's band ({:.0f}%); "
                     "median |error| {}%.</p>\n",
                     n, inBand, n ? 100.0 * static_cast<double>(inBand) / static_cast<double>(n) : 0.0,
                     errs.empty() ? "—" : num(median(errs), 1));
    return h + tableOf(rows, {"check_run", "coll", "impl", "nodes", "ranks_per_node", "size_bytes", "algo", "measured_us",
                              "predicted_us", "err_pct", "in_band"}, 40, path);
  }
  if (col(hd, "step_ms") >= 0) {
    h += "<p><b>Training-step projection</b> (user-supplied prices where shown).</p>\n";
    return h + tableOf(rows, {"fabric", "nodes", "gpus_per_node", "params", "algo", "comm_ms", "exposed_ms", "step_ms",
                              "cost_total_usd", "usd_per_GBps_busbw"}, 40, path);
  }
  if (col(hd, "time_us") >= 0 && col(hd, "nodes") >= 0) {
    h += "<p><b>Projected collective times</b> (fabricbench-model).</p>\n";
    return h + tableOf(rows, {"fabric", "coll", "nodes", "ranks", "size_bytes", "algo", "time_us", "busbw_GBps",
                              "inter_input"}, 40, path);
  }
  return h + "<p class='sub'>Columns not recognised; shown as they are.</p>\n" + tableOf(rows, {}, 30, path);
}

}  // namespace

std::string modelSection(const HtmlInputs& in, std::vector<std::string>& notes) {
  std::string h = "<h2 id='model'>Model: projections, measured against projected</h2>\n";
  std::vector<std::string> files;
  for (const auto& m : in.modelFiles) {
    std::error_code ec;
    if (fs::is_directory(m, ec)) {
      bool any = false;
      for (const char* f : {"validation.csv", "projected.csv", "training.csv"})
        if (fs::exists(fs::path(m) / f)) files.push_back((fs::path(m) / f).string()), any = true;
      if (!any) files.push_back((fs::path(m) / "projected.csv").string());  // reported absent
    } else {
      files.push_back(m);
    }
  }
  if (files.empty()) return h + "<p class='sub'>absent: no model file given (--model projected.csv, validation.csv, "
                                "training.csv or their folder).</p>\n";
  for (const auto& f : files) h += modelFile(f, notes);
  return h;
}

namespace {

// ---- acceptance ----

std::string acceptanceFile(const std::string& path, std::vector<std::string>& notes) {
  std::string h = fmt::format("<h3>{}</h3>\n", esc(path));
  json j;
  try {
    std::ifstream f(path);
    if (!f) throw Error("cannot read the file");
    j = json::parse(f);
  } catch (const std::exception& e) {
    notes.push_back("acceptance file absent or unreadable: " + path);
    return h + "<p class='warn'>absent or unreadable: " + esc(e.what()) + "</p>\n";
  }
  if (!j.is_object()) return h + "<p class='sub'>Not an object; shown as it is:</p><pre>" + esc(j.dump(2)) + "</pre>\n";
  // Scalars first (verdict, status, ok, ...), then each array of objects as a table.
  std::string scalars;
  for (auto& [k, v] : j.items())
    if (!v.is_object() && !v.is_array()) {
      std::string cls;
      std::string t = jsonText(v);
      if (k == "ok" || k == "passed" || k == "verdict" || k == "status")
        cls = (t == "true" || t == "pass" || t == "passed" || t == "ok") ? "ok" : (t == "false" || t.rfind("fail", 0) == 0) ? "bad" : "";
      scalars += fmt::format("<tr><th>{}</th><td class='{}'>{}</td></tr>\n", esc(k), cls, esc(t));
    }
  if (!scalars.empty()) h += "<table>" + scalars + "</table>\n";
  for (auto& [k, v] : j.items()) {
    if (!v.is_array() || v.empty()) continue;
    std::vector<std::string> keys;
    for (const auto& x : v)
      if (x.is_object())
        for (auto& [kk, vv] : x.items())
          if (std::find(keys.begin(), keys.end(), kk) == keys.end()) keys.push_back(kk);
    h += "<h4>" + esc(k) + "</h4>\n";
    if (keys.empty()) {
      h += "<p>" + esc(jsonText(v)) + "</p>\n";
      continue;
    }
    h += "<table><tr>";
    for (const auto& kk : keys) h += "<th>" + esc(kk) + "</th>";
    h += "</tr>\n";
    for (const auto& x : v) {
      h += "<tr>";
      for (const auto& kk : keys) {
        std::string t = x.is_object() && x.contains(kk) ? jsonText(x[kk]) : "";
        std::string cls = t == "pass" || t == "passed" || t == "ok" || t == "true" ? "ok"
                          : t == "fail" || t == "failed" || t == "false"          ? "bad"
                                                                                  : "";
        h += fmt::format("<td class='{}'>{}</td>", cls, esc(t));
      }
      h += "</tr>\n";
    }
    h += "</table>\n";
  }
  return h;
}

}  // namespace

std::string acceptanceSection(const HtmlInputs& in, std::vector<std::string>& notes) {
  std::string h = "<h2 id='acceptance'>Acceptance</h2>\n";
  std::vector<std::string> files = in.acceptanceFiles;
  for (const auto& r : in.runs) {
    std::error_code ec;
    auto p = fs::path(r.dir) / "acceptance.json";
    if (!r.dir.empty() && fs::exists(p, ec) &&
        std::find(files.begin(), files.end(), p.string()) == files.end())
      files.push_back(p.string());
  }
  if (files.empty()) return h + "<p class='sub'>absent: no acceptance.json in the run folders and none given (--acceptance FILE).</p>\n";
  for (const auto& f : files) h += acceptanceFile(f, notes);
  return h;
}

}  // namespace fb::html

// fabricbench-report: reads one or more results/<run-id>/ folders (table.csv + run.json), or
// nccl-tests logs and perftest output (as series beside our runs), and writes comparison.md (paths side by side, ratios to a baseline, optional GB/s per $1000) and
// gnuplot plots (busbw vs size, time vs size). Exit codes: 0 done, 1 a plot failed, 2 bad input.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "report/columns.h"
#include "report/html.h"
#include "report/import.h"
#include "report/plot.h"
#include "report/result_sink.h"
#include "report/summary.h"

namespace fs = std::filesystem;

namespace {

struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A run folder, a table.csv, or another tool's log (nccl-tests, perftest): report/import.h.
fb::RunData loadRun(const std::string& arg) {
  try {
    return fb::loadRunAny(arg);
  } catch (const fb::InputError& e) {
    throw BadInput(e.what());
  }
}

std::string str(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

fb::RunMeta metaFromJson(const nlohmann::json& j, const std::string& dir) {
  fb::RunMeta m;
  m.runId = str(j, "run_id");
  m.resultDir = dir;
  m.commandLine = str(j, "command_line");
  m.fingerprint = j.value("fingerprint", nlohmann::json());
  m.config = j.value("config", nlohmann::json());
  return m;
}

fb::RunSummary summaryFromJson(const nlohmann::json& j) {
  fb::RunSummary s;
  nlohmann::json sm = j.contains("summary") ? j["summary"] : nlohmann::json::object();
  s.ok = sm.is_object() && sm.contains("ok") && sm["ok"].is_boolean() && sm["ok"].get<bool>();
  s.status = str(sm, "status");
  if (sm.contains("notes") && sm["notes"].is_array())
    for (auto& n : sm["notes"]) s.notes.push_back(n.is_string() ? n.get<std::string>() : n.dump());
  if (j.contains("finished") && j["finished"].is_boolean() && !j["finished"].get<bool>()) {
    s.ok = false;
    s.notes.push_back("run.json says the run did not finish (killed or still running): rows are those finished");
  }
  return s;
}

int run(int argc, char** argv) {
  CLI::App app{
      "fabricbench-report: side-by-side tables (paths as columns, busbw per size, ratios to a baseline) and "
      "gnuplot plots from one or more results/<run-id>/ folders"};
  std::vector<std::string> inputs;
  std::string out, baseline;
  std::vector<std::string> prices;
  bool noPlots = false, noReportUpdate = false;
  std::string html;
  std::vector<std::string> modelFiles, acceptanceFiles;
  bool columns = false;
  app.add_option("runs", inputs, "run folders (table.csv + run.json) or table.csv files (required)");
  app.add_flag("--columns", columns, "print doc/columns.md (what each table.csv column holds) and exit");
  app.add_option("-o,--out", out,
                 "folder for comparison.md and plots/ (default: the run folder when one run is given, "
                 "else <parent>/compare-<run>-<run>...)");
  app.add_option("--baseline", baseline,
                 "series to divide by: its label as shown, 'impl/path' ('run:impl/path' across runs), the path, "
                 "the impl name, or a part of the label; the most exact kind of match decides, and a pattern "
                 "that names more than one path is refused, listing them");
  app.add_option("--price", prices,
                 "SERIES=USD_per_port (user input, repeatable): adds plateau GB/s per $1000, labelled as such");
  app.add_flag("--no-plots", noPlots, "do not run gnuplot");
  app.add_flag("--no-report-update", noReportUpdate,
               "with one run folder, leave its report.md alone (default: rewrite it with plot links)");
  app.add_option("--html", html,
                 "write one self-contained HTML page (verdict per path x collective, inline SVG plots, runs, "
                 "fingerprint differences, model, acceptance) to this file, and nothing else");
  app.add_option("--model", modelFiles,
                 "with --html: fabricbench-model output (projected.csv, validation.csv, training.csv, or their folder)");
  app.add_option("--acceptance", acceptanceFiles,
                 "with --html: acceptance.json (each run folder's own acceptance.json is read too)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "fabricbench-report: %s (see --help)\n", e.what());
    return 2;
  }
  if (columns) {
    std::fputs(fb::columnsMarkdown().c_str(), stdout);
    return 0;
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "fabricbench-report: runs is required: name at least one run folder or table.csv (see --help)\n");
    return 2;
  }

  std::vector<fb::RunData> runs;
  std::set<std::string> labels;
  for (const auto& in : inputs) {
    auto r = loadRun(in);
    std::string l = r.label;
    for (int k = 2; labels.count(r.label); ++k) r.label = fmt::format("{}#{}", l, k);
    labels.insert(r.label);
    runs.push_back(std::move(r));
  }

  fb::CompareOptions opt;
  opt.baseline = baseline;
  for (const auto& p : prices) {
    auto eq = p.rfind('=');
    if (eq == std::string::npos || eq == 0) throw BadInput(fmt::format("--price '{}': expected SERIES=USD_per_port", p));
    std::string num = p.substr(eq + 1);
    double usd = 0;
    try {
      std::size_t pos = 0;
      usd = std::stod(num, &pos);
      if (pos != num.size()) throw std::invalid_argument("trailing");
    } catch (...) {
      throw BadInput(fmt::format("--price '{}': '{}' is not a number of US dollars", p, num));
    }
    if (!(usd > 0)) throw BadInput(fmt::format("--price '{}': the price must be > 0", p));
    opt.priceUsd[p.substr(0, eq)] = usd;
  }

  bool multi = runs.size() > 1;
  std::vector<fb::Series> all;
  for (const auto& r : runs) {
    auto s = fb::groupSeries(r.rows, multi ? r.label : "");
    all.insert(all.end(), s.begin(), s.end());
  }
  // A baseline must name one path; a price may apply to several (every run's tcp).
  auto mustMatch = [&](const std::string& pattern, const char* what, bool unique) {
    auto cands = fb::patternCandidates(all, pattern);
    if (cands.size() == 1 || (!unique && !cands.empty())) return;
    if (cands.size() > 1) {
      std::string list;
      for (const auto& c : cands) list += "\n  '" + c + "'";
      throw BadInput(fmt::format("{} '{}' is ambiguous: it names {} paths; give one of them:{}", what, pattern,
                                 cands.size(), list));
    }
    std::string avail;
    std::set<std::string> seen;
    for (const auto& s : all)
      if (seen.insert(s.implPath()).second) avail += "\n  " + s.label() + "   (or '" + s.implPath() + "')";
    throw BadInput(fmt::format("{} '{}' matches no series; the series are:{}", what, pattern, avail));
  };
  if (!baseline.empty()) mustMatch(baseline, "--baseline", true);
  for (auto& [pat, usd] : opt.priceUsd) mustMatch(pat, "--price", false);

  if (!html.empty()) {
    {
      fb::HtmlInputs hin;
      hin.runs = runs;
      hin.modelFiles = modelFiles;
      hin.acceptanceFiles = acceptanceFiles;
      hin.plots = !noPlots;
      std::string cl = "fabricbench-report";
      for (int i = 1; i < argc; ++i) cl += std::string(" ") + argv[i];
      hin.commandLine = cl;
      auto rep = fb::renderHtmlReport(hin);
      auto parent = fs::path(html).parent_path();
      if (!parent.empty()) fs::create_directories(parent);
      fb::writeFileAtomic(html, rep.html);
      for (const auto& n : rep.notes) std::printf("note: %s\n", n.c_str());
      std::printf("wrote %s\n", html.c_str());
    }
    return 0;
  }
  if (!modelFiles.empty() || !acceptanceFiles.empty()) throw BadInput("--model and --acceptance go with --html");

  if (out.empty()) {
    if (!multi) {
      out = runs[0].dir;
    } else {
      std::string name = "compare";
      for (auto& r : runs) name += "-" + r.label;
      if (name.size() > 120) name = name.substr(0, 120);
      for (char& c : name)
        if (c == '/' || c == ' ' || c == ':') c = '_';
      out = (fs::path(runs[0].dir).parent_path() / name).string();
    }
  }
  fs::create_directories(out);

  int rc = 0;
  if (noPlots) {
    std::printf("plots: not made (--no-plots)\n");
  } else {
    auto pr = fb::writePlots(all, out);
    if (!pr.skipped.empty()) std::printf("plots skipped: %s\n", pr.skipped.c_str());
    for (auto& f : pr.files) std::printf("wrote %s\n", f.c_str());
    for (auto& e : pr.errors) {
      std::fprintf(stderr, "fabricbench-report: plot failed: %s\n", e.c_str());
      rc = 1;
    }
  }
  std::string cmp = (fs::path(out) / "comparison.md").string();
  fb::writeFileAtomic(cmp, fb::renderComparison(runs, opt, out));
  std::printf("wrote %s\n", cmp.c_str());

  if (!multi && !noReportUpdate && fs::equivalent(fs::path(out), fs::path(runs[0].dir))) {
    if (runs[0].runJson.is_object()) {
      std::string rep = (fs::path(out) / "report.md").string();
      fb::writeFileAtomic(rep, fb::renderRunReport(metaFromJson(runs[0].runJson, out), runs[0].rows,
                                                   summaryFromJson(runs[0].runJson), out));
      std::printf("wrote %s (regenerated from table.csv + run.json, with plot links)\n", rep.c_str());
    } else {
      std::printf("report.md not regenerated: no readable run.json\n");
    }
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  fb::setProgramName("fabricbench-report");  // lib/'s warnings (a run folder without run.json) carry it
  try {
    return run(argc, argv);
  } catch (const BadInput& e) {
    std::fprintf(stderr, "fabricbench-report: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabricbench-report: error: %s\n", e.what());
    return 1;
  }
}

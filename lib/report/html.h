// The one-page HTML report (fabricbench-report --html): one self-contained file a decision-maker
// can forward. No network references: styles are inline, plots are inline SVG (gnuplot's svg
// terminal; without gnuplot the figures come as tables and the page says plots need gnuplot).
//
// Sections: the verdict per path x collective (plateau busbw, % of line rate where the nominal rate
// is known, the small-message floor, rows checked), plots per collective, the runs (status,
// command, machine), the fingerprint differences between runs (and between the hosts of a run),
// the model (projections, and measured against projected) and acceptance. Model and acceptance
// files are read tolerantly: a file that is missing or not understood is reported as such, never
// an error.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "report/csv.h"
#include "report/summary.h"

namespace fb {

struct HtmlInputs {
  std::vector<RunData> runs;
  // fabricbench-model outputs: projected.csv, validation.csv, training.csv, or a folder holding
  // them. Each is summarised by its columns (projections; measured vs predicted).
  std::vector<std::string> modelFiles;
  // acceptance.json files; each run folder's own acceptance.json is read as well when present.
  std::vector<std::string> acceptanceFiles;
  std::string commandLine;  // shown at the foot of the page
  bool plots = true;        // false: tables instead of plots (--no-plots)
  std::chrono::milliseconds plotTimeout = std::chrono::milliseconds(60000);
};

struct HtmlReport {
  std::string html;
  std::vector<std::string> notes;  // one line each: plots skipped, files absent or unreadable
};

HtmlReport renderHtmlReport(const HtmlInputs& in);

// Text for HTML element content and attribute values (& < > " ').
std::string htmlEscape(const std::string& s);

}  // namespace fb

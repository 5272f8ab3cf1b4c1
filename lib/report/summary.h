// Honest summaries and side-by-side tables in Markdown, shared by report.md (one run) and the
// report tool (several runs). The statistics they show are in series.h (definitions there); the
// fingerprint section is renderFingerprintMarkdown (fingerprint.h).
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sample.h"
#include "report/result_sink.h"
#include "report/series.h"

namespace fb {

constexpr std::size_t kTimeTableMaxBytes = 65536;   // report's time table: sizes <= 64 KiB

// One run's report.md. `outDir` is where report.md goes: plots found in outDir/plots/ are linked.
std::string renderRunReport(const RunMeta& meta, const std::vector<Sample>& rows, const RunSummary& summary,
                            const std::string& outDir);

struct RunData {
  std::string label;     // run id (run.json) or the folder name
  std::string dir;
  nlohmann::json runJson;  // may be null when run.json is missing
  std::vector<Sample> rows;
};

// The first host's fingerprint in a run.json (fingerprint.hosts[0].fingerprint; an imported nccl-tests log
// gets hosts from its '#  Rank' lines); null when there is none.
const nlohmann::json* firstHostFingerprint(const RunData& r);

struct CompareOptions {
  std::string baseline;                      // series pattern (see seriesMatches); "" = none
  std::map<std::string, double> priceUsd;    // series pattern -> user-supplied USD per port
};

// The report tool's comparison page: per collective (and dtype) a busbw-by-size table with one
// column per series, ratios to the baseline, a time table for small sizes, plateau/floor per
// series, and the GB/s per $1000 column when prices are given. Plots in outDir/plots/ are linked.
std::string renderComparison(const std::vector<RunData>& runs, const CompareOptions& opt,
                             const std::string& outDir);

// The name plot files use for one collective/dtype group: "allreduce_float32".
std::string groupId(const std::string& coll, const std::string& dtype);

}  // namespace fb

// Where rows go. Rank 0 gets real sinks; other ranks get none. Every format is fed from the
// same Sample. Rows are written as they are measured (append + flush), so a killed run keeps
// every finished row; files that are written whole (run.json, report.md) are replaced
// atomically (write to a temp file, then rename).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sample.h"

namespace fb {

struct RunMeta {
  std::string runId;
  std::string resultDir;          // results/<run-id>; empty = write no files
  std::string commandLine;
  nlohmann::json fingerprint;     // see report/fingerprint.h
  nlohmann::json config;          // the parsed options
};

struct RunSummary {
  bool ok = true;                 // false when any row had wrong > 0 or the run failed
  std::string status;             // "passed", "failed: 3 wrong elements", "aborted: ..."
  std::vector<std::string> notes; // skipped backends with reasons, warnings
};

class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual void begin(const RunMeta& meta) = 0;
  virtual void add(const Sample& s) = 0;
  virtual void end(const RunSummary& summary) = 0;
};

// Live console table on stdout: one line per row as it finishes; the header says what the
// time means (max over ranks, per operation) and the units.
std::unique_ptr<ResultSink> makeConsoleSink();
// results/<run-id>/table.csv: header line, then one flushed line per row.
std::unique_ptr<ResultSink> makeCsvSink(const std::string& path);
// results/<run-id>/run.json: fingerprint + config + rows + summary (atomic rewrite at begin and end).
std::unique_ptr<ResultSink> makeJsonSink(const std::string& path);
// results/<run-id>/report.md: human summary, paths side by side, plateau/floor (atomic, at end).
std::unique_ptr<ResultSink> makeMarkdownSink(const std::string& path);

// CSV column order (units in the header). Kept here so readers and tests share it.
std::vector<std::string> csvColumns();
std::string csvLine(const Sample& s);
// Parse table.csv back (tests, the report tool). Throws fb::Error on a malformed line.
std::vector<Sample> readCsv(const std::string& path);

// Write `content` to `path` atomically (temp file in the same folder + fsync + rename).
void writeFileAtomic(const std::string& path, const std::string& content);

}  // namespace fb

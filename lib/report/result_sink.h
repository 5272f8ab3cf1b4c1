// Where rows go. Rank 0 gets real sinks; other ranks get none. Every format is fed from the
// same Sample. Rows are written as they are measured (append + flush), so a killed run keeps
// every finished row; files that are written whole (run.json, report.md) are replaced
// atomically (write to a temp file, then rename).
#pragma once
#include <cstdio>
#include <memory>
#include <set>
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
  // --resume: the rows an earlier run of this run id already measured. They stay in table.csv
  // (appended to, not rewritten), run.json and report.md, and are not measured again.
  std::vector<Sample> previousRows;
};

struct RunSummary {
  bool ok = true;                 // false when any row had wrong > 0, the run failed or was partial
  std::string status;             // "passed: ...", "partial: ...", "failed: 3 wrong elements", "aborted: ..."
  std::vector<std::string> notes; // skipped backends with reasons, warnings
  int exitCode = -1;              // the process's exit code (report/verdict.h); -1 = not decided
  std::vector<std::string> measured;  // backend labels with rows
  std::vector<std::string> skipped;   // "label: why"
};

class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual void begin(const RunMeta& meta) = 0;
  virtual void add(const Sample& s) = 0;
  virtual void end(const RunSummary& summary) = 0;
  // Print what is held back (the console holds out-of-place rows for their in-place partners);
  // called before other text goes to the same stream (notes, the status line).
  virtual void flush() {}
};

// Live console table on stdout: one line per row as it finishes; the header says what the
// time means (median of the batches, per operation, combined over ranks as the row says) and the units.
// At the end, after the status, a headline per path: plateau busbw and floor time (the last lines
// of the console).
std::unique_ptr<ResultSink> makeConsoleSink();
// results/<run-id>/table.csv: header line, then one flushed line per row.
std::unique_ptr<ResultSink> makeCsvSink(const std::string& path);
// results/<run-id>/run.json: fingerprint + config + rows + summary. Rewritten atomically at
// begin() (no rows, status "running"), after EVERY add() (so a killed run leaves a valid file
// holding every finished row, status still "running") and at end() (final status).
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
// false: writeFileAtomic leaves out the fsyncs (the rename is still atomic for every reader).
// For a signal handler that must finish before the launcher's SIGKILL: on a busy disk one
// fsync can take longer than mpirun's 1 s.
void setDurableWrites(bool on);
// For an abrupt exit (the signal thread's _Exit): remove writeFileAtomic's named temporaries not yet renamed and
// hold them so that no further one is named before the process ends (gives up after 200 ms if a writer is stuck in
// a link or rename).
void dropTemporariesForExit();

// ---- additions (report helper) ----

// How the console table looks. Default: rows fit kConsoleWidth columns, the path is printed once
// per group, and the collectives in `paired` (measured out-of-place and in-place) show both
// placements side by side in one row, as nccl-tests does: their out-of-place rows are held until
// the in-place row of the same size comes (the sweep measures all out-of-place sizes first).
// wide (--wide): one row per placement with every column, each printed as it finishes.
constexpr std::size_t kConsoleWidth = 120;
struct ConsoleOptions {
  bool wide = false;
  std::set<std::string> paired;  // collective names ("allreduce") measured both ways in this run
};
// Console table on any stream (tests pass a temporary file).
std::unique_ptr<ResultSink> makeConsoleSink(std::FILE* out);
std::unique_ptr<ResultSink> makeConsoleSink(std::FILE* out, const ConsoleOptions& opt);
// The headline lines the console ends with, one per series (collective, dtype, path, placement):
// "#   allreduce float32 tcp/lo [out]  plateau busbw 3.210 GB/s (16 MiB … 64 MiB), floor 12.30 us (8 B)";
// "rising, no plateau: busbw 2.100 GB/s at 64 KiB (+40% from 32 KiB)" where the largest size's busbw
// is more than kPlateauRise above the one before (plateauWarning). maxWidth > 0: a line wider than
// that puts its label on a line of its own.
std::string consoleHeadline(const std::vector<Sample>& rows, std::size_t maxWidth = 0);
// "# text\n" ("#" + indent spaces + " text"), broken at spaces into lines of at most maxWidth
// columns (0 = one line), the continuation lines indented two more: the run's notes and status
// in the default console layout.
std::string consoleComment(const std::string& text, std::size_t maxWidth, std::size_t indent = 0);
// Forwards begin/add/end to each sink in order (null entries are ignored).
std::unique_ptr<ResultSink> makeTeeSink(std::vector<std::unique_ptr<ResultSink>> sinks);
// Rank 0's usual set: the console table (when `console`), and when resultDir is not empty
// resultDir/table.csv, resultDir/run.json and resultDir/report.md. The folder is created at
// begin(), so a run rejected before begin() leaves nothing behind.
std::unique_ptr<ResultSink> makeRunSinks(const std::string& resultDir, bool console = true);

// The same parser as readCsv on text in memory; `source` names it in error messages.
std::vector<Sample> parseCsv(const std::string& text, const std::string& source);
// Extras as one CSV column: key=value;key=value with '\\', ';' and '=' escaped by a backslash.
std::string encodeExtras(const std::vector<std::pair<std::string, std::string>>& extra);
std::vector<std::pair<std::string, std::string>> decodeExtras(const std::string& text);

// One row as run.json writes it (same names as the CSV columns; wrong and pct_nominal are null
// when unknown), and back.
nlohmann::json sampleToJson(const Sample& s);
Sample sampleFromJson(const nlohmann::json& j);
// The whole run.json document (what the JSON sink writes).
nlohmann::json runJson(const RunMeta& meta, const std::vector<Sample>& rows, const RunSummary& summary,
                       bool finished);

}  // namespace fb

// The run's rows and where they go: one RunRecorder per run. Rank 0 holds the sinks: the console
// table, and the result files (table.csv, run.json, report.md in results/<run-id>/). The signal
// thread may end the run at any time, so every call takes the lock. When writing a result file
// fails (disk full, folder gone), the files stop (the last good run.json stays, a marker
// WRITING-STOPPED.txt says why when it can be written) and the run stops at the end of the row,
// on every rank (stopRequested() is agreed per row). --resume and checkpoints (SIGCONT) are here.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/gbench_flags.h"
#include "app/progress.h"
#include "bootstrap/bootstrap.h"
#include "core/error.h"
#include "report/result_sink.h"

namespace fb {

struct Options;
struct RunPlan;
struct RunnerConfig;

// The run stops on every rank (agreed at the end of a row): rank 0 could not write its files.
class RunStopped : public Error {
  using Error::Error;
};

// What identifies a row for --resume: the same collective, implementation, dtype, placement
// and size.
std::string rowKey(std::string_view coll, std::string_view impl, std::string_view dtype, bool inPlace,
                   std::size_t bytes);

// The run's identity, the same on every rank: its id and, with --resume, the earlier run's rows.
struct ClaimedRun {
  std::string runId;
  std::vector<Sample> previousRows;  // rank 0 only (the others know their keys)
  std::set<std::string> done;        // rowKey()s of the earlier rows
};

// Where a run's folder goes: <resultsDir>/<runId>, the default id with `suffix` appended
// ("peer", "verbs": the tools that have no --resume or --overwrite) when runId is empty.
struct FolderRequest {
  std::string resultsDir = "results", runId, suffix;
  bool writeFiles = true, resume = false, overwrite = false;
};
FolderRequest folderRequest(const Options& o);
// Built member by member: g++ 13 (the GPU host's) crashes on this struct's designated initializers.
FolderRequest folderRequest(std::string resultsDir, std::string runId, std::string suffix, bool writeFiles);

// The claim on the process that writes: the default id is claimed (never an earlier run's
// folder); a given id whose folder exists is refused unless resumed or overwritten; --resume
// reads the rows the earlier run left. ConfigError when that fails.
ClaimedRun claimRunHere(const FolderRequest& f, const std::string& host);
// Rank 0 claims; every rank learns the outcome. Throws ConfigError on every rank when that fails.
ClaimedRun claimRun(Bootstrap& bs, const FolderRequest& f);
ClaimedRun claimRun(Bootstrap& bs, const Options& o);

// The settings that make rows comparable: --resume keeps an earlier run's rows only when the run
// measured them the same way (run.json's "config" holds these keys).
nlohmann::json measurementConfig(const Options& o);
// --resume into a run measured another way would mix incomparable rows in one table: refused,
// naming the first setting that differs (ConfigError).
void checkResumable(const Options& o, const std::filesystem::path& dir);
// Checks only rank 0 can make (it owns the files), before any communication of data.
void preflight(const Options& o);
// What "time" means in this run, for run.json.
std::string timeDefinition(const RunnerConfig& r);

struct RunRecorder {
  std::timed_mutex mu;
  std::unique_ptr<ResultSink> console;
  std::unique_ptr<ResultSink> csv, json, md;  // result files (rank 0, unless --no-files)
  std::string resultDir;
  bool begun = false, ended = false;
  std::string writeError;
  std::int64_t rows = 0, badRows = 0, wrongTotal = 0;
  std::int64_t checkpointedRows = -1;  // rows when a checkpoint last wrote the files; -1 once a row is written since
  std::vector<std::string> notes;
  std::vector<NamedSample> named;  // for Google Benchmark's JSON/CSV (rank 0, only when asked for)
  bool keepNamed = false;
  Progress* progress = nullptr;
  std::unique_ptr<Progress> ownProgress;
  std::FILE* gbConsoleFile = nullptr;  // --benchmark_out with --benchmark_out_format=console
  std::vector<std::string> measured;                          // backend labels with rows, in order
  std::vector<std::pair<std::string, std::string>> skipped;   // backend label, why
  std::vector<std::pair<std::string, std::string>> declined;  // backend label, "rows: why" (verdict.h)
  std::string tool = "fabricbench";                           // starts its error lines

  // The result folder is created here, by rank 0, after every check passed, with the console
  // table (on tableOut) and the progress line; every rank learns the folder. Should that fail
  // (the disk filled up since the check), every rank throws AgreedFailure with the folder's name.
  // Returns the result folder ("" with --no-files).
  std::string begin(Bootstrap& bs, const Options& o, const ClaimedRun& run, const RunPlan& plan,
                    const std::vector<std::string>& fingerprints, const std::vector<std::string>& hosts,
                    const std::string& commandLine, std::FILE* tableOut);

  // The tools whose rank 0 writes alone and prints its own console (fabricbench-peer,
  // fabricbench-verbs): the files only, in `dir` ("" = none). meta.runId is the caller's.
  void beginFiles(const std::string& dir, RunMeta meta);

  void add(const Sample& s, const std::string& backend, const std::string& name = "");
  // The console's held rows go out before other text on its stream.
  void flushConsole();
  bool hasFiles() const { return csv != nullptr; }
  void openFiles(const std::string& dir, const RunMeta& meta);
  void dropFiles() { csv.reset(), json.reset(), md.reset(); }
  // run.json and report.md as they would be if the run ended now with `sum`, without closing
  // anything: a later row rewrites run.json as "running", the end rewrites both (SIGCONT).
  void checkpoint(RunSummary sum, std::chrono::milliseconds wait);
  bool stopRequested();
  void end(RunSummary sum);
  // For the signal thread: waits at most `wait` for a row being written, then ends anyway (each
  // file is replaced atomically, so two writers never leave a torn file). Files that a checkpoint
  // wrote with the same rows are left as they are (see the definition).
  void endSoon(RunSummary sum, std::chrono::milliseconds wait);

  // SIGCONT: rank 0 checkpoints as interrupted; SIGTERM/SIGINT/SIGHUP: rank 0 ends the files with
  // the finished rows and says so on stderr (`tool` starts the line).
  void handleSignals(Bootstrap& bs, const std::string& tool) { handleSignals(bs.rank() == 0, tool); }
  void handleSignals(bool writes, const std::string& tool);  // writes: this process holds the files
  void stopHandlingSignals();  // also done by the destructor
  ~RunRecorder();

 private:
  bool handlers_ = false;
  void endLocked(RunSummary sum);
  void stopWriting(const std::string& why, std::int64_t written);
};

}  // namespace fb

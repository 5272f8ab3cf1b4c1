// The run folder results/<run-id>/ and what every benchmark executable (fabricbench,
// fabricbench-peer, fabricbench-verbs) writes into it: table.csv, run.json (fingerprint,
// config, rows, status) and report.md, through the sinks of result_sink.h.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/result_sink.h"

namespace fb {

// The default run id: <job>.<step> under Slurm (SLURM_JOB_ID, SLURM_STEP_ID: every srun step and
// every rerun in one job gets its own folder), else UTC date-time-host; `suffix` ("peer", "verbs")
// is appended after a '-'. A name that is taken gets -2, -3 ... (claimRunDir).
std::string defaultRunId(const std::string& host, const std::string& suffix = "");

// Claims <resultsDir>/<base>, or <base>-2, <base>-3 ... when taken, and returns the name: mkdir is
// the claim, so two runs started at once never share a folder, and an earlier run's folder is
// never written to. IoError when the folder cannot be created.
std::string claimRunDir(const std::string& resultsDir, const std::string& base);

// The command line as run.json records it: arguments joined by blanks, quoted where they hold
// blanks or quotes.
std::string joinArgs(int argc, char** argv);

// run.json's "fingerprint": rank i's collectLocalFingerprint() (as JSON text) merged
// (mergeFingerprints), with the job's "ranks" and "nodes" (distinct host names).
nlohmann::json runFingerprint(const std::vector<std::string>& perRank, const std::vector<std::string>& hostnames);

// The result folder of a tool whose rank 0 writes alone, without --resume (fabricbench-peer,
// fabricbench-verbs; fabricbench itself also resumes and agrees on the folder across ranks, with
// the same functions above). Rank 0 opens it before anything is measured.
class RunFolder {
 public:
  // No files (--no-files, or a rank other than 0).
  RunFolder() = default;
  // runId empty: defaultRunId(host, suffix), claimed. runId given: ConfigError when
  // <resultsDir>/<runId> exists (choose another id), else created. IoError when it cannot be.
  RunFolder(const std::string& resultsDir, const std::string& runId, const std::string& host,
            const std::string& suffix);

  const std::string& runId() const { return runId_; }
  const std::string& dir() const { return dir_; }  // "" when no files are written
  // table.csv, run.json, report.md: begin (meta.runId and meta.resultDir are filled in), a row at
  // a time, end. Without a folder these do nothing.
  void begin(RunMeta meta);
  void add(const Sample& s);
  void end(const RunSummary& summary);

 private:
  std::string runId_, dir_;
  std::unique_ptr<ResultSink> files_;
};

}  // namespace fb

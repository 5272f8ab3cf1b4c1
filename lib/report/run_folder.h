// The run folder results/<run-id>/: its name, its claim, and what run.json records of the run
// (the command line, the fingerprint). lib/app/run_recorder.h writes the files into it (table.csv,
// run.json, report.md through the sinks of result_sink.h) for every benchmark executable.
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

}  // namespace fb

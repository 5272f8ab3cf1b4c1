// Internal to fabricbench --accept (accept_command.cc runs the phases, accept_verdicts.cc judges
// and writes): the units, one path's pair test and what every phase reads.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "accept/accept.h"
#include "app/accept_pairs.h"
#include "app/options.h"
#include "bootstrap/mpi_bootstrap.h"

namespace fb::acceptcmd {

namespace fs = std::filesystem;
using nlohmann::json;

struct Unit {
  std::string name, host;
  int rank = 0;
};

struct PathRun {
  std::string path, skipped, label;
  accept::PairMatrix m;
  std::vector<std::string> lineBasis;  // per unit
  std::vector<json> retests;
  accept::PathVerdict verdict;
};

// What every phase reads: the units, this rank's unit, the expectations and the run folder.
struct AcceptRun {
  MpiBootstrap& bs;
  Options& o;
  const std::string& commandLine;
  std::vector<Unit> units;
  int n = 0;
  int myUnit = -1;  // -1: this rank is not its node's unit
  accept::Expectations expect;
  std::string expectSha;
  std::string runId;
  fs::path dir;
};

struct PairPhase {
  std::vector<std::vector<accept::Pair>> schedule;
  std::vector<PathRun> runs;
  std::vector<double> roundMs;
  double seconds = 0;
  std::vector<std::string> unitFacts;  // per rank: its unit's counter deltas and facts (json), "" if none
};

// 4. Rank 0: the verdicts, acceptance.json, report.md, evidence.json and the closing lines; the exit code.
int judgeAndWrite(const AcceptRun& ctx, PairPhase& ph, int doctorRc, int collRc, const std::string& collNote,
                  Clock::time_point t0);

}  // namespace fb::acceptcmd

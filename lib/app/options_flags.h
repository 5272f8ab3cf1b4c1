// fabricbench's command line as registered with CLI11: every flag with its help text, in --help's
// order, bound to Options or to the raw texts that parseOptions (options.cc) validates. Internal to
// lib/app.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <utility>
#include <vector>

#include "app/options.h"
#include "core/timer_names.h"

namespace fb {

// nccl-tests flags fabricbench does not take, each with what to use instead (one line, exit 2).
struct Unsupported {
  const char* names;  // CLI11 names
  const char* what;   // the message after "nccl-tests' <flag> is not supported: "
};

// The flags' texts and what is not a field of Options, from registration to validation.
struct RawFlags {
  std::string minB = "8", maxB = "64M", stepB = "0";
  std::vector<std::string> counts;
  std::vector<std::string> colls{"all"}, transports{"auto"}, dtypes{"float32"};
  std::vector<std::string> opNames{"sum"};
  std::string placement = "both";
  int timeoutS = 45;
  int graphLaunches = -1;
  bool showVersion = false;
  std::string corrupt;
  bool reuseBuffers = false;
  std::string timer{kTimerRank};
  int average = -1;
  std::vector<std::string> required;
  std::string accBw, accLat;
  std::vector<std::string> accPaths;
  std::vector<std::pair<CLI::Option*, const Unsupported*>> unsupported;
  std::vector<std::string> unsupportedValues;  // one per Unsupported flag
};

// Registers every flag on `app` (and its footer), the backends' own through the backend table.
void registerFlags(CLI::App& app, Options& o, RawFlags& flags);

}  // namespace fb

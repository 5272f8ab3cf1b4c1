// fabricbench-verbs' measurements (see fabricbench_verbs.cc for the modes and definitions): the
// settings, rank pairs of RC queue pairs, the bw and lat loops, and the run folder.
#pragma once
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/transport.h"
#include "transport/verbs/discovery.h"
#include "transport/verbs/verbs.h"

#if defined(__x86_64__) || defined(__i386__)
#define FB_VERBS_HAVE_TSC 1
#endif

namespace fb::verbs {

struct Args {
  std::string test = "both";
  std::vector<std::string> sizes;
  int iters = 0;  // 0 = per-test default (bw 5000, lat 1000)
  int txDepth = 128;
  int cqMod = 100;
  int warmup = 0;
  bool check = true;
  bool packed = false;          // receive area right behind the send area (old layout)
#ifdef FB_VERBS_HAVE_TSC
  std::string timer = "tsc";    // tsc (rdtsc, as perftest; rate calibrated over the run) or steady
#else
  std::string timer = "steady"; // clock_gettime(CLOCK_MONOTONIC)
#endif
  int threads = 0;              // >0: ranks as threads of this process
  bool server = false;          // two processes over TCP: listen ...
  std::string peer;             // ... or connect to this host
  int port = 18520;
  int timeoutS = 120;           // control-plane waits (connect, accept, exchanges)
  std::string dump;             // lat: rank 0 writes every half round trip (us) here
  std::string resultsDir = "results";  // rank 0 writes <resultsDir>/<runId>/ (table.csv, run.json, report.md)
  std::string runId;            // "" = <job>.<step> under Slurm, else date-time-host; "-verbs" appended
  bool noFiles = false;
  TransportOptions t;
};

// The settings, checked on this rank alone: ConfigError (exit 2) or UnavailableError (77).
Selection validate(const Args& a, int ranks, std::vector<std::size_t>& sizes);

// Collective over the ranks of `bs`: agrees on the settings, opens the folder (rank 0), measures
// every pair, writes the rows. Returns the exit code (0, 1 wrong bytes, 2 bad input, 77 skipped).
int run(Bootstrap& bs, const Args& a, const char* launch, int argc, char** argv, const std::string& mpiVersion = "");

}  // namespace fb::verbs

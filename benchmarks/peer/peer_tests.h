// fabricbench-peer's tests (see peer_bench.cc for what each measures): every visible GPU of one
// node driven by one process, rows into the run folder.
#pragma once
#include <string>
#include <vector>

#include "app/run_recorder.h"

namespace fb {

struct Opts {
  std::string size = "1G";
  std::string matrixSize = "256M";
  int iters = 10;
  int warmup = 2;
  int latencyHops = 20000;
  std::vector<std::string> tests = {"ce", "sm", "bidir", "host", "reduce", "matrix", "sanity"};
  std::vector<int> gpus = {0, 1};
  bool noPeerAccess = false;
  bool injectHang = false;
  int sanityTimeoutMs = 5000;
  std::string runId;
  std::string resultsDir = "results";
  bool noFiles = false;
  bool smSweep = false;
};

struct PeerOutcome {
  int rc = 0;          // 0, or kExitNoGpu (3) when no GPU is visible
  int badRows = 0;     // rows with wrong elements
  bool sanityOk = true;  // the P2P sanity check passed on every pair it ran on
};
// Runs o.tests on o.gpus; rows go to the console and `recorder`. Throws on a CUDA failure, and
// RunStopped when the files could no longer be written.
PeerOutcome runPeerTests(const Opts& o, RunRecorder& recorder);

}  // namespace fb

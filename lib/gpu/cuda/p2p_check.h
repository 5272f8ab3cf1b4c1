// P2P sanity check: a small peer copy (copy engine and SM) under a time-out, data compared on
// the GPU, so a pair whose P2P is advertised but broken, disabled or unreachable is reported
// with a clear message instead of hanging or silently going through host memory.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace fb::cudaipc {

struct PairCheck {
  int reader = -1, owner = -1;  // GPU ordinals (local check) or ranks (bootstrap check)
  bool ok = false;
  std::string message;          // one line, what was found
  double ms = 0;                // how long the check of this pair took
};

struct P2PReport {
  bool ok = false;                // every pair passed
  int gpus = 0;                   // visible GPUs (local check) or ranks (bootstrap check)
  std::vector<PairCheck> pairs;
  std::string summary;            // one line for --list
};

struct P2PCheckOptions {
  std::chrono::milliseconds timeout{5000};  // per pair
  std::size_t bytes = 1 << 20;
  bool enablePeerAccess = true;   // false: leave peer access off (demonstrates the "not enabled" flag)
  bool injectHang = false;        // make the copy wait on a flag nobody sets (demonstrates the time-out)
};
// Options from the environment: FB_P2P_TIMEOUT_MS, FB_P2P_NO_PEER_ACCESS=1, FB_P2P_INJECT_HANG=1.
P2PCheckOptions p2pOptionsFromEnv();

// Is peer access from `reader` to `owner` enabled in this process? (Probed by disabling it and
// turning it back on.)
bool peerAccessEnabled(int reader, int owner);

// One process, every ordered pair of visible GPUs (reader GPU copies from owner GPU).
P2PReport checkLocalPairs(const P2PCheckOptions& o);
// Collective: every rank on its GPU (local rank), reading every other rank of its node through
// CUDA IPC. All ranks return the same report.
P2PReport checkRanks(Bootstrap& bs, const P2PCheckOptions& o);

}  // namespace fb::cudaipc

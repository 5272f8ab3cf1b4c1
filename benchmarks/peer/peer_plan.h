// Which GPUs fabricbench-peer uses and which of the asked-for tests it skips, decided from the
// visible GPU count before anything runs (pure: unit-tested in tests/benchmarks/test_peer_plan.cc).
// The pair tests (ce, sm, bidir, bulk) need two distinct GPUs; host, reduce, matrix and sanity
// run on one. On a host with one GPU and no --gpus, the one-GPU tests run on GPU 0 and the pair
// tests are skipped with the reason; a --gpus that names a GPU that does not exist is bad input.
#pragma once
#include <string>
#include <vector>

namespace fb::peer {

struct Plan {
  std::vector<int> gpus;                 // the pair (or GPU 0 alone)
  std::vector<std::string> skipped;      // asked-for tests that will not run
  std::string why;                       // why they are skipped ("" when none is)
  std::string error;                     // bad input (--gpus names a GPU that does not exist), else ""
};

inline bool needsPair(const std::string& t) { return t == "ce" || t == "sm" || t == "bidir" || t == "bulk"; }

// visible: GPUs CUDA sees (0: none, the run is skipped later); gpusGiven: --gpus was on the line.
inline Plan planPeer(int visible, bool gpusGiven, std::vector<int> gpus, const std::vector<std::string>& tests) {
  Plan p;
  if (visible == 1 && !gpusGiven) gpus = {0};
  if (visible > 0)
    for (int g : gpus)
      if (g < 0 || g >= visible) {
        p.error = "--gpus: GPU " + std::to_string(g) + " does not exist (" + std::to_string(visible) + " visible";
        return p;
      }
  const bool pair = gpus.size() == 2 && gpus[0] != gpus[1];
  if (visible > 0 && !pair)
    for (const auto& t : tests)
      if (needsPair(t)) p.skipped.push_back(t);
  if (!p.skipped.empty())
    p.why = visible == 1 ? "they need two GPUs, 1 visible" : "they need two distinct GPUs (--gpus a,b)";
  p.gpus = std::move(gpus);
  return p;
}

}  // namespace fb::peer

// Runner: measures one (collective implementation, shape) point and returns one Sample.
//   prepare (alloc, register, connect, fill; untimed) → all ranks agree it worked
//   → warm-up batch → barrier → timed batch of `iters` ops → max over ranks
//   → `checkRounds` verification ops, each with fresh data (wrong elements summed over ranks)
// Time is each rank's own measurement of the timed batch (host clock for host-driven rings and
// MPI, CUDA events on the stream for GPU backends), reduced with MAX over ranks, divided by
// iters: the slowest rank defines the operation time. nccl-tests averages over ranks by
// default; we report the max (its -a 3), which is what a synchronous training step sees.
// Every batch gets a deadline of `timeout`; a rank that fails throws, and the top level
// aborts the job so nobody hangs.
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "bootstrap/bootstrap.h"
#include "collectives/collective.h"
#include "core/sample.h"

namespace fb {

struct RunnerConfig {
  int warmupIters = 5;
  int iters = 20;
  int checkRounds = 1;                    // 0 = data not checked (the row says wrong = -1)
  std::chrono::milliseconds timeout{45000};
  // Test-only hook (--fb-test-corrupt RANK:INDEX): corrupt one output element in the first
  // check of every point, on that rank, so the wrong-count path is exercised end to end.
  std::optional<std::pair<int, std::size_t>> corrupt;
};

class Runner {
 public:
  Runner(Bootstrap& bootstrap, RunnerConfig config) : bs_(bootstrap), cfg_(config) {}
  Sample run(Collective& coll, const CollShape& shape);
  const RunnerConfig& config() const { return cfg_; }

 private:
  Bootstrap& bs_;
  RunnerConfig cfg_;
};

}  // namespace fb

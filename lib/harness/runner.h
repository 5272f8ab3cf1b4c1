// Runner: measures one (collective implementation, shape) point and returns one Sample.
//   prepare (alloc, register, connect, fill; untimed) → all ranks agree it worked
//   → warm-up batch → barrier → timed batch of `iters` ops → max over ranks
//   → `checkRounds` verification ops, each with fresh data (wrong elements summed over ranks)
// Time is each rank's own measurement of the timed batch (host clock for host-driven rings and
// MPI, CUDA events on the stream for GPU backends), reduced with MAX over ranks, divided by
// iters: the slowest rank defines the operation time. nccl-tests averages over ranks by
// default; we report the max (its -a 3), which is what a synchronous training step sees.
// Every batch gets a deadline: `timeout` (--timeout/-T) plus what the batch needs at a slow
// but healthy rate (batchBudget), so large sizes on slow links do not trip it while a hang at
// small sizes is still caught within about `timeout`. A rank that fails throws (a time-out
// names --timeout), and the top level aborts the job so nobody hangs.
#pragma once
#include <chrono>
#include <functional>
#include <map>
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

// A batch's deadline beyond --timeout: `ops` operations of `bytes` each at a tenth of the rate
// (bytes / time per operation) this collective reached on its previous row, or at
// kFloorRateBytesPerS before it has measured anything.
constexpr double kFloorRateBytesPerS = 10e6;
constexpr double kDeadlineSlack = 10;
std::chrono::milliseconds batchBudget(int ops, std::size_t bytes, double lastRateBytesPerS);

class Runner {
 public:
  Runner(Bootstrap& bootstrap, RunnerConfig config) : bs_(bootstrap), cfg_(config) {}
  Sample run(Collective& coll, const CollShape& shape);
  const RunnerConfig& config() const { return cfg_; }

 private:
  Bootstrap& bs_;
  RunnerConfig cfg_;
  std::map<const Collective*, double> lastRate_;  // bytes/s per operation of each collective's last row
};

// Runs `fn` on every rank; if it throws on any rank, every rank throws (the failing rank its
// own error, the others "rank R failed: ...") instead of some ranks entering a collective that
// will never complete. Used around set-up steps (transport creation, prepare).
void agreeOrThrow(Bootstrap& bs, const std::string& what, const std::function<void()>& fn);

}  // namespace fb

// Runner: measures one (collective implementation, shape) point and returns one Sample.
//   prepare (alloc, register, connect, fill; untimed) → all ranks agree it worked
//   → warm-up batch → R × (barrier → timed batch of `iters` ops → combine over ranks)
//   → [--per-op: one more batch timed op by op] → `checkRounds` verification ops, each with
//   fresh data (wrong elements summed over ranks)
// Two timers (--timer; core/timer_names.h names them):
//   rank        (default) each rank's own clock around its batch: CUDA events on its stream for
//               GPU backends (rows say rank-events), the steady clock around the batch for
//               host-driven rings and MPI (rows say rank-clock).
//   nccl-tests  nccl-tests' host clock: after the barrier, from before the first operation is
//               enqueued until the stream is synchronised (the batch returned), on every backend.
// Each batch's per-operation time (batch / iters) is combined over ranks as -a says, with
// nccl-tests' codes: 0 rank 0's time, 1 the average, 2 the minimum, 3 the maximum. The default
// is 3 (max: the slowest rank, what a synchronous training step sees) with --timer rank, and 1
// (nccl-tests' default) with --timer nccl-tests. The row holds the median of the R batches and the
// fastest / slowest one. --repeat 0 (the default) means "auto": 3 batches, fewer when the
// batches of a size have already taken kAutoRepeatBudget in total.
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
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "collectives/collective.h"
#include "core/sample.h"

namespace fb {

enum class Timer { kRank, kNcclTests };
enum class RankTime { kRank0 = 0, kAvg = 1, kMin = 2, kMax = 3 };  // nccl-tests' -a codes
std::string_view timerName(Timer t);  // the --timer value: "rank", "nccl-tests"
std::string_view rankTimeName(RankTime r);

constexpr int kAutoRepeat = 3;
constexpr std::chrono::milliseconds kAutoRepeatBudget{2000};

struct RunnerConfig {
  int warmupIters = 5;
  int iters = 20;
  Timer timer = Timer::kRank;
  RankTime rankTime = RankTime::kMax;
  int repeat = 0;      // timed batches per size; 0 = auto (kAutoRepeat, fewer for long batches)
  bool perOp = false;  // one more batch, timed op by op: p50 / p99 columns
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
  // The collective is about to be destroyed: its measured rate must not outlive it (a new one
  // could get its address).
  void forget(const Collective* coll) { lastRate_.erase(coll); }

 private:
  Bootstrap& bs_;
  RunnerConfig cfg_;
  std::map<const Collective*, double> lastRate_;  // bytes/s per operation of each collective's last row
};


}  // namespace fb

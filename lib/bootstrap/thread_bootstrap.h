// In-process bootstrap for tests: ranks are threads of one process meeting in a shared
// ThreadGroup (gloo's HashStore idea). runRanks(n, fn) starts n threads, each with its own
// ThreadBootstrap, and rethrows the first exception any rank threw.
#pragma once
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "bootstrap/bootstrap.h"

namespace fb {

class ThreadGroup;

class ThreadBootstrap : public Bootstrap {
 public:
  ThreadBootstrap(std::shared_ptr<ThreadGroup> group, int rank);
  int rank() const override { return rank_; }
  int size() const override;
  std::string hostname() const override;
  void barrier() override;
  std::vector<std::vector<std::byte>> allGather(std::span<const std::byte> mine) override;
  double allReduceMax(double v) override;
  std::int64_t allReduceSum(std::int64_t v) override;
  [[noreturn]] void abortJob(int code) override;

 private:
  std::shared_ptr<ThreadGroup> group_;
  int rank_;
};

// Runs fn(bootstrap) on n threads. A rank that throws marks the group aborted, so ranks
// blocked in the bootstrap get an fb::Error instead of hanging; the first exception is rethrown.
// Waits in the group time out after `timeout` (fb::TimeoutError).
void runRanks(int n, const std::function<void(Bootstrap&)>& fn,
              std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace fb

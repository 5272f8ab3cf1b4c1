#include "bootstrap/thread_bootstrap.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <unistd.h>

#include "core/error.h"

namespace fb {

// One generation-counted rendezvous: every rank deposits its blob, the last one in releases all.
class ThreadGroup {
 public:
  ThreadGroup(int n, std::chrono::milliseconds timeout) : n_(n), timeout_(timeout), slots_(n) {}
  int size() const { return n_; }

  std::vector<std::vector<std::byte>> exchange(int rank, std::span<const std::byte> mine) {
    std::unique_lock<std::mutex> lk(mu_);
    if (aborted_) FB_THROW(Error, "thread group aborted by another rank");
    std::uint64_t gen = generation_;
    slots_[rank].assign(mine.begin(), mine.end());
    if (++arrived_ == n_) {
      result_ = slots_;
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return result_;
    }
    bool ok = cv_.wait_for(lk, timeout_, [&] { return generation_ != gen || aborted_; });
    if (aborted_) FB_THROW(Error, "thread group aborted by another rank");
    if (!ok) {
      aborted_ = true;
      cv_.notify_all();
      FB_THROW(TimeoutError, "thread bootstrap: rank ", rank, " waited ", timeout_.count(),
               " ms for the other ranks");
    }
    return result_;
  }
  void abort() {
    std::lock_guard<std::mutex> lk(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  int n_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<std::byte>> slots_, result_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  bool aborted_ = false;
};

ThreadBootstrap::ThreadBootstrap(std::shared_ptr<ThreadGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {}

int ThreadBootstrap::size() const { return group_->size(); }

std::string ThreadBootstrap::hostname() const {
  char buf[256] = {};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

void ThreadBootstrap::barrier() { group_->exchange(rank_, {}); }

std::vector<std::vector<std::byte>> ThreadBootstrap::allGather(std::span<const std::byte> mine) {
  return group_->exchange(rank_, mine);
}

double ThreadBootstrap::allReduceMax(double v) {
  auto all = group_->exchange(rank_, std::as_bytes(std::span<const double>(&v, 1)));
  double m = v;
  for (auto& b : all) m = std::max(m, *reinterpret_cast<const double*>(b.data()));
  return m;
}

std::int64_t ThreadBootstrap::allReduceSum(std::int64_t v) {
  auto all = group_->exchange(rank_, std::as_bytes(std::span<const std::int64_t>(&v, 1)));
  std::int64_t s = 0;
  for (auto& b : all) s += *reinterpret_cast<const std::int64_t*>(b.data());
  return s;
}

void ThreadBootstrap::abortJob(int code) {
  group_->abort();
  FB_THROW(Error, "rank ", rank_, " aborted the thread group with code ", code);
}

void runRanks(int n, const std::function<void(Bootstrap&)>& fn, std::chrono::milliseconds timeout) {
  auto group = std::make_shared<ThreadGroup>(n, timeout);
  // The first exception in time is the cause; later ones are usually "aborted by another rank".
  std::mutex errMu;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ThreadBootstrap bs(group, r);
      try {
        fn(bs);
      } catch (...) {
        {
          std::lock_guard<std::mutex> lk(errMu);
          if (!first) first = std::current_exception();
        }
        group->abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace fb

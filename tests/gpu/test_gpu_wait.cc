// The GPU wait loop (lib/gpu/wait.h) with a fake query: it ends at the first poll that sees the
// work done, runs the caller's checks between polls, still gives up at the deadline, and never
// sleeps (a sleeping waiter sees the end of the work late, which the host timer counts).
#include <sys/resource.h>

#include <chrono>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "gpu/wait.h"

using fb::Deadline;
using fb::gpu::pollUntil;
using fb::gpu::WaitEnd;

namespace {
// Voluntary context switches of this thread: a sleep (nanosleep, poll with a time-out) adds one
// each time; sched_yield does not (the thread stays runnable).
long voluntarySwitches() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nvcsw;
}
}  // namespace

TEST_CASE("gpu wait: done at the first poll that sees it, checks between polls", "[gpu_wait]") {
  int polls = 0, checks = 0;
  auto end = pollUntil([&] { return ++polls == 50; }, [&] { ++checks; }, Deadline::in(std::chrono::seconds(60)));
  CHECK(end == WaitEnd::kDone);
  CHECK(polls == 50);
  CHECK(checks == 49);
}

TEST_CASE("gpu wait: never sleeps between polls, however long the work takes", "[gpu_wait]") {
  // 20000 not-ready polls: the loop that slept 200 us after 200 yields made ~19800 voluntary switches.
  constexpr int kPolls = 20000;
  int polls = 0;
  long before = voluntarySwitches();
  auto end = pollUntil([&] { return ++polls > kPolls; }, [] {}, Deadline::in(std::chrono::seconds(600)));
  long slept = voluntarySwitches() - before;
  CHECK(end == WaitEnd::kDone);
  CHECK(polls == kPolls + 1);
  CHECK(slept == 0);
}

TEST_CASE("gpu wait: the deadline still fires when the work never ends", "[gpu_wait]") {
  using Clock = std::chrono::steady_clock;
  int checks = 0;
  auto t0 = Clock::now();
  auto end = pollUntil([] { return false; }, [&] { ++checks; }, Deadline::in(std::chrono::milliseconds(30)));
  auto waited = Clock::now() - t0;
  CHECK(end == WaitEnd::kDeadline);
  CHECK(waited >= std::chrono::milliseconds(30));
  CHECK(checks > 0);
}

TEST_CASE("gpu wait: an asynchronous error found between polls ends the wait with it", "[gpu_wait]") {
  int polls = 0;
  auto asyncError = [&] {
    if (polls == 3) throw std::runtime_error("NCCL async error");
  };
  CHECK_THROWS_WITH(pollUntil([&] { ++polls; return false; }, asyncError, Deadline::in(std::chrono::seconds(60))),
                    "NCCL async error");
  CHECK(polls == 3);
}

TEST_CASE("gpu wait: work done at the first poll ends before any check or deadline", "[gpu_wait]") {
  int checks = 0;
  CHECK(pollUntil([] { return true; }, [&] { ++checks; }, Deadline::in(std::chrono::milliseconds(0))) ==
        WaitEnd::kDone);
  CHECK(checks == 0);
}

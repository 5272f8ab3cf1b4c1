// How a host-driven transport waits for its peers (tcp, verbs): busy-poll, or sleep in the
// kernel (poll/epoll for tcp, the completion channel for verbs).
//
// Spinning is the fastest wait only while every rank on the node has a core of its own: a rank
// that spins on a shared core steals it from the rank that must send. So:
//   FB_PROGRESS=auto (default)  spin briefly, then sleep, while ranks on this node <= usable cores;
//                               yield the core between polls for a while (kYieldTime), then
//                               sleep, when ranks on this node > usable cores (tcp: only while
//                               at most kYieldMaxBytes are left to move; sleep at once above)
//   FB_PROGRESS=spin            always spin briefly first (the old behaviour)
//   FB_PROGRESS=yield           always yield between polls first, then sleep
//   FB_PROGRESS=block           always sleep at once
// Cores = the union of the node's ranks' CPU affinity masks, capped by a cgroup v2 cpu.max quota.
// SpinThenSleep is the one wait policy both follow.
// Header-only: tcp and verbs each include it (no library between them).
#pragma once
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#include "bootstrap/bootstrap.h"
#include "core/error.h"
#include "core/progress_mode.h"
#include "core/units.h"

namespace fb {

// Oversubscribed (FB_PROGRESS=auto or yield): a waiting rank polls and yields its core between
// polls for this long, then sleeps in the kernel: sleeping at once left a core idle at every wait
// (waking costs tens of microseconds in a VM); the bound keeps a long wait from taking CPU time
// from the ranks that have work.
constexpr auto kYieldTime = std::chrono::microseconds(1000);
// ...and only while at most this much is left to move: yielding while megabytes are in flight takes
// turns on the core from the ranks copying them (P2P ring at 4 ranks on 2 cores ran in two modes).
constexpr std::size_t kYieldMaxBytes = std::size_t{1} << 20;

struct ProgressChoice {
  bool spin = true;    // spin a little before sleeping
  bool yield = false;  // oversubscribed: poll without sleeping, yielding the core between polls
  std::string why;   // for path() details, e.g. "block: 4 ranks on this node > 2 cores"
};

// Cores the ranks of this node may run on: the union of their CPU affinity masks (mpirun may bind
// each rank to a core of its own: that still gives every rank a core), capped by a cgroup v2
// cpu.max quota. Collective over the bootstrap; `ranksOnNode` receives this node's rank count.
inline int nodeCores(Bootstrap& bs, int* ranksOnNode) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::string mine;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c) mine += CPU_ISSET(c, &set) ? '1' : '0';
  auto hosts = bs.hostnames();
  auto masks = bs.allGatherStrings(mine);
  std::string all;
  int local = 0;
  for (int r = 0; r < bs.size(); ++r) {
    if (hosts[r] != hosts[bs.rank()]) continue;
    ++local;
    if (all.size() < masks[r].size()) all.resize(masks[r].size(), '0');
    for (std::size_t c = 0; c < masks[r].size(); ++c)
      if (masks[r][c] == '1') all[c] = '1';
  }
  *ranksOnNode = local;
  int n = static_cast<int>(std::count(all.begin(), all.end(), '1'));
  if (n <= 0) n = 1;
  std::ifstream f("/sys/fs/cgroup/cpu.max");  // "max 100000" or "200000 100000"
  std::string quota, period;
  if (f >> quota >> period && quota != "max") {
    try {
      double q = std::stod(quota) / std::stod(period);
      if (q > 0) n = std::min(n, std::max(1, static_cast<int>(q)));
    } catch (const std::exception&) {
    }
  }
  return n;
}

// Throws ConfigError for a bad FB_PROGRESS (for option checks before any communication).
inline void validateProgressEnv() {
  const std::string mode = progressMode();
  if (mode != "auto" && mode != "spin" && mode != "block" && mode != "yield")
    throw ConfigError("FB_PROGRESS='" + mode + "' is not auto, spin, yield or block");
}

// Collective over the bootstrap. Throws ConfigError for a bad FB_PROGRESS.
inline ProgressChoice chooseProgress(Bootstrap& bs) {
  int ranksOnNode = 1;
  int cores = nodeCores(bs, &ranksOnNode);
  const std::string mode = progressMode();
  std::string counts = std::to_string(ranksOnNode) + " rank" + (ranksOnNode == 1 ? "" : "s") + " on this node, " +
                       std::to_string(cores) + " core" + (cores == 1 ? "" : "s");
  if (mode == "spin") return {true, false, "spin, then sleep (FB_PROGRESS=spin; " + counts + ")"};
  if (mode == "block") return {false, false, "sleep at once (FB_PROGRESS=block; " + counts + ")"};
  if (mode == "yield") return {false, true, "yield, then sleep (FB_PROGRESS=yield; " + counts + ")"};
  validateProgressEnv();
  if (ranksOnNode > cores) return {false, true, "yield, then sleep: " + counts + " (oversubscribed)"};
  return {true, false, "spin, then sleep: " + counts};
}

// How tcp and verbs wait (ProgressChoice says which way): after the last progress, poll without
// sleeping for a while, then sleep in the kernel (poll(2) for tcp, the completion channel for
// verbs) until something moves or the deadline.
//   spin:  poll for kSpinTime (waking a sleeping thread costs tens of microseconds, more in VMs,
//          which would dominate small-message latency), reading the clock and giving the core
//          away (sched_yield) every kSpinCheck idle polls;
//   yield: poll for kYieldTime, yielding the core after every poll (oversubscribed);
//   neither: sleep at once.
inline constexpr auto kSpinTime = std::chrono::microseconds(200);
inline constexpr int kSpinCheck = 16;

class SpinThenSleep {
 public:
  // pendingBytes: payload the transport still has to move when the wait starts (tcp passes it;
  // verbs passes nothing, so it always yields when asked to). Above kYieldMaxBytes it sleeps at once.
  SpinThenSleep(bool spin, bool yield, std::size_t pendingBytes = 0)
      : spin_(spin), yield_(!spin && yield && pendingBytes <= kYieldMaxBytes) {}
  explicit SpinThenSleep(const ProgressChoice& c) : SpinThenSleep(c.spin, c.yield) {}
  // Something moved: the next idle poll starts a new wait.
  void progressed() {
    idle_ = 0;
    sleeping_ = false;
  }
  // After a poll that moved nothing: true = poll again at once, false = sleep now.
  bool spin() {
    if ((!spin_ && !yield_) || sleeping_) return false;
    const long every = yield_ ? 1 : kSpinCheck;
    if (++idle_ % every != 0) return true;
    auto now = Clock::now();
    if (idle_ == every) idleSince_ = now;  // the clock is read first here, not at each progress
    if (now - idleSince_ >= (yield_ ? std::chrono::duration_cast<Clock::duration>(kYieldTime)
                                    : std::chrono::duration_cast<Clock::duration>(kSpinTime))) {
      sleeping_ = true;
      return false;
    }
    sched_yield();
    return true;
  }

 private:
  bool spin_, yield_;
  bool sleeping_ = false;
  long idle_ = 0;
  Clock::time_point idleSince_{};
};

}  // namespace fb

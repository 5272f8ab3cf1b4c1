#include "app/accept_pairs.h"

#include <algorithm>

namespace fb::acceptcmd {

accept::Thresholds thresholdsOf(const Options::Accept& a) {
  accept::Thresholds th;
  th.lineRateFloor = a.floor;
  return th;
}

std::chrono::microseconds mpiNap(bool bulk, Clock::duration waited) {
  using std::chrono::microseconds;
  if (!bulk) return microseconds(10);
  return std::clamp(std::chrono::duration_cast<microseconds>(waited) / 100, microseconds(10), microseconds(200));
}

PairResult measurePair(PairLink& link, int peerRank, bool lower, const Options::Accept& a, Buffers& buf,
                       std::chrono::milliseconds timeout, const std::function<void()>& between) {
  PairResult out;
  auto deadline = [&](std::size_t bytes) {
    // a size's own time at 10 MB/s, plus the run's time-out
    return Deadline::in(timeout + std::chrono::milliseconds(bytes / 10000));
  };
  // Latency: ping-pong; the shortest round trip / 2 is judged (accept.h: PairMatrix::lat), the median reported.
  std::vector<double> rtts;
  const int latWarm = 10;
  for (int i = 0; i < latWarm + a.latIters; ++i) {
    auto t0 = Clock::now();
    if (lower) {
      link.send(peerRank, buf.s.data(), a.latBytes, deadline(a.latBytes));
      link.recv(peerRank, buf.r.data(), a.latBytes, deadline(a.latBytes));
    } else {
      link.recv(peerRank, buf.r.data(), a.latBytes, deadline(a.latBytes));
      link.send(peerRank, buf.s.data(), a.latBytes, deadline(a.latBytes));
    }
    if (i >= latWarm) rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  if (lower && !rtts.empty()) {
    out.stalls = accept::countStalls(rtts, thresholdsOf(a));
    out.trips = static_cast<double>(rtts.size());
    std::sort(rtts.begin(), rtts.end());
    out.lat = rtts.front() / 2;
    out.latMedian = rtts[rtts.size() / 2] / 2;
  }
  between();
  // Bandwidth: both directions at once.
  for (int i = 0; i < 2; ++i) link.exchange(peerRank, buf.s.data(), buf.r.data(), a.bwBytes, deadline(a.bwBytes));
  auto t0 = Clock::now();
  for (int i = 0; i < a.bwIters; ++i) link.exchange(peerRank, buf.s.data(), buf.r.data(), a.bwBytes, deadline(a.bwBytes));
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  out.bw = s > 0 ? static_cast<double>(a.bwBytes) * a.bwIters / s / 1e9 : accept::kNaN;
  return out;
}

}  // namespace fb::acceptcmd

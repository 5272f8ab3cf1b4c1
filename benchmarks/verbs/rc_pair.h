// One rank's side of a perftest-style RC queue-pair pair (fabricbench-verbs): ranks 2k and 2k+1
// connect their queue pairs; the driver (even rank) runs the WRITE bandwidth and latency loops
// against its partner's receive area, and each side checks the bytes it received.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/verbs/discovery.h"
#include "transport/verbs/verbs.h"
#include "verbs_pairs.h"

namespace fb::verbs {

struct Endpoint {  // what a side tells its partner
  QpAddress qp;
  std::uint64_t addr = 0;  // its receive area
  std::uint32_t rkey = 0;
};

class Pair {
 public:
  Pair(Bootstrap& bs, const Selection& sel, std::size_t maxBytes, int txDepth, bool packed);
  ~Pair();

  int inlineBytes() const { return inline_; }
  std::size_t recvOffset() const { return recvOff_; }
  double tscMhz() const { return tscMhz_; }  // the rate the last tsc-timed loop measured
  bool driver() const { return driver_; }

  // The passive side of bw posts this before the start barrier and then sleeps in
  // waitDone() on the completion channel (like perftest's server, which sleeps in a socket read
  // instead of competing for the CPU); the driver ends with one untimed 0-byte WRITE WITH IMM.
  void postDoneRecv();
  void waitDone();
  void sendDone();

  // Returns seconds for `iters` WRITEs of `bytes` (driver), 0 on the passive side.
  double writeBw(std::size_t bytes, int iters, int txDepth, int cqMod);

  // perftest's run_iter_lat_write: returns the per-iteration half round trips (us).
  // Time stamps: clock_gettime(CLOCK_MONOTONIC) (steady), or with useTsc the CPU's time-stamp
  // counter as perftest's get_cycles(), converted with the rate measured against the monotonic
  // clock over this very loop (perftest uses a sampled CPU MHz instead).
  std::vector<double> writeLat(std::size_t bytes, int iters, bool useTsc);

  void fillSend(std::size_t bytes);
  void clearRecv(std::size_t bytes) { std::memset(buf_ + recvOff_, 0, bytes); }
  // Wrong bytes in the receive area (the last byte excluded for latency: it holds the counter).
  std::int64_t countWrong(std::size_t bytes, bool skipLast);

 private:
  Bootstrap& bs_;
  std::size_t maxBytes_;
  std::size_t recvOff_ = 0;
  double tscMhz_ = 0;
  int me_ = 0, partner_ = 1, inline_ = 0;
  bool driver_ = true;
  PortSel port_;
  Context ctx_;
  Pd pd_;
  Channel channel_;
  Cq cq_;
  std::uint8_t* buf_ = nullptr;
  Mr mr_;
  Qp qp_;
  Endpoint remote_;
};

}  // namespace fb::verbs

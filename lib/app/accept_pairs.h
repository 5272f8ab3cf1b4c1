// fabricbench --accept, the pair test's measuring side: a path between two units (a transport, or
// MPI point to point) and one pair's latency and bandwidth over it. The command is accept_command.cc.
#pragma once
#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "accept/accept.h"
#include "app/options.h"
#include "core/error.h"
#include "core/progress_mode.h"
#include "transport/transport.h"
#if defined(FB_BUILD_NCCL_COLL)
#include "collectives/nccl/nccl_pairs.h"
#endif

namespace fb::acceptcmd {

using Clock = std::chrono::steady_clock;

constexpr int kTagLat = 4101, kTagBw = 4102;

// The verdict's thresholds for this run: the defaults with the user's --accept-floor. The pair test
// counts its stalls with them, the retests and the verdict judge with them.
accept::Thresholds thresholdsOf(const Options::Accept& a);

// ---------------------------------------------------------------------------------------------
// One pair's measurement over one path. The lower unit starts the ping-pong (it times the round
// trips); both time the bandwidth exchange (both directions at once), the slower side counts.
class PairLink {
 public:
  virtual ~PairLink() = default;
  // Both directions at once, `bytes` each way.
  virtual void exchange(int peer, void* s, void* r, std::size_t bytes, Deadline d) = 0;
  virtual void send(int peer, const void* s, std::size_t bytes, Deadline d) = 0;
  virtual void recv(int peer, void* r, std::size_t bytes, Deadline d) = 0;
  virtual void registerMemory(void*, std::size_t) {}
  virtual double lineRate() const { return -1; }
  virtual std::string label() const = 0;
};

class TransportLink : public PairLink {
 public:
  explicit TransportLink(std::unique_ptr<Transport> t) : t_(std::move(t)) {}
  void exchange(int peer, void* s, void* r, std::size_t n, Deadline d) override { t_->sendRecv(peer, s, n, peer, r, n, d); }
  void send(int peer, const void* s, std::size_t n, Deadline d) override {
    Request q = t_->isend(peer, s, n);
    t_->wait(q, d);
  }
  void recv(int peer, void* r, std::size_t n, Deadline d) override {
    Request q = t_->irecv(peer, r, n);
    t_->wait(q, d);
  }
  void registerMemory(void* p, std::size_t n) override { t_->registerMemory(p, n); }
  double lineRate() const override { return t_->path().nominalGBps; }
  std::string label() const override { return t_->path().label; }
  Transport& transport() { return *t_; }

 private:
  std::unique_ptr<Transport> t_;
};

// How long a waiting MPI pair rank sleeps between polls when the ranks share cores (MpiLink's
// nap). bulk (the bandwidth exchange): 1 % of the time waited so far, 10 to 200 us, so its end is
// seen late by at most ~1 % plus the kernel's timer slack (50 us): a 4 MiB exchange at 500 Mbit/s,
// 67 ms, by at most 0.4 %. The ping-pong: 10 us; every round trip then pays both ranks' naps and
// wake-ups (the reply lands within the first nap), so the floor is the path's plus ~2 x 60-80 us
// in the lab, alike for every pair whichever cores its ranks share.
std::chrono::microseconds mpiNap(bool bulk, Clock::duration waited);

// MPI point to point on MPI_COMM_WORLD, every wait polled against a deadline (MPI_Testall).
// nap (FB_PROGRESS=block|yield: the ranks share cores they cannot see): sleep mpiNap between
// polls, since spinning ranks that share a core make their pairs look slow; otherwise spin,
// yielding every 64 polls (a rank with a core of its own).
// The exchange moves its bytes as kMpiParts messages each way, all posted at once (from 256 KiB
// up), so one message's eager-path copies overlap the others' transfer (one message left pairs
// ~10 % slow in the lab).
constexpr int kMpiParts = 4;

class MpiLink : public PairLink {
 public:
  explicit MpiLink(bool nap = progressSaysSharedCores()) : nap_(nap) {}
  void exchange(int peer, void* s, void* r, std::size_t n, Deadline d) override {
    const int k = n >= kMpiParts * std::size_t{65536} ? kMpiParts : 1;
    MPI_Request q[2 * kMpiParts];
    for (int i = 0; i < k; ++i) {
      const std::size_t off = n * i / k, len = n * (i + 1) / k - off;
      MPI_Irecv(static_cast<char*>(r) + off, static_cast<int>(len), MPI_BYTE, peer, kTagBw, MPI_COMM_WORLD, &q[2 * i]);
      MPI_Isend(static_cast<char*>(s) + off, static_cast<int>(len), MPI_BYTE, peer, kTagBw, MPI_COMM_WORLD, &q[2 * i + 1]);
    }
    waitAll(q, 2 * k, peer, d, true);
  }
  void send(int peer, const void* s, std::size_t n, Deadline d) override {
    MPI_Request q;
    MPI_Isend(const_cast<void*>(s), static_cast<int>(n), MPI_BYTE, peer, kTagLat, MPI_COMM_WORLD, &q);
    waitAll(&q, 1, peer, d, false);
  }
  void recv(int peer, void* r, std::size_t n, Deadline d) override {
    MPI_Request q;
    MPI_Irecv(r, static_cast<int>(n), MPI_BYTE, peer, kTagLat, MPI_COMM_WORLD, &q);
    waitAll(&q, 1, peer, d, false);
  }
  std::string label() const override { return "mpi (MPI_Isend/MPI_Irecv on MPI_COMM_WORLD)"; }

 private:
  void waitAll(MPI_Request* q, int n, int peer, Deadline d, bool bulk) const {
    const auto start = Clock::now();
    for (std::uint64_t spin = 0;; ++spin) {
      int done = 0;
      MPI_Testall(n, q, &done, MPI_STATUSES_IGNORE);
      if (done) return;
      if (d.expired()) throw TimeoutError(fmt::format("mpi pair test: no progress with rank {} before the deadline", peer));
      if (nap_)
        std::this_thread::sleep_for(mpiNap(bulk, Clock::now() - start));
      else if (spin % 64 == 63)
        std::this_thread::yield();
    }
  }
  bool nap_;
};

#if defined(FB_BUILD_NCCL_COLL)
// NCCL point to point between the pair's two GPUs (collectives/nccl/nccl_pairs.h): the data move
// from and into the channel's device buffers, the host buffers given are not used.
class NcclLink : public PairLink {
 public:
  explicit NcclLink(std::unique_ptr<nccl::PairChannel> c) : c_(std::move(c)) {}
  void exchange(int peer, void*, void*, std::size_t n, Deadline d) override { c_->exchange(peer, n, d); }
  void send(int peer, const void*, std::size_t n, Deadline d) override { c_->send(peer, n, d); }
  void recv(int peer, void*, std::size_t n, Deadline d) override { c_->recv(peer, n, d); }
  std::string label() const override { return c_->label(); }

 private:
  std::unique_ptr<nccl::PairChannel> c_;
};
#endif

struct PairResult {
  double bw = kNaNd(), lat = kNaNd(), latMedian = kNaNd();  // lat: the floor (shortest round trip / 2)
  double stalls = kNaNd(), trips = kNaNd();                  // stalled round trips (accept::countStalls) of `trips`
  static double kNaNd() { return accept::kNaN; }
};

struct Buffers {
  std::vector<std::byte> s, r;
};

// This unit's side of one pair. lower: this unit has the lower index (it times the latency).
// `between` runs after the latency part on every pair of the round (a barrier): no pair's latency
// is measured while another pair of the round moves its bandwidth traffic.
PairResult measurePair(PairLink& link, int peerRank, bool lower, const Options::Accept& a, Buffers& buf,
                       std::chrono::milliseconds timeout, const std::function<void()>& between);

}  // namespace fb::acceptcmd

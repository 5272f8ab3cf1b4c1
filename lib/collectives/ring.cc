// Host algorithms for AllReduce, AllGather, ReduceScatter and the P2P ring over any Transport, on host memory (tcp, verbs): the
// algorithm is chosen per shape (host_algorithms.h: recursive doubling, Rabenseifner, Bruck,
// recursive halving below their switch points, chosen in scratchFor/prepare; the row's
// 'algorithm' detail names it, 'model_algo' as the cost model's id), and the ring, below, for large sizes.
// Ring: n ranks, right = r+1,
// left = r-1, the buffer split into n chunks (chunk k = elements [k·C/n, (k+1)·C/n)).
//
// Reductions use the shape's operator (sum, prod, min, max; avg = sum, divided by n once at the
// end of the reduce-scatter: hostFinish).
// AllReduce = reduce-scatter then all-gather, 2(n-1) steps:
//   RS step s (0..n-2): send chunk (r-s) (own input at s = 0, the partial sum made at s-1 after),
//                       receive chunk (r-s-1) from the left, out[k] = in[k] + received.
//                       After n-1 steps rank r holds the full sum of chunk (r+1).
//   AG step s (0..n-2): send chunk (r+1-s), receive chunk (r-s) straight into out.
//   Bytes on the wire per rank: 2(n-1)/n · S sent and received (the busbw factor).
// AllGather: n-1 steps, send block (r-s), receive block (r-s-1) into out; (n-1)/n · S per rank.
//   (The all-gathers forward each piece on arrival, so their steps overlap: forwardingAllGather.)
// ReduceScatter: n-1 steps, send partial sum of block (r-s-1), receive block (r-s-2),
//   add own input; the last step lands block r in the output; (n-1)/n · S per rank.
// P2P ring: one exchange, send S right, receive S from the left.
//
// Each step is cut into pieces (HostCollective::pipelinedExchange), all posted at once; the
// receiver reduces piece i while later pieces are still arriving, so reduction overlaps the wire.
// In-place P2P ring receives into a staging buffer, then copies (the send must read the old data).
#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/host_algorithms.h"
#include "collectives/host_collective.h"
#include "collectives/host_reduce.h"
#include "core/error.h"

namespace fb {
namespace {

class RingCollective final : public HostCollective {
 public:
  RingCollective(CollKind kind, std::shared_ptr<Transport> t, std::shared_ptr<DeviceStaging> staging,
                 std::shared_ptr<const HostRanker> ranker)
      : HostCollective(std::move(t), std::move(staging)), kind_(kind), ranker_(std::move(ranker)) {}

  PathInfo path() const override {
    PathInfo p = HostCollective::path();
    p.details.emplace_back("algorithm", hostChoiceName(choice_));
    p.details.emplace_back(kModelAlgoKey, std::string(hostModelAlgo(choice_)));  // typed: what the model reads
    return p;
  }

  void prepare(const CollShape& shape) override {
    placement_ = HostPlacement{t_->nodeOf(), shape.nRanks};
    if (static_cast<int>(placement_.nodeOf.size()) != shape.nRanks) placement_.nodeOf.clear();
    // The chosen algorithms sum; another operator (-o) runs the ring, which has them all.
    choice_ = shape.op == ReduceOp::kSum ? chooseHostAlgo(kind_, shape.bytes, placement_, ranker_.get()) : HostChoice{};
    algo_ = choice_.algo;
    HostCollective::prepare(shape);
  }

 private:
  Scratch scratchFor(const CollShape& s) const override {
    const std::size_t elt = dtypeSize(s.dtype);
    Scratch sc;
    if (algo_ != HostAlgo::kRing) {
      HostScratch need = hostAlgoScratch(choice_, s, placement_);
      return {need.recv, need.acc};
    }
    switch (kind_) {
      case CollKind::kAllReduce: {
        // The largest chunk any step receives.
        std::size_t maxChunk = 0;
        for (int k = 0; k < s.nRanks; ++k)
          maxChunk = std::max(maxChunk, s.recvCount * (k + 1) / s.nRanks - s.recvCount * k / s.nRanks);
        sc.tmp = maxChunk * elt;
        break;
      }
      case CollKind::kReduceScatter: sc.tmp = sc.work = s.paramCount * elt; break;
      case CollKind::kP2PRing: sc.tmp = s.inPlace ? s.recvCount * elt : 0; break;
      default: break;
    }
    return sc;
  }

  // The all-gather half of the ring, block by block around it: rank r starts with block `first`
  // (elements [start(k), start(k) + count(k)) of out for block k), sends block first - s and
  // receives block first - s - 1 at step s. Every piece is forwarded to the right as soon as it
  // has arrived from the left, so the n - 1 steps overlap instead of each waiting for the
  // previous one to drain (AllGather over loopback, 4 ranks on 2 cores, 4-64 MiB: 1.11-1.25 x
  // Open MPI's time with a barrier between steps; benchmarks/host_vs_mpi.sh). All receives are
  // posted first; blocks are cut by forEachPiece, as exchangePieces cuts them, so both ends of a
  // link see the same messages in the same order.
  template <typename Start, typename Count>
  void forwardingAllGather(std::byte* out, int first, Start&& start, Count&& count, Deadline deadline) {
    const int n = s_.nRanks;
    if (n == 1) return;
    const int right = mod(rank() + 1), left = mod(rank() - 1);
    auto eachPiece = [&](int k, auto&& f) {
      std::byte* block = at(out, start(k));
      forEachPiece(count(k) * elt_, elt_, [&](std::size_t off, std::size_t len) { f(block + off, len); });
    };
    recvs_.clear();
    sends_.clear();
    for (int s = 0; s < n - 1; ++s)
      eachPiece(mod(first - s - 1), [&](std::byte* p, std::size_t len) {
        recvs_.push_back({t_->irecv(left, p, len), p, len, s});
      });
    eachPiece(first, [&](std::byte* p, std::size_t len) { sends_.push_back(t_->isend(right, p, len)); });
    for (Piece& pc : recvs_) {
      t_->wait(pc.req, deadline);
      if (pc.step < n - 2) sends_.push_back(t_->isend(right, pc.at, pc.bytes));  // next step's send
    }
    for (Request& q : sends_) t_->wait(q, deadline);
  }

  std::size_t chunkStart(int k, std::size_t total) const {
    return total * static_cast<std::size_t>(k) / static_cast<std::size_t>(s_.nRanks);
  }
  std::size_t chunkCount(int k, std::size_t total) const { return chunkStart(k + 1, total) - chunkStart(k, total); }

  void runOnce(Deadline deadline) override {
    const int n = s_.nRanks, r = rank();
    std::byte* in = sendPtr_;
    std::byte* out = recvPtr_;
    if (algo_ != HostAlgo::kRing) {
      runHostAlgo(choice_, HostOp{*t_, s_, in, out, tmp_.data(), work_[0].data(), deadline, &placement_});
      return;
    }
    switch (kind_) {
      case CollKind::kAllReduce: {
        const std::size_t C = s_.recvCount;
        if (n == 1) {
          if (in != out) std::memcpy(out, in, C * elt_);
          return;
        }
        for (int s = 0; s < n - 1; ++s) {
          int sk = mod(r - s), rk = mod(r - s - 1);
          const std::byte* src = (s == 0) ? at(in, chunkStart(sk, C)) : at(out, chunkStart(sk, C));
          std::size_t rStart = chunkStart(rk, C);
          pipelinedExchange(src, chunkCount(sk, C), tmp_.data(), chunkCount(rk, C), deadline,
                            [&](std::size_t o, std::size_t c) {
                              hostReduce(at(out, rStart + o), at(in, rStart + o), at(tmp_.data(), o), c, s_.dtype, s_.op);
                            });
        }
        // Rank r now holds the full reduction of chunk r+1 (avg: divide it once, before it travels).
        hostFinish(at(out, chunkStart(mod(r + 1), C)), chunkCount(mod(r + 1), C), s_.dtype, s_.op, n);
        forwardingAllGather(out, mod(r + 1), [&](int k) { return chunkStart(k, C); },
                            [&](int k) { return chunkCount(k, C); }, deadline);
        return;
      }
      case CollKind::kAllGather: {
        const std::size_t c = s_.paramCount;
        if (in != at(out, static_cast<std::size_t>(r) * c)) std::memcpy(at(out, r * c), in, c * elt_);
        forwardingAllGather(out, r, [&](int k) { return static_cast<std::size_t>(k) * c; },
                            [&](int) { return c; }, deadline);
        return;
      }
      case CollKind::kReduceScatter: {
        const std::size_t c = s_.paramCount;
        if (n == 1) {
          if (in != out) std::memcpy(out, in, c * elt_);
          return;
        }
        // Partial sums ping-pong between work_[0] and work_[1]; the last step writes `out`.
        const std::byte* src = at(in, static_cast<std::size_t>(mod(r - 1)) * c);
        for (int s = 0; s < n - 1; ++s) {
          int rk = mod(r - s - 2);
          bool last = (s == n - 2);
          std::byte* dst = last ? out : work_[s % 2].data();
          const std::byte* mine = at(in, static_cast<std::size_t>(rk) * c);
          pipelinedExchange(src, c, tmp_.data(), c, deadline, [&](std::size_t o, std::size_t cnt) {
            hostReduce(at(dst, o), at(const_cast<std::byte*>(mine), o), at(tmp_.data(), o), cnt, s_.dtype, s_.op);
          });
          src = dst;
        }
        hostFinish(out, c, s_.dtype, s_.op, n);
        return;
      }
      case CollKind::kP2PRing: {
        const std::size_t C = s_.recvCount;
        std::byte* dst = s_.inPlace ? tmp_.data() : out;
        pipelinedExchange(in, C, dst, C, deadline, [](std::size_t, std::size_t) {});
        if (s_.inPlace && C) std::memcpy(out, dst, C * elt_);
        return;
      }
      default:
        FB_THROW(Error, "no host ring algorithm for ", collName(kind_));
    }
  }

  struct Piece {
    Request req;
    std::byte* at;
    std::size_t bytes;
    int step;
  };
  CollKind kind_;
  HostAlgo algo_ = HostAlgo::kRing;  // chosen per shape in prepare() (choice_.algo)
  HostChoice choice_;
  HostPlacement placement_;
  std::shared_ptr<const HostRanker> ranker_;
  std::vector<Piece> recvs_;         // forwardingAllGather's requests, kept between operations
  std::vector<Request> sends_;
};

}  // namespace

std::unique_ptr<Collective> makeHostRing(CollKind kind, std::shared_ptr<Transport> transport,
                                         std::shared_ptr<DeviceStaging> staging,
                                         std::shared_ptr<const HostRanker> ranker) {
  return std::make_unique<RingCollective>(kind, std::move(transport), std::move(staging), std::move(ranker));
}

}  // namespace fb

// Host-memory collectives over any Transport (tcp, verbs): the buffers, staging and checks, and
// the ring algorithms below; smaller sizes use the algorithms of host_algorithms.cc, chosen per
// shape in prepare() (the row's 'algorithm' detail names it).
// Ring algorithms: n ranks, right = r+1,
// left = r-1, the buffer split into n chunks (chunk k = elements [k·C/n, (k+1)·C/n)).
//
// AllReduce = reduce-scatter then all-gather, 2(n-1) steps:
//   RS step s (0..n-2): send chunk (r-s) (own input at s = 0, the partial sum made at s-1 after),
//                       receive chunk (r-s-1) from the left, out[k] = in[k] + received.
//                       After n-1 steps rank r holds the full sum of chunk (r+1).
//   AG step s (0..n-2): send chunk (r+1-s), receive chunk (r-s) straight into out.
//   Bytes on the wire per rank: 2(n-1)/n · S sent and received (the busbw factor).
// AllGather: n-1 steps, send block (r-s), receive block (r-s-1) into out; (n-1)/n · S per rank.
// ReduceScatter: n-1 steps, send partial sum of block (r-s-1), receive block (r-s-2),
//   add own input; the last step lands block r in the output; (n-1)/n · S per rank.
// P2P ring: one exchange, send S right, receive S from the left.
//
// Each step is cut into pieces of kHostPieceBytes (host_algorithms.h), all posted at once; the receiver reduces piece i
// while later pieces are still arriving, so reduction overlaps the wire.
// In-place P2P ring receives into a staging buffer, then copies (the send must read the old data).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "collectives/collective.h"
#include "collectives/host_algorithms.h"
#include "collectives/host_reduce.h"
#include "core/error.h"

namespace fb {
namespace {

constexpr std::size_t kAlign = 4096;

struct AlignedBuffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;      // asked for
  std::size_t allocated = 0;  // rounded up to pages, never 0 (registrable even for 0-byte messages)
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(ptr); }
  void resize(std::size_t n) {
    std::free(ptr);
    bytes = n;
    allocated = std::max(kAlign, ((n + kAlign - 1) / kAlign) * kAlign);
    ptr = std::aligned_alloc(kAlign, allocated);
    if (!ptr) FB_THROW(Error, "out of host memory allocating ", n, " bytes");
    std::memset(ptr, 0, allocated);  // touch pages before timing
  }
  std::byte* data() const { return static_cast<std::byte*>(ptr); }
};

class RingCollective final : public Collective {
 public:
  RingCollective(CollKind kind, std::shared_ptr<Transport> t, std::shared_ptr<DeviceStaging> staging)
      : kind_(kind), t_(std::move(t)), stage_(std::move(staging)) {}
  ~RingCollective() override { unregisterAll(); }

  std::string impl() const override { return std::string(t_->name()); }
  PathInfo path() const override {
    PathInfo p = t_->path();
    p.details.emplace_back("algorithm", std::string(hostAlgoName(algo_)));
    if (stage_) {
      p.label += " [GPU memory staged via host]";
      p.details.emplace_back("memory", stage_->describe());
    }
    return p;
  }

  void prepare(const CollShape& shape) override {
    FB_ENFORCE_EQ(shape.nRanks, t_->size());
    unregisterAll();
    s_ = shape;
    elt_ = dtypeSize(shape.dtype);
    const int n = s_.nRanks, r = t_->rank();
    std::size_t sendBytes = s_.sendCount * elt_, recvBytes = s_.recvCount * elt_;
    // The largest piece any step receives into a scratch buffer.
    std::size_t maxChunk = 0;
    std::size_t total = (kind_ == CollKind::kReduceScatter) ? s_.sendCount : s_.recvCount;
    for (int k = 0; k < n; ++k) maxChunk = std::max(maxChunk, chunkCount(k, total));
    if (kind_ == CollKind::kReduceScatter) maxChunk = s_.paramCount;
    if (s_.inPlace) {
      // One buffer; send and recv are views into it (nccl-tests offsets).
      main_.resize(std::max(sendBytes, recvBytes));
      aux_.resize(0);
      sendPtr_ = main_.data() + s_.sendInPlaceOffset(r) * elt_;
      recvPtr_ = main_.data() + s_.recvInPlaceOffset(r) * elt_;
    } else {
      main_.resize(recvBytes);
      aux_.resize(sendBytes);
      recvPtr_ = main_.data();
      sendPtr_ = aux_.data();
    }
    std::size_t scratchBytes = maxChunk * elt_;
    if (kind_ == CollKind::kP2PRing) scratchBytes = s_.inPlace ? recvBytes : 0;
    // The algorithm for this size (host_algorithms.h); its scratch replaces the ring's.
    algo_ = chooseHostAlgo(kind_, s_.bytes, n);
    const bool ring = algo_ == HostAlgo::kRing;
    HostScratch need = hostAlgoScratch(algo_, s_);
    tmp_.resize(ring ? scratchBytes : need.recv);
    work_[0].resize(ring ? (kind_ == CollKind::kReduceScatter ? scratchBytes : 0) : need.acc);
    work_[1].resize(ring && kind_ == CollKind::kReduceScatter ? scratchBytes : 0);
    for (AlignedBuffer* b : {&main_, &aux_, &tmp_, &work_[0], &work_[1]}) {
      if (b->ptr) {
        t_->registerMemory(b->ptr, b->allocated, MemKind::kHost);
        registered_.push_back(b->ptr);
      }
    }
    if (stage_) {
      // Device mirrors of main_ and aux_: the user's send/receive buffers live there.
      std::byte* devMain = stage_->mirror(0, main_.allocated);
      std::byte* devAux = stage_->mirror(1, aux_.allocated);
      auto toDev = [&](std::byte* host) {
        if (host >= main_.data() && host < main_.data() + main_.allocated) return devMain + (host - main_.data());
        return devAux + (host - aux_.data());
      };
      devSend_ = toDev(sendPtr_);
      devRecv_ = toDev(recvPtr_);
      for (AlignedBuffer* b : {&main_, &aux_}) {
        stage_->pin(b->ptr, b->allocated);
        pinned_.push_back(b->ptr);
      }
    }
    fillInput(1);
    if (stage_) stage_->toDevice(devSend_, sendPtr_, s_.sendCount * elt_, Deadline::in(std::chrono::seconds(60)));
  }

  double runBatch(int iters, Deadline deadline) override {
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) runStaged(deadline);
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  std::int64_t check(int seed, Deadline deadline) override {
    fillInput(seed);
    if (stage_) {
      // The input goes to GPU memory; the host copies are poisoned (0xff bytes are NaN in every
      // float type), so what is counted below made the whole trip through GPU memory.
      stage_->toDevice(devSend_, sendPtr_, s_.sendCount * elt_, deadline);
      std::memset(main_.data(), 0xff, main_.allocated);
      if (aux_.ptr) std::memset(aux_.data(), 0xff, aux_.allocated);
      runStaged(deadline);
      std::memset(recvPtr_, 0xff, s_.recvCount * elt_);
      stage_->toHost(recvPtr_, devRecv_, s_.recvCount * elt_, deadline);
    } else {
      runOnce(deadline);
    }
    if (corrupt_ && *corrupt_ < s_.recvCount) {
      double v = loadElement(recvPtr_, s_.dtype, *corrupt_);
      storeElement(recvPtr_, s_.dtype, *corrupt_, v + 1000);
    }
    corrupt_.reset();
    return countWrong(s_, recvPtr_, t_->rank(), seed);
  }

 private:
  std::size_t chunkStart(int k, std::size_t total) const {
    return total * static_cast<std::size_t>(k) / static_cast<std::size_t>(s_.nRanks);
  }
  std::size_t chunkCount(int k, std::size_t total) const { return chunkStart(k + 1, total) - chunkStart(k, total); }
  int mod(int a) const { return ((a % s_.nRanks) + s_.nRanks) % s_.nRanks; }

  void fillInput(int seed) {
    fillPattern(sendPtr_, s_.dtype, s_.sendCount, t_->rank(), seed);
  }

  void unregisterAll() {
    for (void* p : registered_) t_->deregisterMemory(p);
    registered_.clear();
    for (void* p : pinned_) stage_->unpin(p);
    pinned_.clear();
  }

  // One operation; with staging, GPU input -> host, the ring, host output -> GPU (all timed).
  void runStaged(Deadline deadline) {
    if (!stage_) {
      runOnce(deadline);
      return;
    }
    stage_->toHost(sendPtr_, devSend_, s_.sendCount * elt_, deadline);
    runOnce(deadline);
    stage_->toDevice(devRecv_, recvPtr_, s_.recvCount * elt_, deadline);
  }

  // Send `sendElems` from sendBuf right while receiving `recvElems` from the left into recvBuf, in
  // pieces; after each received piece, onPiece(offsetElems, countElems) runs (e.g. a reduction).
  template <typename OnPiece>
  void pipelinedExchange(const std::byte* sendBuf, std::size_t sendElems, std::byte* recvBuf,
                         std::size_t recvElems, Deadline deadline, OnPiece&& onPiece) {
    exchangePieces(*t_, mod(t_->rank() + 1), sendBuf, sendElems * elt_, mod(t_->rank() - 1), recvBuf,
                   recvElems * elt_, elt_, deadline, reqs_,
                   [&](std::size_t off, std::size_t bytes) { onPiece(off / elt_, bytes / elt_); });
  }

  std::byte* at(std::byte* base, std::size_t elem) const { return base + elem * elt_; }

  void runOnce(Deadline deadline) {
    const int n = s_.nRanks, r = t_->rank();
    std::byte* in = sendPtr_;
    std::byte* out = recvPtr_;
    if (algo_ != HostAlgo::kRing) {
      runHostAlgo(algo_, HostOp{*t_, s_, in, out, tmp_.data(), work_[0].data(), deadline});
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
                              hostSum(at(out, rStart + o), at(in, rStart + o), at(tmp_.data(), o), c, s_.dtype);
                            });
        }
        for (int s = 0; s < n - 1; ++s) {
          int sk = mod(r + 1 - s), rk = mod(r - s);
          pipelinedExchange(at(out, chunkStart(sk, C)), chunkCount(sk, C), at(out, chunkStart(rk, C)),
                            chunkCount(rk, C), deadline, [](std::size_t, std::size_t) {});
        }
        return;
      }
      case CollKind::kAllGather: {
        const std::size_t c = s_.paramCount;
        if (in != at(out, static_cast<std::size_t>(r) * c)) std::memcpy(at(out, r * c), in, c * elt_);
        for (int s = 0; s < n - 1; ++s) {
          int sk = mod(r - s), rk = mod(r - s - 1);
          pipelinedExchange(at(out, sk * c), c, at(out, rk * c), c, deadline, [](std::size_t, std::size_t) {});
        }
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
            hostSum(at(dst, o), at(const_cast<std::byte*>(mine), o), at(tmp_.data(), o), cnt, s_.dtype);
          });
          src = dst;
        }
        return;
      }
      case CollKind::kP2PRing: {
        const std::size_t C = s_.recvCount;
        std::byte* dst = s_.inPlace ? tmp_.data() : out;
        pipelinedExchange(in, C, dst, C, deadline, [](std::size_t, std::size_t) {});
        if (s_.inPlace && C) std::memcpy(out, dst, C * elt_);
        return;
      }
    }
  }

  CollKind kind_;
  std::shared_ptr<Transport> t_;
  CollShape s_{};
  std::size_t elt_ = 4;
  AlignedBuffer main_, aux_, tmp_, work_[2];
  std::byte* sendPtr_ = nullptr;
  std::byte* recvPtr_ = nullptr;
  std::vector<void*> registered_;
  std::vector<Request> reqs_;
  HostAlgo algo_ = HostAlgo::kRing;  // chosen per shape in prepare()
  std::shared_ptr<DeviceStaging> stage_;
  std::byte* devSend_ = nullptr;
  std::byte* devRecv_ = nullptr;
  std::vector<void*> pinned_;
};

}  // namespace

std::unique_ptr<Collective> makeRingCollective(CollKind kind, std::shared_ptr<Transport> transport,
                                               std::shared_ptr<DeviceStaging> staging) {
  return std::make_unique<RingCollective>(kind, std::move(transport), std::move(staging));
}

}  // namespace fb

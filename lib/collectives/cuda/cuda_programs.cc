// The cuda collective's programs: each collective's ring step list on this rank (RingSteps), its
// grid, and the one-shot AllReduce (and its LL form) where it applies. The kernels that run them
// are in kernels/.
#include "collectives/cuda/cuda_collective_impl.h"

namespace fb::cudaipc::detail {

struct CudaIpcCollective::RingSteps {
  CudaIpcCollective& self;
  ipc::RingProgram& ring_;
  const CollShape& shape_;
  DeviceBuffer& scratch_;
  const int n, r, left;
  const std::size_t es;
  char* const send;
  char* const recv;

  void add(void* dst, const void* a, const void* b, std::size_t count, void* dst2 = nullptr,
           const void* src2 = nullptr, std::size_t count2 = 0) {
    FB_ENFORCE(ring_.nSteps < ipc::kMaxRingSteps, "too many ring steps");
    ring_.steps[ring_.nSteps++] = ipc::RingStep{dst, a, b, count, dst2, src2, count2};
  }
  // A peer's send/recv pointers: same offsets as mine inside its main buffer, except the
  // in-place offsets, which depend on the peer's rank.
  char* peerSend(int q) const {
    return self.peerMain(q) + (shape_.inPlace ? shape_.sendInPlaceOffset(q) * es : 0);
  }
  char* peerRecv(int q) const {
    return self.peerMain(q) + (shape_.inPlace ? shape_.recvInPlaceOffset(q) * es : self.recvOff_);
  }
  char* peerScratch(int q) const { return self.peerScratch(q); }

  // Reduce-scatter then all-gather around the ring, in 64-element-aligned chunks.
  std::size_t allReduce() {
    const std::size_t count = shape_.paramCount;
    if (n == 1) {
      if (!shape_.inPlace) add(recv, send, nullptr, count);
      return count * es;
    }
    std::size_t chunk = (count + n - 1) / n;
    chunk = (chunk + 63) / 64 * 64;
    auto lo = [&](int c) { return std::min(count, static_cast<std::size_t>(c) * chunk); };
    auto len = [&](int c) { return std::min(count, lo(c) + chunk) - lo(c); };
    for (int s = 0; s < n - 1; ++s) {  // reduce-scatter: pull the left's partial sum, add mine
      int c = ((r - s - 1) % n + n) % n;
      const char* theirs = (s == 0 ? peerSend(left) : peerRecv(left)) + lo(c) * es;
      add(recv + lo(c) * es, send + lo(c) * es, theirs, len(c));
    }
    for (int s = 0; s < n - 1; ++s) {  // all-gather: pull the left's finished chunks
      int c = ((r - s) % n + n) % n;
      add(recv + lo(c) * es, peerRecv(left) + lo(c) * es, nullptr, len(c));
    }
    return chunk * es;
  }

  // Each step forwards the left neighbour's newest block.
  std::size_t allGather() {
    const std::size_t c = shape_.paramCount;
    if (n == 1) {
      if (!shape_.inPlace) add(recv, send, nullptr, c);
    } else {
      for (int s = 0; s < n - 1; ++s) {
        int ch = ((r - s - 1) % n + n) % n;
        const char* src = s == 0 ? peerSend(left) : peerRecv(left) + ch * c * es;
        if (s == 0 && !shape_.inPlace)
          add(recv + ch * c * es, src, nullptr, c, recv + r * c * es, send, c);
        else
          add(recv + ch * c * es, src, nullptr, c);
      }
    }
    return c * es;
  }

  // Partial sums travel around the ring through two alternating scratch slots.
  std::size_t reduceScatter() {
    const std::size_t c = shape_.paramCount;
    const std::size_t slot = (c * es + 255) / 256 * 256;
    if (n == 1) {
      if (!shape_.inPlace) add(recv, send, nullptr, c);
    } else {
      char* scratch = static_cast<char*>(scratch_.get());
      for (int s = 0; s < n - 1; ++s) {
        int ch = ((r - s - 2) % n + 2 * n) % n;
        const char* theirs = s == 0 ? peerSend(left) + ch * c * es : peerScratch(left) + ((s - 1) % 2) * slot;
        char* dst = s == n - 2 ? recv : scratch + (s % 2) * slot;
        add(dst, send + ch * c * es, theirs, c);
      }
    }
    return c * es;
  }

  std::size_t allToAll() {
    // Every rank pulls block r of every peer's input (peers' inputs are not written during a
    // batch), its own block locally: n copies, two per step (identical step count everywhere).
    const std::size_t c = shape_.paramCount;
    std::vector<std::pair<char*, const char*>> copies;
    for (int s = 0; s < n; ++s) {
      const int q = ((r - s) % n + n) % n;
      copies.emplace_back(recv + q * c * es, (q == r ? send : peerSend(q)) + r * c * es);
    }
    for (std::size_t i = 0; i < copies.size(); i += 2) {
      if (i + 1 < copies.size())
        add(copies[i].first, copies[i].second, nullptr, c, copies[i + 1].first, copies[i + 1].second, c);
      else
        add(copies[i].first, copies[i].second, nullptr, c);
    }
    return 2 * c * es;
  }

  std::size_t broadcast() {
    // Every rank pulls the root's input (not written during a batch); one step on every rank
    // (an empty one on an in-place root), so the neighbours' step flags stay in lock step.
    const std::size_t c = shape_.paramCount;
    const int root = shape_.root;
    if (r != root) add(recv, peerSend(root), nullptr, c);
    else if (!shape_.inPlace) add(recv, send, nullptr, c);
    else add(recv, recv, nullptr, 0);
    return c * es;
  }

  // Pulls the left neighbour's input (through scratch when in place).
  std::size_t p2pRing() {
    const std::size_t c = shape_.paramCount;
    if (n == 1) {
      if (!shape_.inPlace) add(recv, send, nullptr, c);
    } else if (!shape_.inPlace) {
      add(recv, peerSend(left), nullptr, c);
    } else {
      char* scratch = static_cast<char*>(scratch_.get());
      add(scratch, peerSend(left), nullptr, c);
      add(recv, scratch, nullptr, c);
    }
    return c * es;
  }
};

void CudaIpcCollective::buildRing() {
  const int n = n_, r = rank_;
  const int left = (r - 1 + n) % n, right = (r + 1) % n;
  ring_ = ipc::RingProgram{};
  ring_.type = type_;
  ring_.leftRank = left;
  ring_.rightRank = right;
  auto* mySync = static_cast<unsigned long long*>(sync_.get());
  ring_.counters = mySync + kRingCounters;
  if (n > 1) {
    ring_.fromLeft = mySync + kRingFromLeft;
    ring_.fromRight = mySync + kRingFromRight;
    ring_.toLeft = peerSync(left) + kRingFromRight;
    ring_.toRight = peerSync(right) + kRingFromLeft;
  }
  ring_.status = statusDev_;
  RingSteps steps{*this, ring_, shape_, scratch_, n, r, left, es_, static_cast<char*>(send_), static_cast<char*>(recv_)};
  std::size_t ringBytes = 0;
  switch (kind_) {
    case CollKind::kAllReduce: ringBytes = steps.allReduce(); break;
    case CollKind::kAllGather: ringBytes = steps.allGather(); break;
    case CollKind::kReduceScatter: ringBytes = steps.reduceScatter(); break;
    case CollKind::kAllToAll: ringBytes = steps.allToAll(); break;
    case CollKind::kBroadcast: ringBytes = steps.broadcast(); break;
    case CollKind::kP2PRing: ringBytes = steps.p2pRing(); break;
  }
  ringBlocks_ = gridFor(std::max<std::size_t>(ringBytes, 1) * std::max(1, n - 1));
}

void CudaIpcCollective::buildOneShot() {
  const int n = n_, r = rank_;
  const std::size_t es = es_;
  auto* mySync = static_cast<unsigned long long*>(sync_.get());
  useOneShot_ = false;
  const std::size_t bytes = shape_.paramCount * es;
  if (kind_ == CollKind::kAllReduce && n > 1 && algo_ != "ring") {
    if (bytes <= oneShotMax_) {
      useOneShot_ = true;
    } else if (algo_ == "oneshot") {
      throw ConfigError("FB_CUDA_ALGO=oneshot: " + std::to_string(bytes) + " B is larger than FB_CUDA_ONESHOT_MAX (" +
                        std::to_string(oneShotMax_) + " B)");
    }
  }
  // LL (flags inside the data) for the smallest messages; not from CUDA graphs, whose
  // replays would repeat the flags.
  const std::size_t llBytes = (bytes + 7) / 8 * 8;
  if (algo_ == "ll" && (!useOneShot_ || 2 * llBytes > oneShotMax_))
    throw ConfigError("FB_CUDA_ALGO=ll: " + std::to_string(bytes) + " B needs 2x that in a staging cell of " +
                      std::to_string(oneShotMax_) + " B (FB_CUDA_ONESHOT_MAX)");
  useLL_ = useOneShot_ && !opts_.cudaGraph && 2 * llBytes <= oneShotMax_ &&
           (algo_ == "ll" || (algo_ == "auto" && bytes <= llMax_));
  if (useOneShot_) {
    one_ = ipc::OneShotProgram{};
    one_.type = type_;
    one_.nRanks = n;
    one_.rank = r;
    one_.input = send_;
    one_.output = recv_;
    one_.count = shape_.paramCount;
    one_.maxBytes = oneShotMax_;
    for (int q = 0; q < n; ++q) {
      one_.staging[q] = peers_.at(q, kBufStaging);
      one_.flags[q] = peerSync(q) + kOneShotFlags;
    }
    one_.counters = mySync + kOneShotCounters;
    one_.status = statusDev_;
    oneBlocks_ = std::clamp(ceilDiv(std::max<std::size_t>(bytes, 1), 16 << 10), 1, std::min(maxBlocks_, 64));
    if (useLL_)  // two 8-byte chunks per thread
      oneBlocks_ = std::clamp(ceilDiv(std::max<std::size_t>(llBytes / 8, 1), 2 * kThreads), 1, std::min(maxBlocks_, 64));
    if (blocksOverride_ > 0) oneBlocks_ = std::min(blocksOverride_, maxBlocks_);
  }
}

void CudaIpcCollective::buildPrograms() {
  buildRing();
  buildOneShot();
  program_ = useLL_ ? CudaProgram::kOneShotLL : useOneShot_ ? CudaProgram::kOneShot : CudaProgram::kRing;
  lastAlgo_ = useLL_ ? "one-shot LL (8 B + flags in 16 B lines pushed to peers, local sum)"
            : useOneShot_ ? "one-shot (push to peers' staging, local sum)"
                          : "ring (pull from left neighbour, " + std::to_string(ring_.nSteps) + " steps, " +
                                std::to_string(ringBlocks_) + " blocks)";
}

}  // namespace fb::cudaipc::detail

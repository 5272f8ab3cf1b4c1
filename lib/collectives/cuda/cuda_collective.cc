#include "collectives/cuda/cuda_collective.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include <cuda_runtime.h>

#include "bootstrap/agree.h"
#include "collectives/gpu_ops.h"
#include "core/error.h"
#include "core/units.h"
#include "kernels/fill_verify.h"
#include "kernels/reduce.h"
#include "topology/topology.h"
#include "gpu/cuda/cuda_ipc.h"
#include "gpu/cuda/p2p_check.h"

namespace fb::cudaipc {

namespace {

namespace k = ::fb::kernels;
namespace ipc = ::fb::kernels::ipc;

constexpr int kThreads = 512;
// Buffers shared through CUDA IPC are whole 2 MiB multiples: smaller cudaMalloc allocations
// can share driver memory, and CUDA IPC maps that memory as a whole.
constexpr std::size_t kMinAlloc = 2u << 20;

// Layout of the per-rank sync area (unsigned long long words).
constexpr std::size_t kRingFromLeft = 0;
constexpr std::size_t kRingFromRight = kRingFromLeft + ipc::kMaxBlocks;
constexpr std::size_t kRingCounters = kRingFromRight + ipc::kMaxBlocks;
constexpr std::size_t kOneShotCounters = kRingCounters + ipc::kMaxBlocks;
constexpr std::size_t kOneShotFlags = kOneShotCounters + ipc::kMaxBlocks;
constexpr std::size_t kSyncWords = kOneShotFlags + 2 * ipc::kMaxRanks * ipc::kMaxBlocks;

// Buffers exchanged with the peers, in this order.
enum BufIndex { kBufMain = 0, kBufScratch = 1, kBufSync = 2, kBufStaging = 3, kBufCount = 4 };

k::ElemType elemType(DataType t) {
  switch (t) {
    case DataType::kFloat32: return k::ElemType::kFloat32;
    case DataType::kFloat16: return k::ElemType::kFloat16;
    case DataType::kBFloat16: return k::ElemType::kBFloat16;
    default:
      throw ConfigError("cuda: dtype " + std::string(dtypeName(t)) +
                        " is not supported (float32, float16, bfloat16)");
  }
}

std::size_t envSize(const char* name, std::size_t dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  try {
    return parseSize(v);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(name) + ": " + e.what());
  }
}

std::string envString(const char* name, const std::string& dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : dflt;
}

int ceilDiv(std::size_t a, std::size_t b) { return static_cast<int>((a + b - 1) / b); }

class CudaIpcCollective final : public Collective {
 public:
  CudaIpcCollective(CollKind kind, Bootstrap& bs, const CollectiveOptions& opts)
      : kind_(kind), bs_(bs), opts_(opts) {
    // Collective (every rank constructs its collective at the same point).
    localRank_ = bs_.localRank();
    algo_ = envString("FB_CUDA_ALGO", "auto");
    if (algo_ != "auto" && algo_ != "ring" && algo_ != "oneshot" && algo_ != "ll")
      throw ConfigError("FB_CUDA_ALGO must be auto, ring, oneshot or ll (got '" + algo_ + "')");
    oneShotMax_ = envSize("FB_CUDA_ONESHOT_MAX", 1 << 20);
    oneShotMax_ = (std::max<std::size_t>(oneShotMax_, 256) + 255) / 256 * 256;
    // LL lines carry 8 payload bytes in 16: the message must fit in half a staging cell.
    llMax_ = std::min(envSize("FB_CUDA_LL_MAX", 512 << 10), oneShotMax_ / 2);
    if (algo_ == "ll" && opts_.cudaGraph)
      throw ConfigError("FB_CUDA_ALGO=ll cannot run from a CUDA graph (each launch needs a new flag)");
    blocksOverride_ = static_cast<int>(envSize("FB_CUDA_BLOCKS", 0));
    if (blocksOverride_ > ipc::kMaxBlocks)
      throw ConfigError("FB_CUDA_BLOCKS must be at most " + std::to_string(ipc::kMaxBlocks));
  }

  ~CudaIpcCollective() override {
    if (device_ >= 0) {
      cudaSetDevice(device_);
      // Let in-flight work end (bounded: kernels give up on their own time-out).
      if (stream_) waitStream(stream_, Deadline::in(std::chrono::seconds(30)));
      if (graphExec_) cudaGraphExecDestroy(graphExec_);
      peers_.closeAll();
      if (start_) cudaEventDestroy(start_);
      if (stop_) cudaEventDestroy(stop_);
      if (stream_) cudaStreamDestroy(stream_);
      if (status_) cudaFreeHost(status_);
      if (hostWrong_) cudaFreeHost(hostWrong_);
    }
  }

  std::string impl() const override { return "cuda"; }

  PathInfo path() const override {
    PathInfo p;
    p.label = pathLabel_.empty() ? "cuda-ipc" : pathLabel_;
    p.details = pathDetails_;
    if (!nominalBasis_.empty()) p.setNominal(nominal_, nominalBasis_);
    p.details.emplace_back("algorithm", lastAlgo_);
    return p;
  }

  void prepare(const CollShape& shape) override {
    // Local work first; then every rank learns whether any rank failed, before the collective
    // steps (so no rank waits in the bootstrap for one that gave up).
    agree(bs_, "cuda prepare", [&] {
      failHook("cuda-prepare", bs_.rank());
      if (device_ < 0) setupLocal(shape.nRanks);
      allocate(shape);
    });
    if (!shared_) setupShared();

    peers_.exchange(bs_, device_, {&main_, &scratch_, &sync_, &staging_});
    buildPrograms();
    invalidateGraph();
    // LL lines are recognized by their flag: no stale line (other data, an older shape) may
    // hold this launch's flag. Peers write here only after the barrier below.
    if (useLL_) FB_CUDA_CHECK(cudaMemsetAsync(staging_.get(), 0, staging_.bytes(), stream_));
    FB_CUDA_CHECK(k::fillPattern(send_, kdtype(), shape.sendCount, rank_, 1, stream_, shape.op));
    FB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    // Nobody starts reading a peer's buffers before every peer has filled them.
    bs_.barrier();
  }

  void allocate(const CollShape& shape) {
    FB_CUDA_CHECK(cudaSetDevice(device_));
    shape_ = shape;
    type_ = elemType(shape.dtype);
    es_ = k::elemSize(type_);
    FB_ENFORCE_EQ(shape.nRanks, n_, "shape rank count vs bootstrap");

    // Main buffer: send and receive (one buffer when in place).
    const std::size_t sendB = shape.sendCount * es_, recvB = shape.recvCount * es_;
    std::size_t mainNeed, recvOff = 0;
    if (shape.inPlace) {
      mainNeed = std::max(sendB, recvB);
    } else {
      recvOff = (sendB + 255) / 256 * 256;
      mainNeed = recvOff + recvB;
    }
    grow(main_, mainNeed);
    char* base = static_cast<char*>(main_.get());
    sendOff_ = shape.inPlace ? shape.sendInPlaceOffset(rank_) * es_ : 0;
    recvOff_ = shape.inPlace ? shape.recvInPlaceOffset(rank_) * es_ : recvOff;
    send_ = base + sendOff_;
    recv_ = base + recvOff_;
    // Scratch: ReduceScatter's two partial-sum slots; in-place P2P staging.
    std::size_t scratchNeed = 0;
    if (kind_ == CollKind::kReduceScatter) scratchNeed = 2 * ((shape.paramCount * es_ + 255) / 256 * 256);
    if (kind_ == CollKind::kP2PRing && shape.inPlace) scratchNeed = shape.sendCount * es_;
    grow(scratch_, scratchNeed);
  }

  double runBatch(int iters, Deadline deadline) override {
    FB_CUDA_CHECK(cudaSetDevice(device_));
    if (iters <= 0) return 0;
    std::memset(status_, 0, sizeof(*status_));
    setTimeouts(deadline);
    FB_CUDA_CHECK(cudaEventRecord(start_, stream_));
    if (opts_.cudaGraph) {
      if (!graphExec_ || graphIters_ != iters) captureGraph(iters);
      FB_CUDA_CHECK(cudaGraphLaunch(graphExec_, stream_));
    } else {
      for (int i = 0; i < iters; ++i) launchOne();
    }
    FB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    finish(stop_, deadline, std::to_string(iters) + " timed operations");
    float ms = 0;
    FB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

  // --per-op: an event after every operation on the stream (no graph, no host sync between
  // operations); operation i's time is event i-1 → event i.
  std::vector<double> runPerOp(int iters, Deadline deadline) override {
    FB_CUDA_CHECK(cudaSetDevice(device_));
    if (iters <= 0) return {};
    std::memset(status_, 0, sizeof(*status_));
    setTimeouts(deadline);
    return gpuops::timeEachOp(stream_, iters, [&](int) { launchOne(); }, [&](cudaEvent_t last) {
      finish(last, deadline, std::to_string(iters) + " operations timed one by one");
    });
  }

  std::int64_t check(int seed, Deadline deadline) override {
    FB_CUDA_CHECK(cudaSetDevice(device_));
    std::memset(status_, 0, sizeof(*status_));
    setTimeouts(deadline);
    // Poison what the operation must overwrite, then write this round's input.
    // In place, the input lies inside the output: poison the output first when it is larger.
    if (!shape_.inPlace || shape_.recvCount > shape_.sendCount)
      FB_CUDA_CHECK(k::fillValue(recv_, kdtype(), shape_.recvCount, NAN, stream_));
    FB_CUDA_CHECK(k::fillPattern(send_, kdtype(), shape_.sendCount, rank_, seed, stream_, shape_.op));
    if (!waitStream(stream_, deadline)) FB_THROW(TimeoutError, "cuda: filling the check input timed out");
    bs_.barrier();  // every input is in place before anyone reads a peer's
    launchOne();
    FB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    finish(stop_, deadline, "the checked operation");
    bs_.barrier();  // nobody reads my buffers any more
    return gpuops::countWrongOnGpu(recv_, shape_.recvCount, kdtype(), corrupt_, verifySpec(shape_, rank_, seed),
                                   wrongDev(), hostWrong_, stream_, [&] {
                                     if (!waitStream(stream_, deadline))
                                       FB_THROW(TimeoutError, "cuda: counting wrong elements timed out");
                                   });
  }

 private:
  // No bootstrap calls here (see prepare).
  void setupLocal(int nRanks) {
    n_ = bs_.size();
    rank_ = bs_.rank();
    if (nRanks != n_) FB_THROW(Error, "cuda: shape for ", nRanks, " ranks, bootstrap has ", n_);
    if (n_ > ipc::kMaxRanks)
      throw UnavailableError("cuda: at most " + std::to_string(ipc::kMaxRanks) + " ranks (one node), got " +
                             std::to_string(n_));
    device_ = selectDevice(localRank_);
    FB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    FB_CUDA_CHECK(cudaEventCreate(&start_));
    FB_CUDA_CHECK(cudaEventCreate(&stop_));
    FB_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&status_), sizeof(ipc::KernelStatus), cudaHostAllocMapped));
    FB_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&statusDev_), status_, 0));
    FB_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&hostWrong_), sizeof(unsigned long long)));
    sync_ = DeviceBuffer((kSyncWords * sizeof(unsigned long long) + 256 + kMinAlloc - 1) / kMinAlloc * kMinAlloc);
    FB_CUDA_CHECK(cudaMemset(sync_.get(), 0, sync_.bytes()));
    staging_ = DeviceBuffer((std::max(kMinAlloc, kind_ == CollKind::kAllReduce ? 2 * n_ * oneShotMax_ : 0) +
                             kMinAlloc - 1) / kMinAlloc * kMinAlloc);
    FB_CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device_));
  }

  // Collective part of the first prepare: every rank calls it.
  void setupShared() {
    if (bs_.nodeCount() != 1) throw UnavailableError("cuda: CUDA IPC needs every rank on one node");
    // Same grid on every rank: the smallest multiprocessor count.
    maxBlocks_ = static_cast<int>(-bs_.allReduceMax(-static_cast<double>(sms_)));
    maxBlocks_ = std::clamp(maxBlocks_, 1, ipc::kMaxBlocks);
    describePath();
    shared_ = true;
  }

  void describePath() {
    // Which GPUs, and what CUDA says about the pairs (seen from this rank).
    std::string bus = pciBusId(device_);
    auto buses = bs_.allGatherStrings(bus);
    int left = (rank_ - 1 + n_) % n_, right = (rank_ + 1) % n_;
    pathDetails_.clear();
    pathDetails_.emplace_back("gpu", deviceName(device_) + " " + bus);
    int nvis = 0;
    cudaGetDeviceCount(&nvis);
    std::string attrs;
    bool allAtomics = n_ > 1;
    for (int q : {left, right}) {
      if (q == rank_) continue;
      int peerDev = -1;
      for (int d = 0; d < nvis; ++d)
        if (pciBusId(d) == buses[q]) peerDev = d;
      if (peerDev < 0 || peerDev == device_) {
        allAtomics = false;
        continue;
      }
      int access = 0, rank = 0, atomics = 0;
      cudaDeviceGetP2PAttribute(&access, cudaDevP2PAttrAccessSupported, device_, peerDev);
      cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, device_, peerDev);
      cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, device_, peerDev);
      cudaGetLastError();
      allAtomics = allAtomics && atomics;
      attrs += (attrs.empty() ? "" : "; ") + buses[q] + ": access=" + std::to_string(access) +
               " perf_rank=" + std::to_string(rank) + " native_atomics=" + std::to_string(atomics);
    }
    if (!attrs.empty()) pathDetails_.emplace_back("p2p_attributes", attrs);
    pathDetails_.emplace_back("ranks_gpus", [&] {
      std::string s;
      for (int r = 0; r < n_; ++r) s += (r ? " " : "") + std::to_string(r) + ":" + buses[r];
      return s;
    }());
    // % of nominal: NVLink links x rate to the ring neighbours, else the GPU's PCIe gen x width.
    if (n_ > 1) {
      std::vector<std::string> neighbours;
      for (int q : {left, right})
        if (q != rank_) neighbours.push_back(buses[q]);
      auto nominal = topo::gpuPeerNominal(topo::localTopology(), bus, neighbours);
      nominal_ = nominal.gbps;
      nominalBasis_ = nominal.basis;
    }
    // Native peer atomics are an NVLink property on current GPUs (PCIe P2P has none).
    pathLabel_ = n_ == 1 ? "cuda local" : allAtomics ? "CUDA IPC P2P (NVLink: native atomics)" : "CUDA IPC P2P";
  }

  void grow(DeviceBuffer& b, std::size_t need) {
    need = std::max(need, kMinAlloc);
    if (b.get() && b.bytes() >= need) return;
    b.reset();
    // Round up so a sweep reallocates (and re-maps) rarely.
    std::size_t cap = kMinAlloc;
    while (cap < need) cap *= 2;
    b = DeviceBuffer(cap);
  }

  char* peerMain(int r) const { return static_cast<char*>(peers_.at(r, kBufMain)); }
  char* peerScratch(int r) const { return static_cast<char*>(peers_.at(r, kBufScratch)); }
  unsigned long long* peerSync(int r) const { return static_cast<unsigned long long*>(peers_.at(r, kBufSync)); }
  unsigned long long* wrongDev() { return static_cast<unsigned long long*>(sync_.get()) + kSyncWords; }

  int gridFor(std::size_t bytes) const {
    if (blocksOverride_ > 0) return std::min(blocksOverride_, maxBlocks_);
    return std::clamp(ceilDiv(bytes, 16 << 10), 1, maxBlocks_);
  }

  // The ring program's steps on this rank, one method per collective: the names are the
  // collective's own (shape_, send, recv, peers), so each step list reads as the algorithm. Each
  // method returns the bytes one ring step moves (the grid is sized from it).
  struct RingSteps {
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

  // ring_: the per-rank step list of kind_ and its grid.
  void buildRing() {
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

  // one_, useOneShot_ and useLL_: the one-shot AllReduce (and its LL form) where it applies.
  void buildOneShot() {
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

  void buildPrograms() {
    buildRing();
    buildOneShot();
    lastAlgo_ = useLL_ ? "one-shot LL (8 B + flags in 16 B lines pushed to peers, local sum)"
              : useOneShot_ ? "one-shot (push to peers' staging, local sum)"
                            : "ring (pull from left neighbour, " + std::to_string(ring_.nSteps) + " steps, " +
                                  std::to_string(ringBlocks_) + " blocks)";
  }

  k::KDtype kdtype() const { return static_cast<k::KDtype>(shape_.dtype); }

  void setTimeouts(Deadline deadline) {
    long long ms = std::clamp<long long>(deadline.msLeft(), 1, 600'000);
    ring_.timeoutNs = static_cast<unsigned long long>(ms) * 1'000'000ull;
    one_.timeoutNs = ring_.timeoutNs;
  }

  void launchOne() {
    if (useLL_) {
      // Every rank launches the same operations in the same order: the flags agree.
      if (++llFlag_ == 0) ++llFlag_;
      one_.llFlag = llFlag_;
      FB_CUDA_CHECK(ipc::launchOneShotLL(one_, oneBlocks_, kThreads, stream_));
    } else if (useOneShot_) {
      FB_CUDA_CHECK(ipc::launchOneShot(one_, oneBlocks_, kThreads, stream_));
    } else if (ring_.nSteps > 0) {
      FB_CUDA_CHECK(ipc::launchRing(ring_, ringBlocks_, kThreads, stream_));
    }
  }

  void invalidateGraph() {
    if (graphExec_) cudaGraphExecDestroy(graphExec_);
    graphExec_ = nullptr;
    graphIters_ = 0;
  }

  void captureGraph(int iters) {
    invalidateGraph();
    cudaGraph_t g = nullptr;
    FB_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < iters; ++i) launchOne();
    FB_CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
    FB_CUDA_CHECK(cudaGraphInstantiate(&graphExec_, g, 0));
    cudaGraphDestroy(g);
    graphIters_ = iters;
  }

  // Waits for `ev` under the deadline; turns a kernel's own time-out into a clear error.
  void finish(cudaEvent_t ev, Deadline deadline, const std::string& what) {
    bool done = waitEvent(ev, deadline);
    if (status_->code != 0) {
      FB_THROW(TimeoutError, "cuda: ", what, ": block ", status_->block, " waited in vain for rank ", status_->peer,
               " (flag ", status_->observed, ", wanted ", status_->step, ") until its time-out; the peer is stuck, "
               "gone, or its P2P writes do not arrive");
    }
    if (!done)
      FB_THROW(TimeoutError, "cuda: ", what, " did not finish before the deadline (",
               std::to_string(n_), " ranks, ", shape_.bytes, " B)");
  }

  CollKind kind_;
  Bootstrap& bs_;
  CollectiveOptions opts_;
  std::string algo_;
  std::size_t oneShotMax_ = 0;
  int blocksOverride_ = 0;

  int n_ = 0, rank_ = 0, device_ = -1, maxBlocks_ = 1, sms_ = 0, localRank_ = 0;
  bool shared_ = false;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  ipc::KernelStatus* status_ = nullptr;
  ipc::KernelStatus* statusDev_ = nullptr;
  unsigned long long* hostWrong_ = nullptr;
  DeviceBuffer main_, scratch_, sync_, staging_;
  PeerMap peers_;
  std::string pathLabel_;
  std::vector<std::pair<std::string, std::string>> pathDetails_;
  std::string lastAlgo_ = "none";
  double nominal_ = -1;        // typed nominal rate (set in describePath)
  std::string nominalBasis_;

  CollShape shape_{};
  k::ElemType type_ = k::ElemType::kFloat32;
  std::size_t es_ = 4, sendOff_ = 0, recvOff_ = 0;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  ipc::RingProgram ring_{};
  ipc::OneShotProgram one_{};
  int ringBlocks_ = 1, oneBlocks_ = 1;
  bool useOneShot_ = false;
  bool useLL_ = false;
  unsigned llFlag_ = 0;      // the last LL launch's flag (host side; the same count on every rank)
  std::size_t llMax_ = 0;    // FB_CUDA_LL_MAX
  cudaGraphExec_t graphExec_ = nullptr;
  int graphIters_ = 0;
};

}  // namespace

std::string whyNot(const CollRequest& r) {
  if (r.dtype != DataType::kFloat32 && r.dtype != DataType::kFloat16 && r.dtype != DataType::kBFloat16)
    return "not supported: the cuda kernels move and reduce float32, float16 and bfloat16, not " +
           std::string(dtypeName(r.dtype));
  if (describe(r.kind).reduces && r.op != ReduceOp::kSum)
    return "not supported yet: the cuda reduction kernels sum only (-o " + std::string(opName(r.op)) + ")";
  return {};
}

std::unique_ptr<Collective> makeCollective(CollKind kind, Bootstrap& bs, const CollectiveOptions& opts) {
  return std::make_unique<CudaIpcCollective>(kind, bs, opts);
}

BackendStatus probe(Bootstrap* bs) {
  BackendStatus st{"cuda", true, false, ""};
  try {
    P2PCheckOptions o = p2pOptionsFromEnv();
    if (!bs || bs->size() == 1) {
      P2PReport r = checkLocalPairs(o);
      st.usable = r.gpus >= 1;  // one rank needs no peer
      std::string names;
      for (int d = 0; d < r.gpus; ++d) names += (d ? ", " : "") + deviceName(d) + " " + pciBusId(d);
      st.reason = r.gpus == 0 ? r.summary
                              : std::to_string(r.gpus) + " GPU" + (r.gpus == 1 ? "" : "s") + " (" + names + "); " +
                                    r.summary;
      return st;
    }
    if (bs->nodeCount() != 1) {
      st.reason = "CUDA IPC needs every rank on one node; this job spans " + std::to_string(bs->nodeCount()) + " nodes";
      return st;
    }
    P2PReport r = checkRanks(*bs, o);
    st.usable = r.ok;
    st.reason = r.summary;
  } catch (const std::exception& e) {
    st.usable = false;
    st.reason = e.what();
  }
  return st;
}

}  // namespace fb::cudaipc

// The cuda collective's class (ring and one-shot programs over CUDA IPC), shared by its run-time
// (cuda_collective.cc: buffers, peers, launches, checks) and its programs (cuda_programs.cc: the
// ring's step lists and the one-shot AllReduce). Internal to lib/collectives/cuda; kernels in
// kernels/.
#pragma once
#include "collectives/cuda/cuda_collective.h"
#include "collectives/cuda/cuda_program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>

#include <cuda_runtime.h>

#include "bootstrap/agree.h"
#include "collectives/gpu_ops.h"
#include "core/error.h"
#include "core/units.h"
#include "kernels/fill_verify.h"
#include "kernels/reduce.h"
#include "topology/nvml.h"
#include "topology/topology.h"
#include "gpu/cuda/cuda_ipc.h"
#include "gpu/cuda/p2p_check.h"

namespace fb::cudaipc::detail {

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

inline k::ElemType elemType(DataType t) {
  switch (t) {
    case DataType::kFloat32: return k::ElemType::kFloat32;
    case DataType::kFloat16: return k::ElemType::kFloat16;
    case DataType::kBFloat16: return k::ElemType::kBFloat16;
    default:
      throw ConfigError("cuda: dtype " + std::string(dtypeName(t)) +
                        " is not supported (float32, float16, bfloat16)");
  }
}

inline std::size_t envSize(const char* name, std::size_t dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  try {
    return parseSize(v);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(name) + ": " + e.what());
  }
}

inline std::string envString(const char* name, const std::string& dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : dflt;
}

inline int ceilDiv(std::size_t a, std::size_t b) { return static_cast<int>((a + b - 1) / b); }

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

  PathInfo path() const override;

  void prepare(const CollShape& shape) override;

  void allocate(const CollShape& shape);

  double runBatch(int iters, Deadline deadline) override;

  // --per-op: an event after every operation on the stream (no graph, no host sync between
  // operations); operation i's time is event i-1 → event i.
  std::vector<double> runPerOp(int iters, Deadline deadline) override;

  std::int64_t check(int seed, Deadline deadline) override;
  void afterTiming() override;  // this rank's SM clock read after the size's batches (sm_clock_MHz)

 private:
  // No bootstrap calls here (see prepare).
  void setupLocal(int nRanks);

  // Collective part of the first prepare: every rank calls it.
  void setupShared();

  void describePath();

  void grow(DeviceBuffer& b, std::size_t need);

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
  struct RingSteps;  // defined in cuda_programs.cc

  // ring_: the per-rank step list of kind_ and its grid.
  void buildRing();

  // one_, useOneShot_ and useLL_: the one-shot AllReduce (and its LL form) where it applies.
  void buildOneShot();

  void buildPrograms();

  k::KDtype kdtype() const { return static_cast<k::KDtype>(shape_.dtype); }

  void setTimeouts(Deadline deadline) {
    long long ms = std::clamp<long long>(deadline.msLeft(), 1, 600'000);
    ring_.timeoutNs = static_cast<unsigned long long>(ms) * 1'000'000ull;
    one_.timeoutNs = ring_.timeoutNs;
  }

  void launchOne();

  void invalidateGraph() {
    if (graphExec_) cudaGraphExecDestroy(graphExec_);
    graphExec_ = nullptr;
    graphIters_ = 0;
  }

  void captureGraph(int iters);

  // Waits for `ev` under the deadline; turns a kernel's own time-out into a clear error.
  void finish(cudaEvent_t ev, Deadline deadline, const std::string& what);

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
  std::string busId_, smClock_;  // the GPU's PCI bus id; its SM clock after the last size's batches
  std::string lastAlgo_ = "none";
  std::optional<CudaProgram> program_;  // the last size's program (none before the first prepare)
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

}  // namespace fb::cudaipc::detail

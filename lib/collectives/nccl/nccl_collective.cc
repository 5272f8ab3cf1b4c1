#include "collectives/nccl/nccl_collective.h"
#include "collectives/nccl/nccl_attestation.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "collectives/gpu_ops.h"
#include "core/error.h"
#include "kernels/fill_verify.h"
#include "topology/nvml.h"
#include "topology/topology.h"
#include "gpu/nccl/nccl_comm.h"
#include "gpu/pci_bus_id.h"
#include "gpu/nccl/path_profile.h"

namespace fb::nccl {
namespace {

static_assert(static_cast<int>(DataType::kFloat32) == static_cast<int>(kernels::KDtype::kFloat32));
static_assert(static_cast<int>(DataType::kFloat64) == static_cast<int>(kernels::KDtype::kFloat64));
static_assert(static_cast<int>(DataType::kInt32) == static_cast<int>(kernels::KDtype::kInt32));
static_assert(static_cast<int>(DataType::kFloat16) == static_cast<int>(kernels::KDtype::kFloat16));
static_assert(static_cast<int>(DataType::kBFloat16) == static_cast<int>(kernels::KDtype::kBFloat16));

constexpr double kPoison = 1000.0;  // never a result: |expected| <= 4 * nRanks

ncclDataType_t ncclType(DataType t) {
  switch (t) {
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    case DataType::kInt32: return ncclInt32;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kProd: return ncclProd;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kAvg: return ncclAvg;
  }
  return ncclSum;
}

// Process-wide communicators, one per path, shared by the collectives of that path.
std::mutex gCommMutex;
std::map<std::string, std::weak_ptr<NcclComm>> gComms;

std::shared_ptr<NcclComm> commFor(Bootstrap& bs, int device, const PathProfile& profile, const std::string& logDir) {
  // Key by rank too: in tests ranks are threads of one process. The lock is not held while
  // the communicator is created (a collective call: other ranks' threads need the map).
  std::string key = profile.name + "#" + std::to_string(bs.rank());
  {
    std::lock_guard<std::mutex> lock(gCommMutex);
    if (auto c = gComms[key].lock()) return c;
  }
  auto c = std::make_shared<NcclComm>(bs, device, profile, logDir, Deadline::in(kSetupTimeout));
  std::lock_guard<std::mutex> lock(gCommMutex);
  gComms[key] = c;
  return c;
}


class NcclCollective : public Collective {
 public:
  NcclCollective(CollKind kind, Bootstrap& bs, const CollectiveOptions& opts, const PathProfile& profile)
      : kind_(kind), bs_(bs), opts_(opts), profile_(profile) {
    if (bs.size() < 2 && profile.name != "local")
      FB_THROW(UnavailableError, "nccl path ", profile.name, ": needs at least 2 ranks (one GPU each) to use a fabric");
    if (bs.size() > 1 && profile.name == "local")
      FB_THROW(UnavailableError, "nccl path local: one rank only (", bs.size(), " ranks use a fabric: choose its path)");
    device_ = deviceForLocalRank(bs.localRank());
    FB_CUDA_CHECK(cudaSetDevice(device_));
    comm_ = commFor(bs, device_, profile, opts.logDir);
    FB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    FB_CUDA_CHECK(cudaEventCreate(&start_));
    FB_CUDA_CHECK(cudaEventCreate(&stop_));
    FB_CUDA_CHECK(cudaMalloc(&devWrong_, sizeof(unsigned long long)));
    // One small operation of this kind makes NCCL connect (it connects lazily), so the path is
    // attested before anything is measured.
    prepare(makeShape(kind, DataType::kFloat32, 4096 * static_cast<std::size_t>(bs.size()), bs.size(), false));
  }

  ~NcclCollective() override {
    cudaSetDevice(device_);
    if (!comm_->aborted()) cudaStreamSynchronize(stream_);
    dropGraphs();
    release(send_);
    release(recv_);
    if (devWrong_) cudaFree(devWrong_);
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string impl() const override { return "nccl"; }
  PathInfo path() const override { return path_; }

  void prepare(const CollShape& shape) override {
    FB_ENFORCE(shape.kind == kind_, "shape for another collective: ", collName(shape.kind));
    FB_ENFORCE_EQ(shape.nRanks, bs_.size(), "shape rank count");
    FB_CUDA_CHECK(cudaSetDevice(device_));
    FB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    dropGraphs();
    shape_ = shape;
    const std::size_t elt = dtypeSize(shape.dtype);
    // Buffers moved (the default; --reuse-buffers keeps one): nccl-tests' startColl moves operation
    // i's send and receive pointers by shift = S * (i % steps), S = max(send, receive bytes), steps = maxbytes / S
    // with maxbytes its -e, so consecutive operations do not find their data in the GPU's L2 (60 MB
    // on H200). The same here, with the sweep's largest size as maxbytes (at least S; 1 GiB when the
    // sweep gives none, --counts), so a sweep to -e 16M is as cache-warm as nccl-tests' -e 16M.
    // Operation i restarts at 0 in every batch, as nccl-tests' iteration index does; the warm-up and
    // the check use shift 0.
    const std::size_t total = std::max(shape.sendCount, shape.recvCount) * elt;
    const std::size_t span = std::max(opts_.rotateSpan > 0 ? opts_.rotateSpan : kDefaultRotateSpan, total);
    steps_ = opts_.rotateBuffers && total > 0 ? span / total : 1;
    shiftBytes_ = total;
    // Operation i < rotateOps of a batch sits where nccl-tests puts it (positions past rotateOps are never reached).
    positions_ = std::min<std::size_t>(steps_, std::max<std::size_t>(opts_.rotateOps, 1));
    // Moved buffers are allocated once at the sweep's largest extent (span: nccl-tests' maxbytes, which
    // it allocates once), so every size runs on the same memory instead of a fresh allocation per size.
    const std::size_t extent = opts_.rotateBuffers ? std::max(span, total * positions_) : total * positions_;
    if (shape.inPlace) {
      ensure(&recv_, &recvCap_, extent);
      sendPtr_ = static_cast<char*>(recv_) + shape.sendInPlaceOffset(bs_.rank()) * elt;
      recvPtr_ = static_cast<char*>(recv_) + shape.recvInPlaceOffset(bs_.rank()) * elt;
    } else {
      ensure(&send_, &sendCap_, extent);
      ensure(&recv_, &recvCap_, extent);
      sendPtr_ = send_;
      recvPtr_ = recv_;
    }
    fill(0);
    // Warm-up op at this size: NCCL may connect another algorithm's channels now.
    // Our profiler plugin records NCCL's algorithm/protocol/channels for this one operation only.
    armProfiler(true);
    try {
      FB_CUDA_CHECK(cudaEventRecord(start_, stream_));
      enqueue();
      FB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    } catch (...) {
      armProfiler(false);
      throw;
    }
    armProfiler(false);
    comm_->wait(stop_, Deadline::in(kSetupTimeout), "nccl warm-up");
    attest();
    path_.details.emplace_back(
        "buffers", steps_ > 1 ? fmt::format("moved by {} B per operation, position i % {} of a batch's operation i, "
                                            "as nccl-tests with -e {}", shiftBytes_, steps_, shiftBytes_ * steps_)
        : opts_.rotateBuffers ? std::string("one position: the size is the sweep's largest, as in nccl-tests")
                              : std::string("one copy reused by every operation (--reuse-buffers): cache-warm when "
                                            "it fits in the GPU's L2"));
    path_.details.emplace_back("buffer_alloc", ncclMem_ ? "ncclMemAlloc (as nccl-tests)" : "cudaMalloc");
  }

  double runBatch(int iters, Deadline deadline) override {
    FB_CUDA_CHECK(cudaSetDevice(device_));
    if (opts_.cudaGraph) {
      cudaGraphExec_t exec = graphFor(iters);
      FB_CUDA_CHECK(cudaEventRecord(start_, stream_));
      FB_CUDA_CHECK(cudaGraphLaunch(exec, stream_));
      FB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    } else {
      FB_CUDA_CHECK(cudaEventRecord(start_, stream_));
      for (int i = 0; i < iters; ++i) enqueue(i);
      FB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    }
    comm_->checkAsync("nccl batch");
    comm_->wait(stop_, deadline, "nccl batch");
    float ms = 0;
    FB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

  // This rank's SM clock, read right after the size's timed batches (not during them): the H100 host
  // idles at 345 MHz of 1980, and a copy by a few SMs (a one-rank SendRecv) runs at the SM clock.
  void afterTiming() override {
    if (busId_.empty()) busId_ = gpu::pciBusId(device_);  // "" (asked again next size) when CUDA cannot say
    path_.details.emplace_back("sm_clock_MHz", topo::smClockText(topo::systemNvmlSession(), busId_));
  }

  // --per-op: an event after every operation on the stream (no graph, no host sync between
  // operations); operation i's time is event i-1 → event i (nccl-tests' loop under --timer nccl-tests).
  std::vector<double> runPerOp(int iters, Deadline deadline) override {
    FB_CUDA_CHECK(cudaSetDevice(device_));
    return gpuops::timeEachOp(
        stream_, iters, [&](int i) { enqueue(i); },
        [&](cudaEvent_t last) {
          comm_->checkAsync("nccl per-op batch");
          comm_->wait(last, deadline, "nccl per-op batch");
        },
        opts_.ncclTestsLoop, device_);
  }

  std::int64_t check(int seed, Deadline deadline) override {
    FB_CUDA_CHECK(cudaSetDevice(device_));
    fill(seed);
    enqueue();
    FB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    comm_->wait(stop_, deadline, "nccl check");
    unsigned long long wrong = 0;
    return gpuops::countWrongOnGpu(recvPtr_, shape_.recvCount, static_cast<kernels::KDtype>(shape_.dtype), corrupt_,
                                   verifySpec(shape_, bs_.rank(), seed), devWrong_, &wrong, stream_, [&] {
                                     FB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
                                     comm_->wait(stop_, deadline, "nccl check (count wrong on GPU)");
                                   });
  }

 private:
  // Buffers come from ncclMemAlloc (cuMem, NCCL's granularity) as nccl-tests allocates them with
  // NCCL >= 2.19 (src/common.cu AllocateBuffs), so both tools run on the same kind of memory; plain
  // cudaMalloc when NCCL has no ncclMemAlloc or it fails (then for every buffer of this collective).
  void ensure(void** buf, std::size_t* cap, std::size_t bytes) {
    bytes = std::max<std::size_t>(bytes, 256);
    if (*buf && *cap >= bytes) return;
    release(*buf);
    *buf = nullptr;
    *cap = 0;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 19, 0)
    if (ncclMem_) {
      if (ncclMemAlloc(buf, bytes) == ncclSuccess) {
        ncclBufs_.insert(*buf);
      } else {
        *buf = nullptr;
        ncclMem_ = false;
      }
    }
#else
    ncclMem_ = false;
#endif
    if (!*buf) FB_CUDA_CHECK(cudaMalloc(buf, bytes));
    FB_CUDA_CHECK(cudaMemset(*buf, 0, bytes));  // positions other than 0 (--rotate-buffers) hold zeros
    *cap = bytes;
  }
  void release(void* buf) {
    if (!buf) return;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 19, 0)
    if (ncclBufs_.erase(buf)) {
      ncclMemFree(buf);
      return;
    }
#endif
    cudaFree(buf);
  }

  // Poison the output, then write pattern(seed) into the input (in-place: the input lies
  // inside the output buffer, so poison first).
  void fill(int seed) {
    auto kt = static_cast<kernels::KDtype>(shape_.dtype);
    bool poisonOut = !shape_.inPlace || shape_.recvCount > shape_.sendCount;
    if (poisonOut) FB_CUDA_CHECK(kernels::fillValue(recv_, kt, shape_.recvCount, kPoison, stream_));
    FB_CUDA_CHECK(kernels::fillPattern(sendPtr_, kt, shape_.sendCount, bs_.rank(), seed, stream_, shape_.op));
  }

  void enqueue(int i = 0) {
    const std::size_t shift = shiftBytes_ * ((static_cast<std::size_t>(i) % steps_) % positions_);
    void* sp = static_cast<char*>(sendPtr_) + shift;
    void* rp = static_cast<char*>(recvPtr_) + shift;
    ncclComm_t c = comm_->get();
    ncclDataType_t t = ncclType(shape_.dtype);
    const std::size_t count = shape_.paramCount;
    switch (kind_) {
      case CollKind::kAllReduce:
        FB_NCCL_CHECK(ncclAllReduce(sp, rp, count, t, ncclOp(shape_.op), c, stream_), c);
        break;
      case CollKind::kAllGather:
        FB_NCCL_CHECK(ncclAllGather(sp, rp, count, t, c, stream_), c);
        break;
      case CollKind::kReduceScatter:
        FB_NCCL_CHECK(ncclReduceScatter(sp, rp, count, t, ncclOp(shape_.op), c, stream_), c);
        break;
      case CollKind::kAllToAll: {  // as nccl-tests: one send and one receive per peer, in one group
        const int n = bs_.size();
        const std::size_t blockBytes = count * dtypeSize(shape_.dtype);
        FB_NCCL_CHECK(ncclGroupStart());
        for (int p = 0; p < n; ++p) {
          FB_NCCL_CHECK(ncclSend(static_cast<const char*>(sp) + p * blockBytes, count, t, p, c, stream_), c);
          FB_NCCL_CHECK(ncclRecv(static_cast<char*>(rp) + p * blockBytes, count, t, p, c, stream_), c);
        }
        FB_NCCL_CHECK(ncclGroupEnd(), c);
        break;
      }
      case CollKind::kBroadcast:
        FB_NCCL_CHECK(ncclBroadcast(sp, rp, count, t, shape_.root, c, stream_), c);
        break;
      case CollKind::kP2PRing: {
        const int n = bs_.size(), r = bs_.rank();
        FB_NCCL_CHECK(ncclGroupStart());
        FB_NCCL_CHECK(ncclSend(sp, count, t, (r + 1) % n, c, stream_), c);
        FB_NCCL_CHECK(ncclRecv(rp, count, t, (r - 1 + n) % n, c, stream_), c);
        FB_NCCL_CHECK(ncclGroupEnd(), c);
        break;
      }
    }
  }

  cudaGraphExec_t graphFor(int iters) {
    auto it = graphs_.find(iters);
    if (it != graphs_.end()) return it->second;
    cudaGraph_t g = nullptr;
    FB_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      for (int i = 0; i < iters; ++i) enqueue(i);
    } catch (...) {
      cudaStreamEndCapture(stream_, &g);
      if (g) cudaGraphDestroy(g);
      throw;
    }
    FB_CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
    cudaGraphExec_t exec = nullptr;
    FB_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    cudaGraphDestroy(g);
    // Upload now so the first timed launch does not pay for it.
    FB_CUDA_CHECK(cudaGraphUpload(exec, stream_));
    FB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    graphs_[iters] = exec;
    return exec;
  }

  void dropGraphs() {
    for (auto& [n, e] : graphs_) cudaGraphExecDestroy(e);
    graphs_.clear();
  }

  // The path as NCCL's log attests it, after this size's warm-up (nccl_attestation.cc).
  void attest() { path_ = attestPath(bs_, opts_, profile_, device_, *comm_, shape_); }

  CollKind kind_;
  Bootstrap& bs_;
  CollectiveOptions opts_;
  PathProfile profile_;
  int device_ = -1;
  std::string busId_;           // the GPU's PCI bus id (NVML's clock reader finds the GPU by it)
  std::shared_ptr<NcclComm> comm_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  unsigned long long* devWrong_ = nullptr;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  std::size_t sendCap_ = 0, recvCap_ = 0;
  void* sendPtr_ = nullptr;
  void* recvPtr_ = nullptr;
  bool ncclMem_ = true;         // buffers from ncclMemAlloc (false: cudaMalloc; see ensure)
  std::set<void*> ncclBufs_;    // the buffers ncclMemAlloc gave (freed with ncclMemFree)
  std::size_t steps_ = 1;       // buffer positions (--rotate-buffers): operation i at shift (i % steps_)
  std::size_t positions_ = 1;   // ... of which the first min(steps_, rotateOps) are reached
  std::size_t shiftBytes_ = 0;  // ... times this (nccl-tests: max(send, receive bytes))
  static constexpr std::size_t kDefaultRotateSpan = std::size_t(1) << 30;
  CollShape shape_{};
  std::map<int, cudaGraphExec_t> graphs_;
  PathInfo path_;
};

}  // namespace

std::vector<std::string> availablePaths(Bootstrap& bs) {
  std::vector<std::string> mine;
  int nDev = 0;
  if (cudaGetDeviceCount(&nDev) != cudaSuccess) {
    cudaGetLastError();
    nDev = 0;
  }
  const int localSize = bs.localSize();
  const int nodes = bs.nodeCount();
  if (nDev > 0 && bs.size() == 1) mine.push_back("local");
  if (nDev > 0 && bs.size() >= 2 && nodes > 1) {
    // More than one node: the training job's path, nothing forced (the isolating profiles are
    // there for --path socket|ib|roce|... by name).
    mine.push_back("training");
  } else if (nDev > 0 && bs.size() >= 2) {
    const auto& t = topo::localTopology();
    if (nodes == 1 && localSize <= nDev) {
      // The devices the local ranks use, as nvidia-smi indices.
      std::vector<int> idx;
      for (int lr = 0; lr < localSize; ++lr) {
        const auto* g = smiGpuFor(lr % nDev);
        idx.push_back(g ? g->index : -1);
      }
      bool allNv = true, allP2p = true;
      for (std::size_t a = 0; a < idx.size(); ++a)
        for (std::size_t b = a + 1; b < idx.size(); ++b) {
          if (idx[a] < 0 || idx[b] < 0) allNv = allP2p = false;
          else {
            allNv = allNv && t.nvlinkBetween(idx[a], idx[b]);
            allP2p = allP2p && t.p2pOk(idx[a], idx[b]);
          }
        }
      if (allNv) mine.push_back("nvlink");
      else if (allP2p) mine.push_back("pcie");
      mine.push_back("shm");
    }
    mine.push_back("socket");
    for (const auto& name : {"ib", "roce"}) {
      try {
        makeProfile(name, t.rdma);
        mine.push_back(name);
      } catch (const UnavailableError&) {
      }
    }
  }
  std::string joined;
  for (const auto& m : mine) joined += m + ",";
  auto all = bs.allGatherStrings(joined);
  std::vector<std::string> out;
  for (const auto& name : pathNames()) {
    bool everywhere = true;
    for (const auto& s : all) everywhere = everywhere && s.find(name + ",") != std::string::npos &&
                                           (s.find(name + ",") == 0 || s[s.find(name + ",") - 1] == ',');
    if (everywhere) out.push_back(name);
  }
  return out;
}

std::unique_ptr<Collective> makeCollective(CollKind kind, Bootstrap& bs, const CollectiveOptions& opts,
                                           const std::string& path) {
  std::string p = path.empty() ? "auto" : path;
  if (p == "auto") {
    auto paths = availablePaths(bs);
    if (paths.empty()) FB_THROW(UnavailableError, "nccl: no usable path on this machine (GPUs, ranks)");
    p = paths.front();
  }
  if (!isPathName(p))
    FB_THROW(ConfigError, "unknown NCCL path '", p, "' (expected auto, training, nvlink, pcie, shm, socket, ib, roce or local)");
  auto profile = makeProfile(p, topo::localTopology().rdma, bs.nodeCount());
  return std::make_unique<NcclCollective>(kind, bs, opts, profile);
}

BackendStatus probe() {
  BackendStatus s;
  s.name = "nccl";
  s.built = true;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    cudaGetLastError();
    s.usable = false;
    s.reason = std::string("no CUDA device (") + (e == cudaSuccess ? "0 devices" : cudaGetErrorString(e)) + ")";
    return s;
  }
  std::ostringstream os;
  os << n << " GPU" << (n > 1 ? "s" : "");
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) os << " (" << prop.name << ")";
  os << ", NCCL " << ncclRuntimeVersion();
  s.usable = true;
  s.reason = os.str();
  return s;
}

std::string topologyText() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return {};
  }
  return topo::describe(topo::localTopology());
}

}  // namespace fb::nccl

#include "collectives/cuda/cuda_collective.h"
#include "collectives/cuda/cuda_collective_impl.h"

namespace fb::cudaipc {
namespace detail {

PathInfo CudaIpcCollective::path() const {
  PathInfo p;
  p.label = pathLabel_.empty() ? "cuda-ipc" : pathLabel_;
  p.details = pathDetails_;
  if (!nominalBasis_.empty()) p.setNominal(nominal_, nominalBasis_);
  p.details.emplace_back("algorithm", lastAlgo_);
  if (program_) p.details.emplace_back(kModelAlgoKey, std::string(cudaModelAlgo(*program_, kind_)));
  if (!smClock_.empty()) p.details.emplace_back("sm_clock_MHz", smClock_);
  return p;
}

void CudaIpcCollective::afterTiming() {
  if (busId_.empty()) busId_ = pciBusId(device_);  // "" (asked again next size) when CUDA cannot say
  smClock_ = topo::smClockText(topo::systemNvmlSession(), busId_);
}

void CudaIpcCollective::prepare(const CollShape& shape) {
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

void CudaIpcCollective::allocate(const CollShape& shape) {
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

double CudaIpcCollective::runBatch(int iters, Deadline deadline) {
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

std::vector<double> CudaIpcCollective::runPerOp(int iters, Deadline deadline) {
  FB_CUDA_CHECK(cudaSetDevice(device_));
  if (iters <= 0) return {};
  std::memset(status_, 0, sizeof(*status_));
  setTimeouts(deadline);
  return gpuops::timeEachOp(
      stream_, iters, [&](int) { launchOne(); },
      [&](cudaEvent_t last) { finish(last, deadline, std::to_string(iters) + " operations timed one by one"); },
      opts_.ncclTestsLoop, device_);
}

std::int64_t CudaIpcCollective::check(int seed, Deadline deadline) {
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

void CudaIpcCollective::setupLocal(int nRanks) {
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

void CudaIpcCollective::setupShared() {
  if (bs_.nodeCount() != 1) throw UnavailableError("cuda: CUDA IPC needs every rank on one node");
  // Same grid on every rank: the smallest multiprocessor count.
  maxBlocks_ = static_cast<int>(-bs_.allReduceMax(-static_cast<double>(sms_)));
  maxBlocks_ = std::clamp(maxBlocks_, 1, ipc::kMaxBlocks);
  describePath();
  shared_ = true;
}

void CudaIpcCollective::describePath() {
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

void CudaIpcCollective::grow(DeviceBuffer& b, std::size_t need) {
  need = std::max(need, kMinAlloc);
  if (b.get() && b.bytes() >= need) return;
  b.reset();
  // Round up so a sweep reallocates (and re-maps) rarely.
  std::size_t cap = kMinAlloc;
  while (cap < need) cap *= 2;
  b = DeviceBuffer(cap);
}

void CudaIpcCollective::launchOne() {
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

void CudaIpcCollective::captureGraph(int iters) {
  invalidateGraph();
  cudaGraph_t g = nullptr;
  FB_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < iters; ++i) launchOne();
  FB_CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
  FB_CUDA_CHECK(cudaGraphInstantiate(&graphExec_, g, 0));
  cudaGraphDestroy(g);
  graphIters_ = iters;
}

void CudaIpcCollective::finish(cudaEvent_t ev, Deadline deadline, const std::string& what) {
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

}  // namespace detail

std::string whyNot(const CollRequest& r) {
  if (r.dtype != DataType::kFloat32 && r.dtype != DataType::kFloat16 && r.dtype != DataType::kBFloat16)
    return "not supported: the cuda kernels move and reduce float32, float16 and bfloat16, not " +
           std::string(dtypeName(r.dtype));
  if (describe(r.kind).reduces && r.op != ReduceOp::kSum)
    return "not supported yet: the cuda reduction kernels sum only (-o " + std::string(opName(r.op)) + ")";
  return {};
}

std::unique_ptr<Collective> makeCollective(CollKind kind, Bootstrap& bs, const CollectiveOptions& opts) {
  return std::make_unique<detail::CudaIpcCollective>(kind, bs, opts);
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

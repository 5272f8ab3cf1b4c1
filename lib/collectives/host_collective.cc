#include "collectives/host_collective.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace fb {

namespace {
constexpr std::size_t kAlign = 4096;
}

AlignedBuffer::~AlignedBuffer() { std::free(ptr); }

void AlignedBuffer::resize(std::size_t n) {
  std::free(ptr);
  bytes = n;
  allocated = std::max(kAlign, ((n + kAlign - 1) / kAlign) * kAlign);
  ptr = std::aligned_alloc(kAlign, allocated);
  if (!ptr) FB_THROW(Error, "out of host memory allocating ", n, " bytes");
  std::memset(ptr, 0, allocated);  // touch pages before timing
}

HostCollective::HostCollective(std::shared_ptr<Transport> t, std::shared_ptr<DeviceStaging> staging)
    : t_(std::move(t)), stage_(std::move(staging)) {}

HostCollective::~HostCollective() { unregisterAll(); }

std::string HostCollective::impl() const { return std::string(t_->name()); }

PathInfo HostCollective::path() const {
  PathInfo p = t_->path();
  if (stage_) {
    p.label += " [GPU memory staged via host]";
    p.details.emplace_back("memory", stage_->describe());
  }
  return p;
}

void HostCollective::prepare(const CollShape& shape) {
  FB_ENFORCE_EQ(shape.nRanks, t_->size());
  unregisterAll();
  s_ = shape;
  elt_ = dtypeSize(shape.dtype);
  const int r = t_->rank();
  const std::size_t sendBytes = s_.sendCount * elt_, recvBytes = s_.recvCount * elt_;
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
  Scratch sc = scratchFor(s_);
  tmp_.resize(sc.tmp);
  work_[0].resize(sc.work);
  work_[1].resize(sc.work);
  for (AlignedBuffer* b : {&main_, &aux_, &tmp_, &work_[0], &work_[1]}) {
    if (b->ptr) {
      t_->registerMemory(b->ptr, b->allocated);
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

double HostCollective::runBatch(int iters, Deadline deadline) {
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) runStaged(deadline);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::int64_t HostCollective::check(int seed, Deadline deadline) {
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

void HostCollective::fillInput(int seed) { fillPattern(sendPtr_, s_.dtype, s_.sendCount, t_->rank(), seed, s_.op); }

void HostCollective::unregisterAll() {
  for (void* p : registered_) t_->deregisterMemory(p);
  registered_.clear();
  for (void* p : pinned_) stage_->unpin(p);
  pinned_.clear();
}

// One operation; with staging, GPU input -> host, the operation, host output -> GPU (all timed).
void HostCollective::runStaged(Deadline deadline) {
  if (!stage_) {
    runOnce(deadline);
    return;
  }
  stage_->toHost(sendPtr_, devSend_, s_.sendCount * elt_, deadline);
  runOnce(deadline);
  stage_->toDevice(devRecv_, recvPtr_, s_.recvCount * elt_, deadline);
}

// The one place that says which host implementation runs which collective.
std::unique_ptr<Collective> makeRingCollective(CollKind kind, std::shared_ptr<Transport> transport,
                                               std::shared_ptr<DeviceStaging> staging,
                                               std::shared_ptr<const HostRanker> ranker) {
  switch (kind) {
    case CollKind::kAllToAll: return makeHostAllToAll(std::move(transport), std::move(staging));
    case CollKind::kBroadcast: return makeHostBroadcast(std::move(transport), std::move(staging));
    default: return makeHostRing(kind, std::move(transport), std::move(staging), std::move(ranker));
  }
}

}  // namespace fb

#include "collectives/nccl/nccl_pairs.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include "core/error.h"
#include "gpu/nccl/nccl_comm.h"
#include "gpu/nccl/path_profile.h"
#include "topology/topology.h"

namespace fb::nccl {
namespace {

class NcclPairChannel : public PairChannel {
 public:
  NcclPairChannel(Bootstrap& bs, const CollectiveOptions& opts, std::size_t maxBytes) : max_(maxBytes) {
    device_ = deviceForLocalRank(bs.localRank());  // UnavailableError without a CUDA device
    // The training path unless a link is forced: what the job will use between nodes.
    std::string path = opts.path.empty() || opts.path == "auto" ? "training" : opts.path;
    profile_ = makeProfile(path, topo::localTopology().rdma, bs.nodeCount());
    FB_CUDA_CHECK(cudaSetDevice(device_));
    comm_ = std::make_unique<NcclComm>(bs, device_, profile_, opts.logDir, Deadline::in(kSetupTimeout));
    FB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    FB_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    FB_CUDA_CHECK(cudaMalloc(&s_, max_ ? max_ : 1));
    FB_CUDA_CHECK(cudaMalloc(&r_, max_ ? max_ : 1));
    FB_CUDA_CHECK(cudaMemset(s_, 0x5a, max_ ? max_ : 1));
  }

  ~NcclPairChannel() override {
    cudaSetDevice(device_);
    if (!comm_->aborted()) cudaStreamSynchronize(stream_);
    cudaFree(s_);
    cudaFree(r_);
    cudaEventDestroy(done_);
    cudaStreamDestroy(stream_);
  }

  void exchange(int peer, std::size_t bytes, Deadline d) override {
    start(bytes);
    ncclComm_t c = comm_->get();
    FB_NCCL_CHECK(ncclGroupStart());
    FB_NCCL_CHECK(ncclSend(s_, bytes, ncclChar, peer, c, stream_), c);
    FB_NCCL_CHECK(ncclRecv(r_, bytes, ncclChar, peer, c, stream_), c);
    FB_NCCL_CHECK(ncclGroupEnd(), c);
    finish(d, "nccl pair exchange");
  }
  void send(int peer, std::size_t bytes, Deadline d) override {
    start(bytes);
    FB_NCCL_CHECK(ncclSend(s_, bytes, ncclChar, peer, comm_->get(), stream_), comm_->get());
    finish(d, "nccl pair send");
  }
  void recv(int peer, std::size_t bytes, Deadline d) override {
    start(bytes);
    FB_NCCL_CHECK(ncclRecv(r_, bytes, ncclChar, peer, comm_->get(), stream_), comm_->get());
    finish(d, "nccl pair receive");
  }
  std::string label() const override {
    return fmt::format("nccl (ncclSend/ncclRecv, path {}, GPU {})", profile_.name, device_);
  }

 private:
  void start(std::size_t bytes) {
    if (bytes > max_) FB_THROW(ConfigError, "nccl pair test: ", bytes, " B exceeds the channel's ", max_, " B");
    FB_CUDA_CHECK(cudaSetDevice(device_));
  }
  void finish(Deadline d, const char* what) {
    comm_->checkAsync(what);
    FB_CUDA_CHECK(cudaEventRecord(done_, stream_));
    comm_->wait(done_, d, what);
  }

  std::size_t max_;
  int device_ = -1;
  PathProfile profile_;
  std::unique_ptr<NcclComm> comm_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  void* s_ = nullptr;
  void* r_ = nullptr;
};

}  // namespace

std::unique_ptr<PairChannel> openPairChannel(Bootstrap& bs, const CollectiveOptions& opts, std::size_t maxBytes) {
  return std::make_unique<NcclPairChannel>(bs, opts, maxBytes);
}

}  // namespace fb::nccl

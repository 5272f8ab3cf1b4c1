#include "collectives/cuda/staging.h"

#include <cuda_runtime.h>

#include <map>
#include <string>

#include "gpu/cuda/cuda_ipc.h"

namespace fb::cudaipc {
namespace {

class CudaStaging final : public DeviceStaging {
 public:
  explicit CudaStaging(int localRank) {
    device_ = selectDevice(localRank);
    FB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    name_ = deviceName(device_);
  }
  ~CudaStaging() override {
    cudaSetDevice(device_);
    if (stream_) {
      waitStream(stream_, Deadline::in(std::chrono::seconds(10)));
      cudaStreamDestroy(stream_);
    }
    for (auto& [p, n] : pinned_) cudaHostUnregister(p);
  }

  std::byte* mirror(int slot, std::size_t bytes) override {
    if (slot < 0 || slot > 1) FB_THROW(Error, "gpu staging: no mirror slot ", slot);
    FB_CUDA_CHECK(cudaSetDevice(device_));
    DeviceBuffer& b = slots_[slot];
    if (b.bytes() < bytes) b = DeviceBuffer(bytes);
    return static_cast<std::byte*>(b.get());
  }
  void pin(void* host, std::size_t bytes) override {
    if (!host || bytes == 0 || pinned_.count(host)) return;
    FB_CUDA_CHECK(cudaHostRegister(host, bytes, cudaHostRegisterDefault));
    pinned_[host] = bytes;
  }
  void unpin(void* host) override {
    auto it = pinned_.find(host);
    if (it == pinned_.end()) return;
    cudaHostUnregister(host);
    pinned_.erase(it);
  }
  void toHost(void* host, const void* dev, std::size_t bytes, Deadline deadline) override {
    copy(host, dev, bytes, cudaMemcpyDeviceToHost, deadline);
  }
  void toDevice(void* dev, const void* host, std::size_t bytes, Deadline deadline) override {
    copy(dev, host, bytes, cudaMemcpyHostToDevice, deadline);
  }
  std::string describe() const override {
    return "GPU " + std::to_string(device_) + " (" + name_ + ", " + pciBusId(device_) +
           ") memory, staged through page-locked host memory before and after each operation (timed)";
  }

 private:
  void copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, Deadline deadline) {
    if (bytes == 0) return;
    FB_CUDA_CHECK(cudaSetDevice(device_));
    FB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream_));
    if (!waitStream(stream_, deadline))
      FB_THROW(TimeoutError, "gpu staging: a ", bytes, " B copy ",
               kind == cudaMemcpyDeviceToHost ? "GPU -> host" : "host -> GPU", " did not finish before the deadline");
  }

  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  std::string name_;
  DeviceBuffer slots_[2];
  std::map<void*, std::size_t> pinned_;
};

}  // namespace

std::shared_ptr<DeviceStaging> makeCudaStaging(int localRank) { return std::make_shared<CudaStaging>(localRank); }

}  // namespace fb::cudaipc

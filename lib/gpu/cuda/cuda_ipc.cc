#include "gpu/cuda/cuda_ipc.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#include "bootstrap/agree.h"
#include "gpu/wait.h"

namespace fb::cudaipc {

void throwCuda(cudaError_t e, const char* expr, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so later calls are not confused by it
  throw CudaError(identity() + " CUDA error " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") in " +
                  expr + " at " + file + ":" + std::to_string(line));
}

std::string deviceName(int device) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
    cudaGetLastError();
    return "?";
  }
  return p.name;
}

std::string visibleDevicesEnv() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? std::string(v) : std::string("(unset)");
}

int selectDevice(int localRank) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    cudaGetLastError();
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    throw UnavailableError(std::string("no CUDA GPU visible on ") + host + " (cudaGetDeviceCount: " +
                           (e == cudaSuccess ? std::string("0 devices") : std::string(cudaGetErrorString(e))) +
                           "; CUDA_VISIBLE_DEVICES=" + visibleDevicesEnv() + ")");
  }
  int dev = localRank % n;
  FB_CUDA_CHECK(cudaSetDevice(dev));
  return dev;
}

namespace {
// gpu/wait.h: query with a yield between polls, never a sleep (the host timer would count it).
template <typename Query>
bool pollUntil(Query q, Deadline deadline) {
  auto done = [&] {
    cudaError_t e = q();
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady) throwCuda(e, "cudaEventQuery/cudaStreamQuery", __FILE__, __LINE__);
    return false;
  };
  return gpu::pollUntil(done, [] {}, deadline) == gpu::WaitEnd::kDone;
}
}  // namespace

bool waitEvent(cudaEvent_t ev, Deadline deadline) {
  return pollUntil([&] { return cudaEventQuery(ev); }, deadline);
}
bool waitStream(cudaStream_t s, Deadline deadline) {
  return pollUntil([&] { return cudaStreamQuery(s); }, deadline);
}

namespace {
std::atomic<std::uint64_t> gNextBufferId{1};
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes), id_(gNextBufferId++) {
  FB_CUDA_CHECK(cudaGetDevice(&device_));
  if (bytes) FB_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}
DeviceBuffer::~DeviceBuffer() { reset(); }
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(o.ptr_), bytes_(o.bytes_), device_(o.device_), id_(o.id_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    device_ = o.device_;
    id_ = o.id_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}
void DeviceBuffer::reset() {
  if (ptr_) {
    int cur = -1;
    cudaGetDevice(&cur);
    if (device_ >= 0 && cur != device_) cudaSetDevice(device_);
    cudaFree(ptr_);
    if (device_ >= 0 && cur != device_ && cur >= 0) cudaSetDevice(cur);
  }
  ptr_ = nullptr;
  bytes_ = 0;
}

namespace {
struct BlobHeader {
  std::int32_t pid;
  std::int32_t device;
  std::int32_t count;
  char busId[32];
};
struct BlobEntry {
  cudaIpcMemHandle_t handle;
  std::uint64_t ptr;
  std::uint64_t id;
};
}  // namespace

PeerMap::~PeerMap() { closeAll(); }

void PeerMap::closeAll() {
  for (auto& row : entries_)
    for (auto& e : row)
      if (e.opened && e.ptr) cudaIpcCloseMemHandle(e.ptr);
  entries_.clear();
}

void PeerMap::exchange(Bootstrap& bs, int myDevice, const std::vector<const DeviceBuffer*>& mine) {
  // Build my blob (always, so every rank takes part even when a handle fails).
  std::vector<std::byte> blob(sizeof(BlobHeader) + mine.size() * sizeof(BlobEntry));
  BlobHeader h{};
  h.pid = static_cast<std::int32_t>(getpid());
  h.device = myDevice;
  h.count = static_cast<std::int32_t>(mine.size());
  std::string bus = pciBusId(myDevice);
  std::strncpy(h.busId, bus.c_str(), sizeof(h.busId) - 1);
  std::memcpy(blob.data(), &h, sizeof(h));
  std::string myErr;
  for (std::size_t k = 0; k < mine.size(); ++k) {
    BlobEntry e{};
    e.ptr = reinterpret_cast<std::uint64_t>(mine[k]->get());
    e.id = mine[k]->id();
    cudaError_t ce = cudaIpcGetMemHandle(&e.handle, mine[k]->get());
    if (ce != cudaSuccess && myErr.empty()) {
      cudaGetLastError();
      myErr = std::string("cudaIpcGetMemHandle: ") + cudaGetErrorString(ce);
    }
    std::memcpy(blob.data() + sizeof(BlobHeader) + k * sizeof(BlobEntry), &e, sizeof(e));
  }
  agreeOn(bs, "cuda IPC", myErr.empty() ? StepVerdict::kOk : StepVerdict::kFailed,
          identity() + " could not export its GPU memory: " + myErr);
  auto all = bs.allGather(blob);

  const int n = bs.size();
  // Close the mappings that will not be reused BEFORE opening new ones: a new allocation of a
  // peer may sit in the memory of one it freed, and opening it while the old mapping is still
  // open fails with "resource already mapped".
  for (int r = 0; r < n && r < static_cast<int>(entries_.size()); ++r) {
    for (int k = 0; k < static_cast<int>(entries_[r].size()); ++k) {
      Entry& old = entries_[r][k];
      if (!old.opened) continue;
      bool keep = false;
      if (k < static_cast<int>(mine.size()) && all[r].size() >= sizeof(BlobHeader) + (k + 1) * sizeof(BlobEntry)) {
        BlobEntry pe{};
        std::memcpy(&pe, all[r].data() + sizeof(BlobHeader) + k * sizeof(BlobEntry), sizeof(pe));
        keep = pe.id == old.id && std::memcmp(&pe.handle, old.handle.data(), sizeof(pe.handle)) == 0;
      }
      if (!keep) {
        cudaIpcCloseMemHandle(old.ptr);
        old.opened = false;
        old.ptr = nullptr;
      }
    }
  }
  std::vector<std::vector<Entry>> next(n);
  sameProcess_.assign(n, false);
  busIds_.assign(n, "");
  std::string openErr;
  for (int r = 0; r < n; ++r) {
    BlobHeader ph{};
    FB_ENFORCE(all[r].size() >= sizeof(BlobHeader), "short IPC blob from rank ", r);
    std::memcpy(&ph, all[r].data(), sizeof(ph));
    FB_ENFORCE_EQ(static_cast<std::size_t>(ph.count), mine.size(), "buffer count differs on rank ", r);
    busIds_[r] = std::string(ph.busId, strnlen(ph.busId, sizeof(ph.busId)));
    sameProcess_[r] = ph.pid == h.pid;
    next[r].resize(mine.size());
    for (int k = 0; k < ph.count; ++k) {
      BlobEntry pe{};
      std::memcpy(&pe, all[r].data() + sizeof(BlobHeader) + k * sizeof(BlobEntry), sizeof(pe));
      Entry& e = next[r][k];
      e.handle.assign(reinterpret_cast<const char*>(&pe.handle), sizeof(pe.handle));
      e.id = pe.id;
      if (r == bs.rank()) {
        e.ptr = mine[k]->get();
        continue;
      }
      if (sameProcess_[r]) {  // ranks as threads: UVA pointers work directly once peer access is on
        e.ptr = reinterpret_cast<void*>(pe.ptr);
        if (ph.device != myDevice) {
          cudaError_t ce = cudaDeviceEnablePeerAccess(ph.device, 0);
          if (ce != cudaSuccess && ce != cudaErrorPeerAccessAlreadyEnabled && openErr.empty())
            openErr = "cudaDeviceEnablePeerAccess(" + std::to_string(ph.device) + "): " + cudaGetErrorString(ce);
          cudaGetLastError();
        }
        continue;
      }
      // Reuse a mapping whose handle did not change.
      if (r < static_cast<int>(entries_.size()) && k < static_cast<int>(entries_[r].size()) &&
          entries_[r][k].opened && entries_[r][k].handle == e.handle && entries_[r][k].id == e.id) {
        e = entries_[r][k];
        entries_[r][k].opened = false;  // moved
        continue;
      }
      void* p = nullptr;
      cudaError_t ce = cudaIpcOpenMemHandle(&p, pe.handle, cudaIpcMemLazyEnablePeerAccess);
      if (ce != cudaSuccess) {
        cudaGetLastError();
        if (openErr.empty())
          openErr = "cannot map rank " + std::to_string(r) + "'s GPU memory (GPU " + busIds_[r] + ") into GPU " + bus +
                    ": cudaIpcOpenMemHandle: " + cudaGetErrorString(ce) +
                    " (CUDA_VISIBLE_DEVICES=" + visibleDevicesEnv() + ")";
        continue;
      }
      e.ptr = p;
      e.opened = true;
    }
  }
  closeAll();  // mappings not carried over
  entries_ = std::move(next);
  // Every rank learns whether anyone failed, so no rank goes on alone.
  agreeOn(bs, "cuda IPC", openErr.empty() ? StepVerdict::kOk : StepVerdict::kUnavailable, identity() + " " + openErr);
}

void* PeerMap::at(int rank, int index) const { return entries_.at(rank).at(index).ptr; }
bool PeerMap::sameProcess(int rank) const { return sameProcess_.at(rank); }

}  // namespace fb::cudaipc

// CUDA peer memory between the ranks of one node: device selection, CUDA error checks, device
// buffers, and their exchange through the Bootstrap as CUDA IPC handles (or plain pointers
// when two ranks are threads of one process, as with ThreadBootstrap in tests).
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "bootstrap/bootstrap.h"
#include "core/error.h"
#include "core/units.h"
#include "gpu/pci_bus_id.h"

namespace fb::cudaipc {

[[noreturn]] void throwCuda(cudaError_t e, const char* expr, const char* file, int line);

#define FB_CUDA_CHECK(expr)                                                  \
  do {                                                                       \
    cudaError_t fb_ce_ = (expr);                                             \
    if (fb_ce_ != cudaSuccess) ::fb::cudaipc::throwCuda(fb_ce_, #expr, __FILE__, __LINE__); \
  } while (0)

// "0000:19:00.0" (lower case) for a device ordinal; "" when unknown: the one reader both GPU backends use.
using gpu::pciBusId;
std::string deviceName(int device);
// The value of CUDA_VISIBLE_DEVICES, or "(unset)".
std::string visibleDevicesEnv();

// The GPU this rank uses: localRank modulo the visible device count; makes it current.
// Throws UnavailableError (naming the host and CUDA_VISIBLE_DEVICES) when none is visible.
int selectDevice(int localRank);

// Waits for an event (or stream) without blocking forever: polls until done or the deadline.
// Returns false at the deadline; throws CudaError when the GPU reports an error.
bool waitEvent(cudaEvent_t ev, Deadline deadline);
bool waitStream(cudaStream_t s, Deadline deadline);

// Device memory owned by this rank.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  // Unique per allocation in this process (a new allocation may reuse an old address).
  std::uint64_t id() const { return id_; }
  void reset();

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = -1;
  std::uint64_t id_ = 0;
};

// Every rank's view of every rank's buffers: at(r, k) is rank r's k-th buffer, mapped into
// this process (own buffers as they are). Collective: every rank calls exchange() with the
// same number of buffers (each the base of a cudaMalloc allocation). Buffers whose handles did
// not change since the last exchange keep their mapping.
class PeerMap {
 public:
  PeerMap() = default;
  ~PeerMap();
  PeerMap(const PeerMap&) = delete;
  PeerMap& operator=(const PeerMap&) = delete;
  void exchange(Bootstrap& bs, int myDevice, const std::vector<const DeviceBuffer*>& mine);
  void* at(int rank, int index) const;
  // Which ranks run in this very process (threads): their pointers are used directly.
  bool sameProcess(int rank) const;
  const std::string& busId(int rank) const { return busIds_.at(rank); }
  void closeAll();

 private:
  struct Entry {
    void* ptr = nullptr;
    bool opened = false;      // through cudaIpcOpenMemHandle (must be closed)
    std::string handle;       // raw cudaIpcMemHandle_t bytes
    std::uint64_t id = 0;     // the owner's DeviceBuffer::id()
  };
  std::vector<std::vector<Entry>> entries_;  // [rank][index]
  std::vector<bool> sameProcess_;
  std::vector<std::string> busIds_;
};

}  // namespace fb::cudaipc

// RAII NCCL communicator for one rank: unique id through the Bootstrap, ncclCommInitRank after
// the path profile's environment is applied, ncclCommAbort on any error, waits that poll
// ncclCommGetAsyncError against a deadline. Also remembers where its INFO lines start in the
// process's NCCL debug file, for the attestation.
#pragma once
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "bootstrap/bootstrap.h"
#include "core/units.h"
#include "gpu/nccl/path_profile.h"

namespace fb::nccl {

// Throws fb::NcclError "<what>: <ncclGetErrorString> (<ncclGetLastError>)" unless ncclSuccess.
void ncclCheck(ncclResult_t r, const char* what, ncclComm_t comm = nullptr);
// Throws fb::CudaError "<what>: <cudaGetErrorString>" unless cudaSuccess.
void cudaCheck(cudaError_t e, const char* what);

#define FB_NCCL_CHECK(expr, ...) ::fb::nccl::ncclCheck((expr), #expr, ##__VA_ARGS__)
#define FB_CUDA_CHECK(expr) ::fb::nccl::cudaCheck((expr), #expr)

// "2.28.3" from ncclGetVersion (the library loaded at run time).
std::string ncclRuntimeVersion();

// The CUDA device this rank uses: localRank modulo the visible device count (so
// CUDA_VISIBLE_DEVICES is honoured). Throws UnavailableError when no device is visible.
int deviceForLocalRank(int localRank);
// How long creating a communicator and its first connections may take.
constexpr auto kSetupTimeout = std::chrono::seconds(120);

class NcclComm {
 public:
  // Collective over bs. Applies the profile (activateProfile), enables logging into logDir,
  // sets the device, creates the communicator (non-blocking init polled against `deadline`).
  NcclComm(Bootstrap& bs, int device, const PathProfile& profile, const std::string& logDir, Deadline deadline);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  int device() const { return device_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const PathProfile& profile() const { return profile_; }
  const std::string& logPath() const { return logPath_; }
  // The INFO lines written since this communicator was created (empty if no log file).
  std::string logSinceInit() const;

  // Waits until `event` completes. Polls cudaEventQuery and ncclCommGetAsyncError; on an NCCL
  // error aborts the communicator and throws NcclError with NCCL's text; at the deadline aborts
  // and throws TimeoutError. After either the communicator is dead (aborted() == true).
  void wait(cudaEvent_t event, Deadline deadline, const char* what);
  // Checks for an asynchronous error now (after enqueueing); throws like wait().
  void checkAsync(const char* what);
  void abort();
  bool aborted() const { return aborted_; }

 private:
  ncclComm_t comm_ = nullptr;
  int device_ = -1, rank_ = 0, size_ = 1;
  PathProfile profile_;
  std::string logPath_;
  std::size_t logOffset_ = 0;
  bool aborted_ = false;
};

}  // namespace fb::nccl

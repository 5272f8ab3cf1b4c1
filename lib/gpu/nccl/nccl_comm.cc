#include "gpu/nccl/nccl_comm.h"

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "bootstrap/agree.h"
#include "core/error.h"
#include "gpu/wait.h"

namespace fb::nccl {

void ncclCheck(ncclResult_t r, const char* what, ncclComm_t comm) {
  if (r == ncclSuccess) return;
  const char* last = comm ? ncclGetLastError(comm) : ncclGetLastError(nullptr);
  FB_THROW(NcclError, what, ": ", ncclGetErrorString(r), (last && *last ? std::string(" (") + last + ")" : ""));
}

void cudaCheck(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  FB_THROW(CudaError, what, ": ", cudaGetErrorString(e));
}

std::string ncclRuntimeVersion() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "?";
  // 2.28.3 → 22803 (NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9)
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

int deviceForLocalRank(int localRank) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    cudaGetLastError();
    FB_THROW(UnavailableError, "no CUDA device (", e == cudaSuccess ? "0 devices" : cudaGetErrorString(e), ")");
  }
  return localRank % n;
}

namespace {

std::size_t fileSize(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return 0;
  return static_cast<std::size_t>(f.tellg());
}

}  // namespace

NcclComm::NcclComm(Bootstrap& bs, int device, const PathProfile& profile, const std::string& logDir,
                   Deadline deadline)
    : device_(device), rank_(bs.rank()), size_(bs.size()), profile_(profile) {
  ncclUniqueId id{};
  std::vector<std::byte> blob;
  // The local part (device, logging, the id on rank 0) first; every rank learns whether any rank
  // failed before anyone enters ncclCommInitRank, which would wait for the missing rank.
  // Every rank agrees on the size of the shared log before anyone initialises (threads share
  // one file in tests).
  agree(bs, "nccl init", [&] {
    failHook("nccl-init", bs.rank());
    logPath_ = enableNcclLogging(logDir);
    activateProfile(profile);
    FB_CUDA_CHECK(cudaSetDevice(device));
    if (bs.rank() == 0) {
      FB_NCCL_CHECK(ncclGetUniqueId(&id));
      blob.resize(sizeof(id));
      std::memcpy(blob.data(), &id, sizeof(id));
    }
  });
  logOffset_ = logPath_.empty() ? 0 : fileSize(logPath_);
  auto got = bs.broadcastFromRoot(blob);
  FB_ENFORCE_EQ(got.size(), sizeof(id), "ncclUniqueId from rank 0");
  std::memcpy(&id, got.data(), sizeof(id));

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  // Blocking: a non-blocking communicator makes every enqueue return ncclInProgress, which
  // costs host time per operation (the 8 B latency row). A peer that never arrives is caught
  // by the bootstrap barrier above; a peer lost later is caught by wait().
  config.blocking = 1;
  ncclResult_t r = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    ncclCheck(r, "ncclCommInitRankConfig");
  }
  // Polled as every GPU wait is (gpu/wait.h): no sleep between polls.
  auto initDone = [&] {
    ncclResult_t a = ncclSuccess;
    FB_NCCL_CHECK(ncclCommGetAsyncError(comm_, &a), comm_);
    if (a == ncclSuccess) return true;
    if (a != ncclInProgress) {
      std::string last = ncclGetLastError(comm_);
      abort();
      FB_THROW(NcclError, "ncclCommInitRankConfig (path ", profile.name, "): ", ncclGetErrorString(a),
               last.empty() ? "" : " (" + last + ")");
    }
    return false;
  };
  if (gpu::pollUntil(initDone, [] {}, deadline) == gpu::WaitEnd::kDeadline) {
    abort();
    FB_THROW(TimeoutError, "ncclCommInitRankConfig (path ", profile.name, ") did not finish before the deadline; "
             "communicator aborted");
  }
}

NcclComm::~NcclComm() {
  if (!comm_) return;
  cudaSetDevice(device_);
  if (aborted_) return;
  // Finalize would wait for peers; destroy after a device sync is enough for a healthy comm.
  cudaDeviceSynchronize();
  ncclCommDestroy(comm_);
}

void NcclComm::abort() {
  if (comm_ && !aborted_) {
    aborted_ = true;
    ncclCommAbort(comm_);
  }
}

std::string NcclComm::logSinceInit() const {
  if (logPath_.empty()) return {};
  std::ifstream f(logPath_, std::ios::binary);
  if (!f) return {};
  f.seekg(static_cast<std::streamoff>(logOffset_));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void NcclComm::checkAsync(const char* what) {
  if (aborted_) FB_THROW(NcclError, what, ": communicator already aborted after an earlier error");
  ncclResult_t a = ncclSuccess;
  ncclResult_t r = ncclCommGetAsyncError(comm_, &a);
  if (r != ncclSuccess) a = r;
  if (a == ncclSuccess || a == ncclInProgress) return;
  std::string last = ncclGetLastError(comm_);
  abort();
  FB_THROW(NcclError, what, " (path ", profile_.name, "): ", ncclGetErrorString(a), last.empty() ? "" : " (" + last + ")",
           "; communicator aborted");
}

void NcclComm::wait(cudaEvent_t event, Deadline deadline, const char* what) {
  // gpu/wait.h: query, NCCL's asynchronous error, the deadline, a yield; never a sleep (200 us
  // sleeps read 2-6 us per operation slow from 32 MiB up on one H200 with the host timer).
  auto done = [&] {
    cudaError_t q = cudaEventQuery(event);
    if (q == cudaSuccess) return true;
    if (q != cudaErrorNotReady) {
      cudaGetLastError();
      abort();
      FB_THROW(CudaError, what, ": ", cudaGetErrorString(q));
    }
    return false;
  };
  if (gpu::pollUntil(done, [&] { checkAsync(what); }, deadline) == gpu::WaitEnd::kDeadline) {
    abort();
    FB_THROW(TimeoutError, what, " (path ", profile_.name, ", rank ", rank_, ") did not complete before the deadline; "
             "NCCL communicator aborted (a peer is gone or stuck)");
  }
}

}  // namespace fb::nccl

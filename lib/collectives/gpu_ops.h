// What the cuda and nccl collectives do alike around their operations (host code over the CUDA
// runtime; each backend passes how it enqueues an operation and how it waits with its deadline).
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <cuda_runtime.h>

#include "core/error.h"
#include "kernels/fill_verify.h"

namespace fb::gpuops {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) FB_THROW(CudaError, what, ": ", cudaGetErrorString(e));
}

// --per-op: an event after every operation on the stream (no graph, no host sync between
// operations); operation i's time (seconds) is event i-1 -> event i. enqueue(i) puts operation i
// on the stream; waitFor(lastEvent) waits for it (the backend's deadline and error checks).
// ncclTestsLoop: nccl-tests' -I loop instead (BenchTime: per operation a host clock read,
// cudaSetDevice, the event, then the operation; one more event after the last), so that where the
// host's loop sets an operation's time, nccl-tests' host work is in it (doc/timers.md).
template <typename Enqueue, typename WaitFor>
std::vector<double> timeEachOp(cudaStream_t stream, int iters, Enqueue&& enqueue, WaitFor&& waitFor,
                               bool ncclTestsLoop = false, int device = 0) {
  if (iters <= 0) return {};
  std::vector<cudaEvent_t> ev(static_cast<std::size_t>(iters) + 1, nullptr);
  struct Destroy {
    std::vector<cudaEvent_t>& ev;
    ~Destroy() {
      for (auto e : ev)
        if (e) cudaEventDestroy(e);
    }
  } destroy{ev};
  for (auto& e : ev) check(cudaEventCreate(&e), "cudaEventCreate (--per-op)");
  if (ncclTestsLoop) {
    const auto t0 = std::chrono::steady_clock::now();
    volatile double sinceStart = 0;  // nccl-tests reads its timer at the top of every iteration
    for (int i = 0; i < iters; ++i) {
      sinceStart = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      check(cudaSetDevice(device), "cudaSetDevice (--per-op)");
      check(cudaEventRecord(ev[static_cast<std::size_t>(i)], stream), "cudaEventRecord (--per-op)");
      enqueue(i);
    }
    (void)sinceStart;
    check(cudaEventRecord(ev.back(), stream), "cudaEventRecord (--per-op)");
  } else {
    check(cudaEventRecord(ev[0], stream), "cudaEventRecord (--per-op)");
    for (int i = 0; i < iters; ++i) {
      enqueue(i);
      check(cudaEventRecord(ev[static_cast<std::size_t>(i) + 1], stream), "cudaEventRecord (--per-op)");
    }
  }
  waitFor(ev.back());
  std::vector<double> t;
  t.reserve(static_cast<std::size_t>(iters));
  for (std::size_t i = 0; i < static_cast<std::size_t>(iters); ++i) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]), "cudaEventElapsedTime (--per-op)");
    t.push_back(ms * 1e-3);
  }
  return t;
}

// The check's tail, once the checked operation is done and nobody reads this rank's buffers:
// corrupt one element when a test asked for it (then forget the request), count the elements of
// `recv` that differ from `spec` on the GPU, and bring the count to `hostWrong` (pinned or not).
// waitAll() waits for everything on the stream so far (the backend's deadline).
template <typename WaitAll>
std::int64_t countWrongOnGpu(void* recv, std::size_t recvCount, kernels::KDtype type, std::optional<std::size_t>& corrupt,
                             const kernels::VerifySpec& spec, unsigned long long* devWrong,
                             unsigned long long* hostWrong, cudaStream_t stream, WaitAll&& waitAll) {
  if (corrupt && *corrupt < recvCount) check(kernels::corruptElement(recv, type, *corrupt, stream), "corruptElement");
  corrupt.reset();
  check(cudaMemsetAsync(devWrong, 0, sizeof(unsigned long long), stream), "cudaMemsetAsync (wrong count)");
  check(kernels::countWrong(recv, spec, devWrong, stream), "countWrong");
  check(cudaMemcpyAsync(hostWrong, devWrong, sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync (wrong count)");
  waitAll();
  return static_cast<std::int64_t>(*hostWrong);
}

}  // namespace fb::gpuops

// Copy kernels and peer-memory helpers (see copy.h). Kernels and launchers only.
#include "kernels/copy.h"

#include <cuda_runtime.h>

namespace fb::kernels {

namespace {

template <int kUnroll>
__global__ void copyVecKernel(uint4* dst, const uint4* src, unsigned long long nv) {
  // One contiguous slice per block.
  unsigned long long per = (nv + gridDim.x - 1) / gridDim.x;
  unsigned long long lo = per * blockIdx.x;
  unsigned long long hi = lo + per < nv ? lo + per : nv;
  const unsigned n = blockDim.x;
  for (unsigned long long base = lo + threadIdx.x; base < hi; base += static_cast<unsigned long long>(n) * kUnroll) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      unsigned long long i = base + static_cast<unsigned long long>(u) * n;
      if (i < hi) v[u] = __ldcg(src + i);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      unsigned long long i = base + static_cast<unsigned long long>(u) * n;
      if (i < hi) dst[i] = v[u];
    }
  }
}

__global__ void copyByteKernel(unsigned char* dst, const unsigned char* src, unsigned long long bytes) {
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x)
    dst[i] = __ldcg(src + i);
}

__global__ void buildChainKernel(char* buf, unsigned long long bytes, unsigned long long stride) {
  unsigned long long nodes = bytes / stride;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < nodes;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    unsigned long long next = (i + 1) % nodes;
    *reinterpret_cast<char**>(buf + i * stride) = buf + next * stride;
  }
}

__global__ void chaseKernel(const char* buf, int hops, unsigned long long* sink) {
  const char* p = buf;
  for (int i = 0; i < hops; ++i) p = *reinterpret_cast<const char* const volatile*>(p);
  *sink = reinterpret_cast<unsigned long long>(p);
}

__global__ void spinKernel(const unsigned long long* flag, unsigned long long want, unsigned long long timeoutNs,
                           int* timedOut) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (*reinterpret_cast<const volatile unsigned long long*>(flag) < want) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeoutNs) {
      *timedOut = 1;
      return;
    }
    __nanosleep(1000);
  }
}

int defaultBlocks() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
    sms = 132;
  return sms * 2;
}

}  // namespace

cudaError_t copyBytes(void* dst, const void* src, std::size_t bytes, cudaStream_t stream, int blocks, int threads,
                      int unroll) {
  if (bytes == 0) return cudaSuccess;
  if (threads <= 0 || threads > 1024 || (unroll != 4 && unroll != 8)) return cudaErrorInvalidValue;
  if (blocks <= 0) blocks = defaultBlocks();
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  const auto da = reinterpret_cast<std::uintptr_t>(d) & 15, sa = reinterpret_cast<std::uintptr_t>(s) & 15;
  if (da != sa || bytes < 64) {
    unsigned long long g = (bytes + threads - 1) / threads;
    copyByteKernel<<<static_cast<int>(g < static_cast<unsigned long long>(blocks) ? g : blocks), threads, 0,
                     stream>>>(d, s, bytes);
    return cudaGetLastError();
  }
  // Same misalignment: bytes up to the first 16-byte boundary, vectors, then the tail.
  std::size_t head = da ? 16 - da : 0;
  std::size_t nv = (bytes - head) / 16;
  std::size_t tail = bytes - head - nv * 16;
  if (head) copyByteKernel<<<1, 32, 0, stream>>>(d, s, head);
  if (nv) {
    unsigned long long want = (nv + static_cast<unsigned long long>(threads) * unroll - 1) /
                              (static_cast<unsigned long long>(threads) * unroll);
    int g = static_cast<int>(want < static_cast<unsigned long long>(blocks) ? want : blocks);
    auto* vd = reinterpret_cast<uint4*>(d + head);
    auto* vs = reinterpret_cast<const uint4*>(s + head);
    if (unroll == 8) copyVecKernel<8><<<g, threads, 0, stream>>>(vd, vs, nv);
    else copyVecKernel<4><<<g, threads, 0, stream>>>(vd, vs, nv);
  }
  if (tail) copyByteKernel<<<1, 32, 0, stream>>>(d + head + nv * 16, s + head + nv * 16, tail);
  return cudaGetLastError();
}

cudaError_t buildPointerChain(void* buf, std::size_t bytes, std::size_t stride, cudaStream_t stream) {
  if (stride < 8 || stride % 8 || bytes < stride) return cudaErrorInvalidValue;
  unsigned long long nodes = bytes / stride;
  int g = static_cast<int>((nodes + 255) / 256 < 1024 ? (nodes + 255) / 256 : 1024);
  buildChainKernel<<<g, 256, 0, stream>>>(static_cast<char*>(buf), bytes, stride);
  return cudaGetLastError();
}

cudaError_t chasePointers(const void* buf, int hops, unsigned long long* sink, cudaStream_t stream) {
  if (hops <= 0) return cudaErrorInvalidValue;
  chaseKernel<<<1, 1, 0, stream>>>(static_cast<const char*>(buf), hops, sink);
  return cudaGetLastError();
}

cudaError_t spinUntil(const unsigned long long* flag, unsigned long long want, unsigned long long timeoutNs,
                      int* timedOut, cudaStream_t stream) {
  spinKernel<<<1, 1, 0, stream>>>(flag, want, timeoutNs, timedOut);
  return cudaGetLastError();
}

}  // namespace fb::kernels

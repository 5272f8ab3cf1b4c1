// Copy kernels and peer-memory helpers (see copy.h). Kernels and launchers only.
#include "kernels/copy.h"

#include <cuda_runtime.h>

namespace fb::kernels {

namespace {

// 16-byte load of src[i] with the chosen cache operator / L2 prefetch hint (see copy.h, CopyLoad).
template <int kLoad>
__device__ __forceinline__ uint4 loadVec(const uint4* p) {
  uint4 v;
  if constexpr (kLoad == 0) {
    v = __ldcg(p);
  } else if constexpr (kLoad == 1) {
    asm volatile("ld.global.cg.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  } else if constexpr (kLoad == 2) {
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  } else {
    v = __ldcs(p);  // 3 and 4
  }
  return v;
}

template <int kLoad>
__device__ __forceinline__ void storeVec(uint4* p, uint4 v) {
  if constexpr (kLoad == 4) __stcs(p, v);  // evict-first stores too
  else *p = v;
}

template <int kUnroll, int kLoad>
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
      if (i < hi) v[u] = loadVec<kLoad>(src + i);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      unsigned long long i = base + static_cast<unsigned long long>(u) * n;
      if (i < hi) storeVec<kLoad>(dst + i, v[u]);
    }
  }
}

template <int kLoad>
void launchVec(int unroll, int g, int threads, cudaStream_t stream, uint4* d, const uint4* s,
               unsigned long long nv) {
  if (unroll == 16) copyVecKernel<16, kLoad><<<g, threads, 0, stream>>>(d, s, nv);
  else if (unroll == 8) copyVecKernel<8, kLoad><<<g, threads, 0, stream>>>(d, s, nv);
  else copyVecKernel<4, kLoad><<<g, threads, 0, stream>>>(d, s, nv);
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

__device__ __forceinline__ unsigned smemAddr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

constexpr int kMaxStages = 8;

__global__ void bulkCopyKernel(char* dst, const char* src, unsigned long long bytes, unsigned chunk, int stages,
                               int* failed, unsigned long long timeoutNs) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) unsigned long long bars[kMaxStages];
  if (threadIdx.x != 0) return;
  unsigned long long per = (bytes + gridDim.x - 1) / gridDim.x;
  per = (per + chunk - 1) / chunk * chunk;
  const unsigned long long lo = per * blockIdx.x;
  const unsigned long long hi = lo + per < bytes ? lo + per : bytes;
  if (lo >= hi) return;
  for (int s = 0; s < stages; ++s)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smemAddr(&bars[s])));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  const unsigned long long n = (hi - lo + chunk - 1) / chunk;
  auto load = [&](unsigned long long i) {
    const int st = static_cast<int>(i % stages);
    const unsigned long long off = lo + i * chunk;
    const unsigned sz = static_cast<unsigned>(hi - off < chunk ? hi - off : chunk);
    const unsigned bar = smemAddr(&bars[st]);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(sz) : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
            smemAddr(smem + static_cast<unsigned long long>(st) * chunk)),
        "l"(src + off), "r"(sz), "r"(bar)
        : "memory");
  };
  const unsigned long long pre = n < static_cast<unsigned long long>(stages - 1) ? n : stages - 1;
  for (unsigned long long i = 0; i < pre; ++i) load(i);
  for (unsigned long long i = 0; i < n; ++i) {
    const unsigned long long j = i + stages - 1;
    if (j < n) {
      // Stage j % stages was last stored from by iteration i - 1: wait until that store has
      // read shared memory.
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
      load(j);
    }
    const int st = static_cast<int>(i % stages);
    const unsigned parity = static_cast<unsigned>((i / stages) & 1);
    const unsigned bar = smemAddr(&bars[st]);
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (true) {
      unsigned done;
      asm volatile(
          "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
          : "=r"(done)
          : "r"(bar), "r"(parity)
          : "memory");
      if (done) break;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
      if (now - start > timeoutNs) {
        *failed = 1;
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
        return;
      }
    }
    const unsigned long long off = lo + i * chunk;
    const unsigned sz = static_cast<unsigned>(hi - off < chunk ? hi - off : chunk);
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + off),
                 "r"(smemAddr(smem + static_cast<unsigned long long>(st) * chunk)), "r"(sz)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
  if (threadIdx.x == 0 && blockIdx.x == 0) *failed = 2;  // not built for this GPU
#endif
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
                      int unroll, CopyLoad load) {
  if (bytes == 0) return cudaSuccess;
  if (threads <= 0 || threads > 1024 || (unroll != 4 && unroll != 8 && unroll != 16)) return cudaErrorInvalidValue;
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
    switch (load) {
      case CopyLoad::kCg: launchVec<0>(unroll, g, threads, stream, vd, vs, nv); break;
      case CopyLoad::kCgPrefetch256: launchVec<1>(unroll, g, threads, stream, vd, vs, nv); break;
      case CopyLoad::kNoAllocPrefetch256: launchVec<2>(unroll, g, threads, stream, vd, vs, nv); break;
      case CopyLoad::kStreaming: launchVec<3>(unroll, g, threads, stream, vd, vs, nv); break;
      case CopyLoad::kStreamingLoadStore: launchVec<4>(unroll, g, threads, stream, vd, vs, nv); break;
      default: return cudaErrorInvalidValue;
    }
  }
  if (tail) copyByteKernel<<<1, 32, 0, stream>>>(d + head + nv * 16, s + head + nv * 16, tail);
  return cudaGetLastError();
}

cudaError_t bulkCopyBytes(void* dst, const void* src, std::size_t bytes, cudaStream_t stream, int blocks,
                          int chunkBytes, int stages, int* failed, unsigned long long timeoutNs) {
  if (bytes == 0) return cudaSuccess;
  if ((reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src) | bytes) & 15)
    return cudaErrorInvalidValue;
  if (chunkBytes < 16 || chunkBytes % 16 || stages < 2 || stages > kMaxStages || blocks <= 0)
    return cudaErrorInvalidValue;
  const std::size_t smem = static_cast<std::size_t>(chunkBytes) * stages;
  cudaError_t e = cudaFuncSetAttribute(bulkCopyKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  bulkCopyKernel<<<blocks, 32, smem, stream>>>(static_cast<char*>(dst), static_cast<const char*>(src), bytes,
                                               static_cast<unsigned>(chunkBytes), stages, failed, timeoutNs);
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

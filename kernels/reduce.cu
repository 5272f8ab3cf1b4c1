// Reduction kernels and the CUDA IPC collective programs (see reduce.h). Kernels and
// launchers only.
#include "kernels/reduce.h"
#include "kernels/elem_conv.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace fb::kernels {

std::size_t elemSize(ElemType t) { return t == ElemType::kFloat32 ? 4 : 2; }

namespace {

constexpr int kUnroll = 4;

// Element conversions: kernels/elem_conv.cuh.

struct Inputs {
  const char* p[kMaxReduceInputs];
};

// out[lo..hi) = sum_k in[k][lo..hi) (element indices), done by threads tid = 0..nthreads-1.
// Inputs are read with ld.global.cg (L2 only): they may be peer memory or memory a peer wrote.
template <int T>
__device__ __forceinline__ void reduceRange(char* out, const Inputs& in, int nIn, unsigned long long lo,
                                            unsigned long long hi, unsigned tid, unsigned nthreads) {
  constexpr int es = Conv<T>::kSize;
  if (hi <= lo) return;
  bool aligned = (reinterpret_cast<unsigned long long>(out + lo * es) & 15) == 0;
#pragma unroll
  for (int k = 0; k < kMaxReduceInputs; ++k)
    if (k < nIn) aligned = aligned && (reinterpret_cast<unsigned long long>(in.p[k] + lo * es) & 15) == 0;
  unsigned long long done = lo;
  if (aligned) {
    constexpr int perVec = 16 / es;
    const unsigned long long nv = (hi - lo) / perVec;
    uint4* o = reinterpret_cast<uint4*>(out + lo * es);
    for (unsigned long long base = tid; base < nv; base += static_cast<unsigned long long>(nthreads) * kUnroll) {
      uint4 acc[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        unsigned long long idx = base + static_cast<unsigned long long>(u) * nthreads;
        if (idx < nv) acc[u] = __ldcg(reinterpret_cast<const uint4*>(in.p[0] + lo * es) + idx);
      }
#pragma unroll
      for (int k = 1; k < kMaxReduceInputs; ++k) {
        if (k >= nIn) break;
        uint4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          unsigned long long idx = base + static_cast<unsigned long long>(u) * nthreads;
          if (idx < nv) v[u] = __ldcg(reinterpret_cast<const uint4*>(in.p[k] + lo * es) + idx);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          unsigned long long idx = base + static_cast<unsigned long long>(u) * nthreads;
          if (idx < nv) acc[u] = addVec<T>(acc[u], v[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        unsigned long long idx = base + static_cast<unsigned long long>(u) * nthreads;
        if (idx < nv) o[idx] = acc[u];
      }
    }
    done = lo + nv * perVec;
  }
  // Tail (or everything when unaligned): element by element.
  for (unsigned long long i = done + tid; i < hi; i += nthreads) {
    if (nIn == 1) {  // exact copy, no conversion round trip
      if (es == 4) *reinterpret_cast<unsigned*>(out + i * es) = __ldcg(reinterpret_cast<const unsigned*>(in.p[0] + i * es));
      else *reinterpret_cast<unsigned short*>(out + i * es) = __ldcg(reinterpret_cast<const unsigned short*>(in.p[0] + i * es));
    } else {
      // Same rounding as the vector path: round to the element type after every addition.
      float s = Conv<T>::loadCg(in.p[0] + i * es);
#pragma unroll
      for (int k = 1; k < kMaxReduceInputs; ++k) {
        if (k < nIn) s = Conv<T>::roundTo(s + Conv<T>::loadCg(in.p[k] + i * es));
      }
      Conv<T>::store(out + i * es, s);
    }
  }
}

template <int T>
__global__ void reduceKernel(char* out, Inputs in, int nIn, unsigned long long count) {
  // One contiguous slice per block (coalesced, and each block streams its own range).
  unsigned long long per = (count + gridDim.x - 1) / gridDim.x;
  per = (per + 63) & ~63ull;
  unsigned long long lo = per * blockIdx.x;
  unsigned long long hi = lo + per < count ? lo + per : count;
  if (lo >= count) return;
  reduceRange<T>(out, in, nIn, lo, hi, threadIdx.x, blockDim.x);
}

int smCount() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 132;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0) return 132;
  return sms;
}

}  // namespace

cudaError_t reduceSum(ElemType t, void* out, const void* const* inputs, int nInputs, std::size_t count,
                      cudaStream_t stream, int blocks, int threads) {
  if (nInputs < 1 || nInputs > kMaxReduceInputs || threads <= 0 || threads > 1024) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  Inputs in{};
  for (int k = 0; k < nInputs; ++k) in.p[k] = static_cast<const char*>(inputs[k]);
  if (blocks <= 0) {
    // Enough blocks to fill the GPU, but no block with less than ~16 KiB of output.
    unsigned long long want = (count * elemSize(t) + 16383) / 16384;
    unsigned long long cap = static_cast<unsigned long long>(smCount()) * 4;
    blocks = static_cast<int>(want < cap ? (want ? want : 1) : cap);
  }
  char* o = static_cast<char*>(out);
  switch (t) {
    case ElemType::kFloat32: reduceKernel<0><<<blocks, threads, 0, stream>>>(o, in, nInputs, count); break;
    case ElemType::kFloat16: reduceKernel<1><<<blocks, threads, 0, stream>>>(o, in, nInputs, count); break;
    case ElemType::kBFloat16: reduceKernel<2><<<blocks, threads, 0, stream>>>(o, in, nInputs, count); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace fb::kernels

namespace fb::kernels::ipc {

namespace {

__device__ __forceinline__ unsigned long long globalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned long long loadVolatile(const unsigned long long* p) {
  return *reinterpret_cast<const volatile unsigned long long*>(p);
}
__device__ __forceinline__ void storeVolatile(unsigned long long* p, unsigned long long v) {
  *reinterpret_cast<volatile unsigned long long*>(p) = v;
}

// Spin until *flag >= want or the time-out passes; records the failure (first one wins).
__device__ bool waitFlag(const unsigned long long* flag, unsigned long long want, unsigned long long timeoutNs,
                         KernelStatus* status, int peer) {
  unsigned long long seen = loadVolatile(flag);
  if (seen >= want) return true;
  const unsigned long long start = globalTimerNs();
  while (true) {
    seen = loadVolatile(flag);
    if (seen >= want) return true;
    if (globalTimerNs() - start > timeoutNs) break;
  }
  // Plain stores (the status lives in mapped host memory, where atomics may not be
  // available): when several blocks give up at once, one of them is reported.
  volatile KernelStatus* vs = status;
  if (vs && vs->code == 0) {
    vs->block = static_cast<int>(blockIdx.x);
    vs->peer = peer;
    vs->step = want;
    vs->observed = seen;
    __threadfence_system();
    vs->code = 1;
  }
  return false;
}

__device__ __forceinline__ void blockSlice(unsigned long long count, unsigned long long& lo, unsigned long long& hi) {
  unsigned long long per = (count + gridDim.x - 1) / gridDim.x;
  per = (per + 63) & ~63ull;  // same slice boundaries on every rank; 64 elements keep 16-byte alignment
  lo = per * blockIdx.x;
  if (lo > count) lo = count;
  hi = lo + per < count ? lo + per : count;
}

template <int T>
__global__ void ringKernel(RingProgram p) {
  __shared__ unsigned long long base;
  __shared__ int abortFlag;
  const int b = blockIdx.x;
  if (threadIdx.x == 0) {
    base = p.counters[b];
    abortFlag = 0;
  }
  __syncthreads();
  const bool peers = p.fromLeft != nullptr;
  for (int s = 0; s < p.nSteps; ++s) {
    const unsigned long long t = base + s;
    if (peers) {
      if (threadIdx.x == 0) {
        bool ok = waitFlag(p.fromLeft + b, t, p.timeoutNs, p.status, p.leftRank) &&
                  waitFlag(p.fromRight + b, t, p.timeoutNs, p.status, p.rightRank);
        if (!ok) abortFlag = 1;
        __threadfence();
      }
      __syncthreads();
      if (abortFlag) return;
    }
    const RingStep& st = p.steps[s];
    unsigned long long lo, hi;
    blockSlice(st.count, lo, hi);
    Inputs in{};
    in.p[0] = static_cast<const char*>(st.src0);
    in.p[1] = static_cast<const char*>(st.src1);
    reduceRange<T>(static_cast<char*>(st.dst), in, st.src1 ? 2 : 1, lo, hi, threadIdx.x, blockDim.x);
    if (st.count2) {
      blockSlice(st.count2, lo, hi);
      in.p[0] = static_cast<const char*>(st.src2);
      reduceRange<T>(static_cast<char*>(st.dst2), in, 1, lo, hi, threadIdx.x, blockDim.x);
    }
    __syncthreads();
    if (peers && threadIdx.x == 0) {
      __threadfence_system();
      storeVolatile(p.toLeft + b, t + 1);
      storeVolatile(p.toRight + b, t + 1);
    }
  }
  if (threadIdx.x == 0) p.counters[b] = base + p.nSteps;
}

template <int T>
__global__ void oneShotKernel(OneShotProgram p) {
  constexpr int es = Conv<T>::kSize;
  __shared__ unsigned long long seq;
  __shared__ int abortFlag;
  const int b = blockIdx.x;
  if (threadIdx.x == 0) {
    seq = p.counters[b];
    abortFlag = 0;
  }
  __syncthreads();
  const unsigned long long slot = seq & 1;
  unsigned long long lo, hi;
  blockSlice(p.count, lo, hi);
  const char* input = static_cast<const char*>(p.input);
  // 1. Push my slice into every peer's staging cell [slot][myRank].
#pragma unroll
  for (int r = 0; r < kMaxRanks; ++r) {
    if (r >= p.nRanks || r == p.rank) continue;
    char* cell = static_cast<char*>(p.staging[r]) + (slot * p.nRanks + p.rank) * p.maxBytes;
    Inputs in{};
    in.p[0] = input;
    reduceRange<T>(cell, in, 1, lo, hi, threadIdx.x, blockDim.x);
  }
  __syncthreads();
  // 2. Raise my flag in every peer, then wait for every peer's flag in my memory.
  if (threadIdx.x == 0) {
    __threadfence_system();
#pragma unroll
    for (int r = 0; r < kMaxRanks; ++r) {
      if (r >= p.nRanks || r == p.rank) continue;
      storeVolatile(p.flags[r] + (slot * p.nRanks + p.rank) * kMaxBlocks + b, seq + 1);
    }
    unsigned long long* myFlags = nullptr;
#pragma unroll
    for (int r = 0; r < kMaxRanks; ++r)
      if (r == p.rank) myFlags = p.flags[r];
    for (int r = 0; r < p.nRanks && !abortFlag; ++r) {
      if (r == p.rank) continue;
      if (!waitFlag(myFlags + (slot * p.nRanks + r) * kMaxBlocks + b, seq + 1, p.timeoutNs, p.status, r))
        abortFlag = 1;
    }
    __threadfence();
  }
  __syncthreads();
  if (abortFlag) return;
  // 3. Sum in rank order (the same order, hence the same result, on every rank).
  const char* myStaging = nullptr;
#pragma unroll
  for (int r = 0; r < kMaxRanks; ++r)
    if (r == p.rank) myStaging = static_cast<const char*>(p.staging[r]);
  Inputs in{};
#pragma unroll
  for (int r = 0; r < kMaxRanks; ++r)
    if (r < p.nRanks) in.p[r] = r == p.rank ? input : myStaging + (slot * p.nRanks + r) * p.maxBytes;
  (void)es;
  reduceRange<T>(static_cast<char*>(p.output), in, p.nRanks, lo, hi, threadIdx.x, blockDim.x);
  if (threadIdx.x == 0) p.counters[b] = seq + 1;
}

// ---- one-shot AllReduce, flags inside the data (LL) ----
// Bytes [8c, 8c+8) of buf as two 32-bit words; bytes past `bytes` read as zero.
__device__ __forceinline__ uint2 loadChunk(const char* buf, unsigned long long bytes, unsigned long long c) {
  const unsigned long long off = c * 8;
  if (off + 8 <= bytes && (reinterpret_cast<unsigned long long>(buf + off) & 7) == 0)
    return *reinterpret_cast<const uint2*>(buf + off);
  unsigned w[2] = {0, 0};
  for (int k = 0; k < 8 && off + k < bytes; ++k)
    w[k / 4] |= static_cast<unsigned>(static_cast<unsigned char>(buf[off + k])) << (8 * (k % 4));
  return make_uint2(w[0], w[1]);
}
__device__ __forceinline__ void storeChunk(char* buf, unsigned long long bytes, unsigned long long c, uint2 v) {
  const unsigned long long off = c * 8;
  if (off + 8 <= bytes && (reinterpret_cast<unsigned long long>(buf + off) & 7) == 0) {
    *reinterpret_cast<uint2*>(buf + off) = v;
    return;
  }
  const unsigned w[2] = {v.x, v.y};
  for (int k = 0; k < 8 && off + k < bytes; ++k) buf[off + k] = static_cast<char>((w[k / 4] >> (8 * (k % 4))) & 0xffu);
}

template <int T>
__global__ void oneShotLLKernel(OneShotProgram p) {
  const unsigned long long bytes = p.count * Conv<T>::kSize;
  const unsigned long long nChunks = (bytes + 7) / 8;
  const unsigned flag = p.llFlag;
  const unsigned long long slot = flag & 1u;
  const unsigned long long nth = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  const unsigned long long tid = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const char* input = static_cast<const char*>(p.input);
  // 1. Push: my 8-byte chunks, with the flag, into cell [slot][myRank] of every peer.
  for (unsigned long long c = tid; c < nChunks; c += nth) {
    const uint2 d = loadChunk(input, bytes, c);
#pragma unroll
    for (int r = 0; r < kMaxRanks; ++r) {
      if (r >= p.nRanks || r == p.rank) continue;
      uint4* line = reinterpret_cast<uint4*>(static_cast<char*>(p.staging[r]) + (slot * p.nRanks + p.rank) * p.maxBytes) + c;
      asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(line), "r"(d.x), "r"(flag), "r"(d.y),
                   "r"(flag)
                   : "memory");
    }
  }
  // 2. Sum in rank order as each peer's line arrives (the same order, hence result, on every rank).
  const char* mine = nullptr;
#pragma unroll
  for (int r = 0; r < kMaxRanks; ++r)
    if (r == p.rank) mine = static_cast<const char*>(p.staging[r]);
  for (unsigned long long c = tid; c < nChunks; c += nth) {
    uint2 acc = make_uint2(0, 0);
    for (int r = 0; r < p.nRanks; ++r) {
      uint2 v;
      if (r == p.rank) {
        v = loadChunk(input, bytes, c);
      } else {
        const uint4* line = reinterpret_cast<const uint4*>(mine + (slot * p.nRanks + r) * p.maxBytes) + c;
        uint4 l;
        unsigned long long start = 0;
        while (true) {
          asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                       : "=r"(l.x), "=r"(l.y), "=r"(l.z), "=r"(l.w)
                       : "l"(line)
                       : "memory");
          if (l.y == flag && l.w == flag) break;
          const unsigned long long now = globalTimerNs();
          if (start == 0) {
            start = now;
          } else if (now - start > p.timeoutNs) {
            volatile KernelStatus* vs = p.status;
            if (vs && vs->code == 0) {
              vs->block = static_cast<int>(blockIdx.x);
              vs->peer = r;
              vs->step = flag;
              vs->observed = l.y == flag ? l.w : l.y;
              __threadfence_system();
              vs->code = 1;
            }
            return;
          }
        }
        v = make_uint2(l.x, l.z);
      }
      if (r == 0) acc = v;
      else acc = make_uint2(Conv<T>::addWord(acc.x, v.x), Conv<T>::addWord(acc.y, v.y));
    }
    storeChunk(static_cast<char*>(p.output), bytes, c, acc);
  }
}

}  // namespace

cudaError_t launchRing(const RingProgram& p, int blocks, int threads, cudaStream_t stream) {
  if (blocks <= 0 || blocks > kMaxBlocks || p.nSteps < 0 || p.nSteps > kMaxRingSteps) return cudaErrorInvalidValue;
  switch (p.type) {
    case ElemType::kFloat32: ringKernel<0><<<blocks, threads, 0, stream>>>(p); break;
    case ElemType::kFloat16: ringKernel<1><<<blocks, threads, 0, stream>>>(p); break;
    case ElemType::kBFloat16: ringKernel<2><<<blocks, threads, 0, stream>>>(p); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launchOneShot(const OneShotProgram& p, int blocks, int threads, cudaStream_t stream) {
  if (blocks <= 0 || blocks > kMaxBlocks || p.nRanks < 1 || p.nRanks > kMaxRanks) return cudaErrorInvalidValue;
  if (p.count * elemSize(p.type) > p.maxBytes) return cudaErrorInvalidValue;
  switch (p.type) {
    case ElemType::kFloat32: oneShotKernel<0><<<blocks, threads, 0, stream>>>(p); break;
    case ElemType::kFloat16: oneShotKernel<1><<<blocks, threads, 0, stream>>>(p); break;
    case ElemType::kBFloat16: oneShotKernel<2><<<blocks, threads, 0, stream>>>(p); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launchOneShotLL(const OneShotProgram& p, int blocks, int threads, cudaStream_t stream) {
  if (blocks <= 0 || blocks > kMaxBlocks || p.nRanks < 1 || p.nRanks > kMaxRanks || p.llFlag == 0)
    return cudaErrorInvalidValue;
  if (2 * ((p.count * elemSize(p.type) + 7) / 8 * 8) > p.maxBytes || p.maxBytes % 16) return cudaErrorInvalidValue;
  switch (p.type) {
    case ElemType::kFloat32: oneShotLLKernel<0><<<blocks, threads, 0, stream>>>(p); break;
    case ElemType::kFloat16: oneShotLLKernel<1><<<blocks, threads, 0, stream>>>(p); break;
    case ElemType::kBFloat16: oneShotLLKernel<2><<<blocks, threads, 0, stream>>>(p); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace fb::kernels::ipc

// Kernels for kernels/fill_verify.h (pattern, expected value and comparison: kernels/verify.h).
// Grid-stride loops; the wrong count is reduced per block
// and added once per block.
#include "kernels/fill_verify.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace fb::kernels {
namespace {

constexpr int kThreads = 256;

template <typename T> __device__ __forceinline__ T fromDouble(double v);
template <> __device__ __forceinline__ float fromDouble<float>(double v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ double fromDouble<double>(double v) { return v; }
template <> __device__ __forceinline__ int fromDouble<int>(double v) { return static_cast<int>(v); }
template <> __device__ __forceinline__ __half fromDouble<__half>(double v) { return __float2half_rn(static_cast<float>(v)); }
template <> __device__ __forceinline__ __nv_bfloat16 fromDouble<__nv_bfloat16>(double v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}

template <typename T> __device__ __forceinline__ double toDouble(T v);
template <> __device__ __forceinline__ double toDouble<float>(float v) { return v; }
template <> __device__ __forceinline__ double toDouble<double>(double v) { return v; }
template <> __device__ __forceinline__ double toDouble<int>(int v) { return v; }
template <> __device__ __forceinline__ double toDouble<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ double toDouble<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__global__ void fillPatternKernel(T* buf, unsigned long long count, int rank, int seed, verify::Op op) {
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < count;
       i += stride)
    buf[i] = fromDouble<T>(verify::pattern(rank, i, seed, op));
}

template <typename T>
__global__ void fillValueKernel(T* buf, unsigned long long count, double value) {
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  T v = fromDouble<T>(value);
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < count;
       i += stride)
    buf[i] = v;
}

template <typename T>
__global__ void countWrongKernel(const T* recv, VerifySpec spec, unsigned long long* wrong) {
  __shared__ unsigned long long blockWrong;
  if (threadIdx.x == 0) blockWrong = 0;
  __syncthreads();
  unsigned long long mine = 0;
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long j = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       j < spec.recvCount; j += stride) {
    if (!verify::matches(spec, toDouble<T>(recv[j]), verify::expected(spec, j))) ++mine;
  }
  if (mine) atomicAdd(&blockWrong, mine);
  __syncthreads();
  if (threadIdx.x == 0 && blockWrong) atomicAdd(wrong, blockWrong);
}

template <typename T>
__global__ void corruptKernel(T* buf, unsigned long long index) {
  buf[index] = fromDouble<T>(1000.0);
}

int blocksFor(unsigned long long n) {
  unsigned long long b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > 132ull * 16ull) b = 132ull * 16ull;  // grid-stride: a few waves over 132 SMs
  return static_cast<int>(b);
}

template <template <typename> class Launch, typename... Args>
cudaError_t dispatch(KDtype t, Args&&... args) {
  switch (t) {
    case KDtype::kFloat32: return Launch<float>::run(args...);
    case KDtype::kFloat64: return Launch<double>::run(args...);
    case KDtype::kInt32: return Launch<int>::run(args...);
    case KDtype::kFloat16: return Launch<__half>::run(args...);
    case KDtype::kBFloat16: return Launch<__nv_bfloat16>::run(args...);
  }
  return cudaErrorInvalidValue;
}

template <typename T> struct FillPattern {
  static cudaError_t run(void* buf, std::size_t count, int rank, int seed, cudaStream_t s, verify::Op op) {
    if (count == 0) return cudaSuccess;
    fillPatternKernel<T><<<blocksFor(count), kThreads, 0, s>>>(static_cast<T*>(buf), count, rank, seed, op);
    return cudaGetLastError();
  }
};
template <typename T> struct FillValue {
  static cudaError_t run(void* buf, std::size_t count, double v, cudaStream_t s) {
    if (count == 0) return cudaSuccess;
    fillValueKernel<T><<<blocksFor(count), kThreads, 0, s>>>(static_cast<T*>(buf), count, v);
    return cudaGetLastError();
  }
};
template <typename T> struct CountWrong {
  static cudaError_t run(const void* recv, const VerifySpec& spec, unsigned long long* wrong, cudaStream_t s) {
    if (spec.recvCount == 0) return cudaSuccess;
    countWrongKernel<T><<<blocksFor(spec.recvCount), kThreads, 0, s>>>(static_cast<const T*>(recv), spec, wrong);
    return cudaGetLastError();
  }
};
template <typename T> struct Corrupt {
  static cudaError_t run(void* buf, std::size_t index, cudaStream_t s) {
    corruptKernel<T><<<1, 1, 0, s>>>(static_cast<T*>(buf), index);
    return cudaGetLastError();
  }
};

}  // namespace

cudaError_t fillPattern(void* buf, KDtype t, std::size_t count, int rank, int seed, cudaStream_t stream,
                        verify::Op op) {
  return dispatch<FillPattern>(t, buf, count, rank, seed, stream, op);
}

cudaError_t fillValue(void* buf, KDtype t, std::size_t count, double value, cudaStream_t stream) {
  return dispatch<FillValue>(t, buf, count, value, stream);
}

cudaError_t countWrong(const void* recv, const VerifySpec& spec, unsigned long long* devWrong,
                       cudaStream_t stream) {
  if (spec.rule.withinBlock && spec.paramCount == 0 && spec.recvCount != 0) return cudaErrorInvalidValue;
  return dispatch<CountWrong>(static_cast<KDtype>(spec.dtype), recv, spec, devWrong, stream);
}

cudaError_t corruptElement(void* buf, KDtype t, std::size_t index, cudaStream_t stream) {
  return dispatch<Corrupt>(t, buf, index, stream);
}

}  // namespace fb::kernels

// The CUDA IPC collective's fill and check kernels (reduce.h: fillPattern, fillValue, countWrong)
// and their launchers. Kernels and launchers only.
#include "kernels/elem_conv.cuh"
#include "kernels/reduce.h"

namespace fb::kernels::ipc {

namespace {

__device__ __forceinline__ float patternDev(int rank, unsigned long long i, int seed) {
  unsigned long long v = i * 3ull + static_cast<unsigned long long>(static_cast<long long>(rank)) * 5ull +
                         static_cast<unsigned long long>(static_cast<long long>(seed)) * 7ull;
  return static_cast<float>(static_cast<long long>(v % 9ull) - 4);
}

template <int T>
__global__ void fillPatternKernel(char* buf, unsigned long long count, int rank, int seed) {
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x)
    Conv<T>::store(buf + i * Conv<T>::kSize, patternDev(rank, i, seed));
}

template <int T>
__global__ void fillValueKernel(char* buf, unsigned long long count, float value) {
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x)
    Conv<T>::store(buf + i * Conv<T>::kSize, value);
}

template <int T>
__global__ void countWrongKernel(const char* buf, unsigned long long count, ExpectSpec e, unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (unsigned long long j = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; j < count;
       j += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    float expect = 0;
    switch (e.kind) {
      case Expect::kAllReduce:
        for (int r = 0; r < e.nRanks; ++r) expect += patternDev(r, j, e.seed);
        break;
      case Expect::kAllGather:
        expect = patternDev(static_cast<int>(j / e.paramCount), j % e.paramCount, e.seed);
        break;
      case Expect::kReduceScatter:
        for (int r = 0; r < e.nRanks; ++r)
          expect += patternDev(r, static_cast<unsigned long long>(e.rank) * e.paramCount + j, e.seed);
        break;
      case Expect::kPattern:
        expect = patternDev(e.srcRank, j, e.seed);
        break;
    }
    float got = Conv<T>::loadCg(buf + j * Conv<T>::kSize);
    if (!(got == expect)) ++mine;  // NaN counts as wrong
  }
  // Warp-reduce, one atomic per warp.
  for (int off = 16; off > 0; off /= 2) mine += __shfl_down_sync(0xffffffffu, mine, off);
  if ((threadIdx.x & 31) == 0 && mine) atomicAdd(wrong, mine);
}

int gridFor(unsigned long long count, int threads) {
  unsigned long long g = (count + threads - 1) / threads;
  if (g > 4096) g = 4096;
  return g ? static_cast<int>(g) : 1;
}

}  // namespace

cudaError_t fillPattern(ElemType t, void* buf, std::size_t count, int rank, int seed, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  char* b = static_cast<char*>(buf);
  int g = gridFor(count, 256);
  switch (t) {
    case ElemType::kFloat32: fillPatternKernel<0><<<g, 256, 0, stream>>>(b, count, rank, seed); break;
    case ElemType::kFloat16: fillPatternKernel<1><<<g, 256, 0, stream>>>(b, count, rank, seed); break;
    case ElemType::kBFloat16: fillPatternKernel<2><<<g, 256, 0, stream>>>(b, count, rank, seed); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t fillValue(ElemType t, void* buf, std::size_t count, float value, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  char* b = static_cast<char*>(buf);
  int g = gridFor(count, 256);
  switch (t) {
    case ElemType::kFloat32: fillValueKernel<0><<<g, 256, 0, stream>>>(b, count, value); break;
    case ElemType::kFloat16: fillValueKernel<1><<<g, 256, 0, stream>>>(b, count, value); break;
    case ElemType::kBFloat16: fillValueKernel<2><<<g, 256, 0, stream>>>(b, count, value); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t countWrong(ElemType t, const void* buf, std::size_t count, const ExpectSpec& spec,
                       unsigned long long* dWrong, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if ((spec.kind == Expect::kAllGather) && spec.paramCount == 0) return cudaErrorInvalidValue;
  const char* b = static_cast<const char*>(buf);
  int g = gridFor(count, 256);
  switch (t) {
    case ElemType::kFloat32: countWrongKernel<0><<<g, 256, 0, stream>>>(b, count, spec, dWrong); break;
    case ElemType::kFloat16: countWrongKernel<1><<<g, 256, 0, stream>>>(b, count, spec, dWrong); break;
    case ElemType::kBFloat16: countWrongKernel<2><<<g, 256, 0, stream>>>(b, count, spec, dWrong); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace fb::kernels::ipc

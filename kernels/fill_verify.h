// GPU fill and verify for the collectives' verifiable data (lib/collectives/spec.h):
// element i of rank r's send buffer in round `seed` is patternValue(r, i, seed) =
// ((i*3 + r*5 + seed*7) % 9) - 4, and the expected receive buffer follows expectedValue().
// Declarations only (no CUDA syntax): usable from .cc files. Launchers return cudaError_t.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace fb::kernels {

// Same order as fb::DataType and fb::CollKind (checked by static_asserts in the callers).
enum class KDtype : int { kFloat32 = 0, kFloat64 = 1, kInt32 = 2, kFloat16 = 3, kBFloat16 = 4 };
enum class KColl : int { kAllReduce = 0, kAllGather = 1, kReduceScatter = 2, kP2PRing = 3 };

// buf[i] = pattern(rank, i, seed) for i in [0, count).
cudaError_t fillPattern(void* buf, KDtype t, std::size_t count, int rank, int seed, cudaStream_t stream);

// Fill every element with the same value (a poison the result can never equal).
cudaError_t fillValue(void* buf, KDtype t, std::size_t count, double value, cudaStream_t stream);

struct VerifySpec {
  KColl coll = KColl::kAllReduce;
  KDtype dtype = KDtype::kFloat32;
  int nRanks = 1;
  int rank = 0;
  std::size_t paramCount = 0;  // the count passed to the collective (CollShape::paramCount)
  std::size_t recvCount = 0;   // elements to check
  int seed = 0;
};

// Adds to *devWrong (device memory) the number of elements of recv that differ from the
// expected result. The caller zeroes *devWrong first and copies it back after the stream syncs.
cudaError_t countWrong(const void* recv, const VerifySpec& spec, unsigned long long* devWrong,
                       cudaStream_t stream);

// Test hook: overwrite buf[index] with a value no collective result can hold (1000).
cudaError_t corruptElement(void* buf, KDtype t, std::size_t index, cudaStream_t stream);

}  // namespace fb::kernels

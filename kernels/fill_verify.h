// GPU fill and verify for the collectives' verifiable data: the pattern, the expected-output
// rule and the comparison are those of kernels/verify.h, shared with the host (spec.cc); the
// rule comes from the collective's descriptor (fb::verifySpec).
// Declarations only (no CUDA syntax): usable from .cc files. Launchers return cudaError_t.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/verify.h"

namespace fb::kernels {

// Same order as fb::DataType (checked by static_asserts in the callers).
enum class KDtype : int { kFloat32 = 0, kFloat64 = 1, kInt32 = 2, kFloat16 = 3, kBFloat16 = 4 };

// buf[i] = verify::pattern(rank, i, seed, op) for i in [0, count).
cudaError_t fillPattern(void* buf, KDtype t, std::size_t count, int rank, int seed, cudaStream_t stream,
                        verify::Op op = verify::Op::kSum);

// Fill every element with the same value (a poison the result can never equal).
cudaError_t fillValue(void* buf, KDtype t, std::size_t count, double value, cudaStream_t stream);

using VerifySpec = verify::VerifySpec;  // spec.dtype picks the element type

// Adds to *devWrong (device memory) the number of elements of recv that differ from the
// expected result. The caller zeroes *devWrong first and copies it back after the stream syncs.
cudaError_t countWrong(const void* recv, const VerifySpec& spec, unsigned long long* devWrong,
                       cudaStream_t stream);

// Test hook: overwrite buf[index] with a value no collective result can hold (1000).
cudaError_t corruptElement(void* buf, KDtype t, std::size_t index, cudaStream_t stream);

}  // namespace fb::kernels

// Host-side element-wise reduction used by the host algorithms: out[i] = a[i] op b[i] (out may
// alias a or b), and the last step of an average. float16/bfloat16 go through float with
// round-to-nearest-even after every operation.
#pragma once
#include <cstddef>

#include "collectives/spec.h"
#include "core/dtype.h"

namespace fb {
// avg reduces like sum; hostFinish then divides by the rank count.
void hostReduce(void* out, const void* a, const void* b, std::size_t count, DataType t, ReduceOp op);
inline void hostSum(void* out, const void* a, const void* b, std::size_t count, DataType t) {
  hostReduce(out, a, b, count, t, ReduceOp::kSum);
}
// For avg: buf[i] /= nRanks (float types: the exact quotient rounded once; int32: truncated toward
// zero, as NCCL does). A no-op for the other operators.
void hostFinish(void* buf, std::size_t count, DataType t, ReduceOp op, int nRanks);
}  // namespace fb

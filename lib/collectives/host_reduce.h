// Host-side element-wise sum used by the ring algorithms: out[i] = a[i] + b[i] (out may alias a or b).
// float16/bfloat16 go through float with round-to-nearest-even.
#pragma once
#include <cstddef>

#include "core/dtype.h"

namespace fb {
void hostSum(void* out, const void* a, const void* b, std::size_t count, DataType t);
}

#include "collectives/host_reduce.h"

#include <cstdint>

namespace fb {
namespace {
template <typename T>
void sumT(T* __restrict__ out, const T* a, const T* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
template <float (*Load)(std::uint16_t), std::uint16_t (*Store)(float)>
void sum16(std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = Store(Load(a[i]) + Load(b[i]));
}
}  // namespace

void hostSum(void* out, const void* a, const void* b, std::size_t n, DataType t) {
  switch (t) {
    case DataType::kFloat32:
      sumT(static_cast<float*>(out), static_cast<const float*>(a), static_cast<const float*>(b), n);
      break;
    case DataType::kFloat64:
      sumT(static_cast<double*>(out), static_cast<const double*>(a), static_cast<const double*>(b), n);
      break;
    case DataType::kInt32:
      sumT(static_cast<std::int32_t*>(out), static_cast<const std::int32_t*>(a),
           static_cast<const std::int32_t*>(b), n);
      break;
    case DataType::kFloat16:
      sum16<halfToFloat, floatToHalf>(static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(a),
                                      static_cast<const std::uint16_t*>(b), n);
      break;
    case DataType::kBFloat16:
      sum16<bf16ToFloat, floatToBf16>(static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(a),
                                      static_cast<const std::uint16_t*>(b), n);
      break;
  }
}
}  // namespace fb

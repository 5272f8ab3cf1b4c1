#include "collectives/host_reduce.h"

#include <algorithm>
#include <cstdint>

namespace fb {
namespace {

struct Sum { template <typename T> static T f(T a, T b) { return a + b; } };
struct Prod { template <typename T> static T f(T a, T b) { return a * b; } };
struct Min { template <typename T> static T f(T a, T b) { return std::min(a, b); } };
struct Max { template <typename T> static T f(T a, T b) { return std::max(a, b); } };
// int32 sum and product wrap (two's complement) instead of overflowing into undefined behaviour.
struct ISum { static std::int32_t f(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b)); } };
struct IProd { static std::int32_t f(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b)); } };

template <typename Op, typename T>
void loop(T* __restrict__ out, const T* a, const T* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = Op::f(a[i], b[i]);
}
template <typename Op, float (*Load)(std::uint16_t), std::uint16_t (*Store)(float)>
void loop16(std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = Store(Op::f(Load(a[i]), Load(b[i])));
}

template <typename Op, typename IOp>
void reduceAs(void* out, const void* a, const void* b, std::size_t n, DataType t) {
  switch (t) {
    case DataType::kFloat32:
      loop<Op>(static_cast<float*>(out), static_cast<const float*>(a), static_cast<const float*>(b), n);
      break;
    case DataType::kFloat64:
      loop<Op>(static_cast<double*>(out), static_cast<const double*>(a), static_cast<const double*>(b), n);
      break;
    case DataType::kInt32:
      loop<IOp>(static_cast<std::int32_t*>(out), static_cast<const std::int32_t*>(a),
                static_cast<const std::int32_t*>(b), n);
      break;
    case DataType::kFloat16:
      loop16<Op, halfToFloat, floatToHalf>(static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(a),
                                          static_cast<const std::uint16_t*>(b), n);
      break;
    case DataType::kBFloat16:
      loop16<Op, bf16ToFloat, floatToBf16>(static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(a),
                                          static_cast<const std::uint16_t*>(b), n);
      break;
  }
}

}  // namespace

void hostReduce(void* out, const void* a, const void* b, std::size_t n, DataType t, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: reduceAs<Sum, ISum>(out, a, b, n, t); break;
    case ReduceOp::kProd: reduceAs<Prod, IProd>(out, a, b, n, t); break;
    case ReduceOp::kMin: reduceAs<Min, Min>(out, a, b, n, t); break;
    case ReduceOp::kMax: reduceAs<Max, Max>(out, a, b, n, t); break;
  }
}

void hostFinish(void* buf, std::size_t n, DataType t, ReduceOp op, int nRanks) {
  if (op != ReduceOp::kAvg || nRanks == 1) return;
  for (std::size_t i = 0; i < n; ++i) {
    double v = loadElement(buf, t, i);
    storeElement(buf, t, i, t == DataType::kInt32 ? static_cast<double>(static_cast<long long>(v) / nRanks) : v / nRanks);
  }
}

}  // namespace fb

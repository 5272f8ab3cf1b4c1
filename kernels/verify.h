// The verifiable data of every collective, written once for the host (lib/collectives/spec.cc)
// and the GPU kernels (kernels/fill_verify.cu): the input pattern, the rule that says where
// element j of a rank's output comes from, the reduction operators, and the comparison.
// Plain C++ (host and device functions when compiled by nvcc); no CUDA runtime calls.
//
// Input: element i of rank r's send buffer in round `seed` is pattern(r, i, seed, op):
//   p = (i*3 + r*5 + seed*7) mod 9; value p - 4 in [-4, 4] (every sum of up to 64 ranks is exact
//   in int32, float16 and bfloat16). For prod, the value is 2 when p = 0, -1 when p is odd, else 1,
//   so a product over n ranks is ±2^k with k <= ceil(n/9): exact in every type up to 135 ranks.
// Output: each collective's descriptor carries an ExpectRule (below): either the reduction
// over every rank of pattern(r, idx), or pattern(src, idx) of one source rank.
#pragma once
#include <cstddef>

#if defined(__CUDACC__)
#define FB_HD __host__ __device__ __forceinline__
#else
#define FB_HD inline
#endif

namespace fb::verify {

// nccl-tests' -o: sum, prod, min, max, avg (NCCL's ncclAvg).
enum class Op : int { kSum = 0, kProd = 1, kMin = 2, kMax = 3, kAvg = 4 };
// Same order as fb::DataType (checked where the two meet).
enum class Dtype : int { kFloat32 = 0, kFloat64 = 1, kInt32 = 2, kFloat16 = 3, kBFloat16 = 4 };

// Where element j (of recvCount) of rank `rank`'s output comes from; c = paramCount.
struct ExpectRule {
  enum Source : int {
    kAllRanks = 0,  // reduce pattern(r, idx) over every rank r with the operator
    kLeft = 1,      // pattern(rank - 1, idx)            (P2P ring)
    kBlock = 2,     // pattern(j / c, idx)               (AllGather, AllToAll: block b from rank b)
    kRoot = 3,      // pattern(root, idx)                (Broadcast)
  };
  Source source = kAllRanks;
  bool rankBlockOffset = false;  // idx starts at rank * c (ReduceScatter, AllToAll)
  bool withinBlock = false;      // idx += j % c, else idx += j
};

struct VerifySpec {
  ExpectRule rule;
  Op op = Op::kSum;
  Dtype dtype = Dtype::kFloat32;
  int nRanks = 1;
  int rank = 0;
  int root = 0;
  int seed = 0;
  unsigned long long paramCount = 0;
  unsigned long long recvCount = 0;
};

FB_HD double pattern(int rank, unsigned long long i, int seed, Op op) {
  int p = static_cast<int>((i * 3ull + static_cast<unsigned long long>(rank) * 5ull +
                            static_cast<unsigned long long>(static_cast<long long>(seed) * 7ll)) % 9ull);
  if (op == Op::kProd) return p == 0 ? 2.0 : (p % 2 ? -1.0 : 1.0);
  return static_cast<double>(p - 4);
}

// The exact result of reducing the inputs of every rank (avg: the exact mean for float types;
// integer division truncated toward zero for int32, as NCCL does).
FB_HD double reduceAll(const VerifySpec& s, unsigned long long idx) {
  double acc = pattern(0, idx, s.seed, s.op);
  for (int r = 1; r < s.nRanks; ++r) {
    double v = pattern(r, idx, s.seed, s.op);
    switch (s.op) {
      case Op::kSum:
      case Op::kAvg: acc += v; break;
      case Op::kProd: acc *= v; break;
      case Op::kMin: acc = v < acc ? v : acc; break;
      case Op::kMax: acc = v > acc ? v : acc; break;
    }
  }
  if (s.op == Op::kAvg) {
    if (s.dtype == Dtype::kInt32) {
      long long q = static_cast<long long>(acc) / s.nRanks;  // C division truncates toward zero
      return static_cast<double>(q);
    }
    return acc / s.nRanks;
  }
  return acc;
}

FB_HD double expected(const VerifySpec& s, unsigned long long j) {
  const unsigned long long c = s.paramCount;
  unsigned long long idx = (s.rule.rankBlockOffset ? static_cast<unsigned long long>(s.rank) * c : 0ull) +
                           (s.rule.withinBlock ? (c ? j % c : 0ull) : j);
  switch (s.rule.source) {
    case ExpectRule::kAllRanks: return reduceAll(s, idx);
    case ExpectRule::kLeft: return pattern((s.rank - 1 + s.nRanks) % s.nRanks, idx, s.seed, s.op);
    case ExpectRule::kBlock: return pattern(c ? static_cast<int>(j / c) : 0, idx, s.seed, s.op);
    case ExpectRule::kRoot: return pattern(s.root, idx, s.seed, s.op);
  }
  return 0;
}

// Exact comparison, except the average of float types: NCCL scales every input by 1/n before the
// sum (rounded in the element type), so the result may differ from the exact mean by a few ulp
// per rank; allowed: 8 · n · epsilon(type) · 4 (4 = the largest input).
FB_HD bool matches(const VerifySpec& s, double got, double want) {
  if (got == want) return true;
  if (s.op != Op::kAvg || s.dtype == Dtype::kInt32) return false;
  double eps = s.dtype == Dtype::kFloat64 ? 2.3e-16 : s.dtype == Dtype::kFloat32 ? 1.2e-7
             : s.dtype == Dtype::kFloat16 ? 9.8e-4 : 7.9e-3;
  double d = got - want;
  if (d < 0) d = -d;
  return d <= 8.0 * s.nRanks * eps * 4.0;  // false for NaN
}

}  // namespace fb::verify

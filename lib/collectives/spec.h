// WHAT is measured, written once and shared by every implementation (nccl-tests' testColl
// without runColl). Byte accounting and busbw factors follow nccl-tests doc/PERFORMANCE.md:
//   algbw = S / t (GB = 1e9), busbw = algbw × factor
//   AllReduce      S = count × elt                 factor 2(n-1)/n  (reduce-scatter + all-gather:
//                                                   each rank sends and receives 2(n-1)/n · S)
//   AllGather      S = count × elt × n (total out) factor (n-1)/n   (each rank receives n-1 chunks)
//   ReduceScatter  S = count × elt × n (total in)  factor (n-1)/n   (the reduce half of AllReduce)
//   P2P ring       S = count × elt                 factor 1         (send right, receive left)
// For n = 1 the factor is 0 for the first three: busbw = 0, as in nccl-tests.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace fb {

enum class CollKind { kAllReduce, kAllGather, kReduceScatter, kP2PRing };

std::string_view collName(CollKind k);  // "allreduce", "allgather", "reducescatter", "p2pring"
std::optional<CollKind> parseCollKind(std::string_view name);  // also "sendrecv", "ring", "all_reduce"...
std::vector<CollKind> allCollKinds();
double busBwFactor(CollKind k, int nRanks);

// Element counts for a requested size, rounded down as nccl-tests does.
struct CollShape {
  CollKind kind;
  DataType dtype;
  int nRanks = 1;
  std::size_t sendCount = 0;   // elements in this rank's send buffer
  std::size_t recvCount = 0;   // elements in this rank's receive buffer
  std::size_t paramCount = 0;  // "count" column: the count passed to the collective call
  std::size_t bytes = 0;       // S actually measured (after rounding)
  bool inPlace = false;
  // In-place offsets in elements (nccl-tests): AllGather sends from recv + rank·count;
  // ReduceScatter receives into send + rank·count.
  std::size_t sendInPlaceOffset(int rank) const;
  std::size_t recvInPlaceOffset(int rank) const;
};
CollShape makeShape(CollKind k, DataType t, std::size_t requestedBytes, int nRanks, bool inPlace);

// The verifiable input: element i of rank r's send buffer in round `seed`. Small integers in
// [-4, 4], so every sum of up to 64 ranks is exact in int32, float16 and bfloat16. GPU kernels in
// kernels/ implement the same formula.
inline double patternValue(int rank, std::size_t i, int seed) {
  return static_cast<double>(static_cast<long long>((i * 3 + static_cast<std::size_t>(rank) * 5 +
                                                     static_cast<std::size_t>(seed) * 7) % 9) - 4);
}
// Expected value of element j of `rank`'s receive buffer after the collective.
double expectedValue(const CollShape& s, int rank, std::size_t j, int seed);

// Host helpers: fill a send buffer, count wrong elements of a receive buffer.
void fillPattern(void* buf, DataType t, std::size_t count, int rank, int seed);
std::int64_t countWrong(const CollShape& s, const void* recv, int rank, int seed);

}  // namespace fb

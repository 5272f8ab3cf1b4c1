// WHAT is measured, written once and shared by every implementation (nccl-tests' testColl
// without runColl). Every collective is one descriptor (lib/collectives/descriptors/<name>.cc):
// name and aliases, buffer shapes, bus-bandwidth factor, the rule for its expected output (on
// the host and in the kernels: kernels/verify.h) and whether it takes a root or an operator.
// Byte accounting and busbw factors follow nccl-tests doc/PERFORMANCE.md:
//   algbw = S / t (GB = 1e9), busbw = algbw × factor; for n = 1 the (n-1)/n factors give 0.
// Adding a collective: one descriptor file, a CollKind value, its line in descriptors.cc, and
// an implementation per backend (a backend without one declines it: its rows are skipped).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "kernels/verify.h"

namespace fb {

enum class CollKind { kAllReduce, kAllGather, kReduceScatter, kP2PRing, kAllToAll, kBroadcast };

using ReduceOp = verify::Op;
std::string_view opName(ReduceOp op);  // "sum", "prod", "min", "max", "avg"
std::optional<ReduceOp> parseReduceOp(std::string_view name);
std::vector<ReduceOp> allReduceOps();

// One collective, as data. Buffers are counted in units of paramCount (the count passed to the
// collective call): the requested size gives count = bytes / element size, then
//   paramCount = count / n when splitPerRank (rounded down as nccl-tests does), else count;
//   sendCount  = paramCount × (sendPerRank ? n : 1); recvCount = paramCount × (recvPerRank ? n : 1);
//   S          = max(sendCount, recvCount) × element size.
struct CollDescriptor {
  CollKind kind;
  std::string_view name;                  // "allreduce"
  std::vector<std::string_view> aliases;  // also accepted by --collective
  std::string_view summary;               // one line for --help and --list
  bool splitPerRank = false;
  bool sendPerRank = false;
  bool recvPerRank = false;
  // In place, the send or receive buffer sits at rank × paramCount inside the one buffer (nccl-tests).
  bool inPlaceSendAtRankBlock = false;
  bool inPlaceRecvAtRankBlock = false;
  bool hasInPlace = true;    // false: measured out-of-place only (the note says why)
  std::string_view noInPlaceWhy;
  bool reduces = false;      // takes the reduction operator (-o)
  bool needsRoot = false;    // takes --root
  double (*busBwFactor)(int nRanks) = nullptr;
  verify::ExpectRule expect;
};

const CollDescriptor& describe(CollKind k);
const std::vector<const CollDescriptor*>& allCollectives();  // in the order "all" runs them

std::string_view collName(CollKind k);
std::optional<CollKind> parseCollKind(std::string_view name);  // names and aliases
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
  ReduceOp op = ReduceOp::kSum;  // reducing collectives only
  int root = 0;                  // rooted collectives only
  // In-place offsets in elements (nccl-tests): AllGather sends from recv + rank·count;
  // ReduceScatter receives into send + rank·count.
  std::size_t sendInPlaceOffset(int rank) const;
  std::size_t recvInPlaceOffset(int rank) const;
  const CollDescriptor& desc() const { return describe(kind); }
};
CollShape makeShape(CollKind k, DataType t, std::size_t requestedBytes, int nRanks, bool inPlace,
                    ReduceOp op = ReduceOp::kSum, int root = 0);

// The row's collective column: the name, with the operator when not sum ("allreduce(prod)") and
// the root when not 0 ("broadcast(root=2)").
std::string rowName(const CollShape& s);

// The verification spec of one rank's output in round `seed` (shared with the GPU kernels).
verify::VerifySpec verifySpec(const CollShape& s, int rank, int seed);

// The verifiable input: element i of rank r's send buffer in round `seed` (kernels/verify.h).
inline double patternValue(int rank, std::size_t i, int seed, ReduceOp op = ReduceOp::kSum) {
  return verify::pattern(rank, i, seed, op);
}
// Expected value of element j of `rank`'s receive buffer after the collective.
double expectedValue(const CollShape& s, int rank, std::size_t j, int seed);

// Host helpers: fill a send buffer, count wrong elements of a receive buffer.
void fillPattern(void* buf, DataType t, std::size_t count, int rank, int seed, ReduceOp op = ReduceOp::kSum);
std::int64_t countWrong(const CollShape& s, const void* recv, int rank, int seed);

// The row detail holding a collective's typed algorithm id, the cost model's name for it (lib/model's
// algoTable: "ring", "hier", "one-shot", ...), beside the human "algorithm" text. Written by the host and
// cuda collectives, read by lib/model (algoOfRow).
inline constexpr const char* kModelAlgoKey = "model_algo";

}  // namespace fb

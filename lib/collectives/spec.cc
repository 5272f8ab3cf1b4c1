#include "collectives/spec.h"

#include <cstdint>

#include "core/error.h"

namespace fb {

std::string_view collName(CollKind k) {
  switch (k) {
    case CollKind::kAllReduce: return "allreduce";
    case CollKind::kAllGather: return "allgather";
    case CollKind::kReduceScatter: return "reducescatter";
    case CollKind::kP2PRing: return "p2pring";
  }
  return "?";
}

std::optional<CollKind> parseCollKind(std::string_view n) {
  if (n == "allreduce" || n == "all_reduce") return CollKind::kAllReduce;
  if (n == "allgather" || n == "all_gather") return CollKind::kAllGather;
  if (n == "reducescatter" || n == "reduce_scatter") return CollKind::kReduceScatter;
  if (n == "p2pring" || n == "p2p" || n == "ring" || n == "sendrecv") return CollKind::kP2PRing;
  return std::nullopt;
}

std::vector<CollKind> allCollKinds() {
  return {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter, CollKind::kP2PRing};
}

double busBwFactor(CollKind k, int n) {
  switch (k) {
    case CollKind::kAllReduce: return 2.0 * (n - 1) / n;
    case CollKind::kAllGather:
    case CollKind::kReduceScatter: return static_cast<double>(n - 1) / n;
    case CollKind::kP2PRing: return 1.0;
  }
  return 0;
}

std::size_t CollShape::sendInPlaceOffset(int rank) const {
  return kind == CollKind::kAllGather ? paramCount * static_cast<std::size_t>(rank) : 0;
}
std::size_t CollShape::recvInPlaceOffset(int rank) const {
  return kind == CollKind::kReduceScatter ? paramCount * static_cast<std::size_t>(rank) : 0;
}

CollShape makeShape(CollKind k, DataType t, std::size_t requestedBytes, int n, bool inPlace) {
  FB_ENFORCE(n >= 1, "rank count ", n);
  CollShape s{};
  s.kind = k;
  s.dtype = t;
  s.nRanks = n;
  s.inPlace = inPlace;
  std::size_t elt = dtypeSize(t);
  std::size_t count = requestedBytes / elt;
  switch (k) {
    case CollKind::kAllReduce:
    case CollKind::kP2PRing:
      s.sendCount = s.recvCount = s.paramCount = count;
      s.bytes = count * elt;
      break;
    case CollKind::kAllGather:
      s.paramCount = count / n;
      s.sendCount = s.paramCount;
      s.recvCount = s.paramCount * n;
      s.bytes = s.recvCount * elt;
      break;
    case CollKind::kReduceScatter:
      s.paramCount = count / n;
      s.sendCount = s.paramCount * n;
      s.recvCount = s.paramCount;
      s.bytes = s.sendCount * elt;
      break;
  }
  return s;
}

double expectedValue(const CollShape& s, int rank, std::size_t j, int seed) {
  const int n = s.nRanks;
  switch (s.kind) {
    case CollKind::kAllReduce: {
      double sum = 0;
      for (int r = 0; r < n; ++r) sum += patternValue(r, j, seed);
      return sum;
    }
    case CollKind::kAllGather: {
      std::size_t c = s.paramCount;
      int src = static_cast<int>(j / c);
      return patternValue(src, j % c, seed);
    }
    case CollKind::kReduceScatter: {
      double sum = 0;
      std::size_t idx = static_cast<std::size_t>(rank) * s.paramCount + j;
      for (int r = 0; r < n; ++r) sum += patternValue(r, idx, seed);
      return sum;
    }
    case CollKind::kP2PRing:
      return patternValue((rank - 1 + n) % n, j, seed);
  }
  return 0;
}

void fillPattern(void* buf, DataType t, std::size_t count, int rank, int seed) {
  for (std::size_t i = 0; i < count; ++i) storeElement(buf, t, i, patternValue(rank, i, seed));
}

std::int64_t countWrong(const CollShape& s, const void* recv, int rank, int seed) {
  std::int64_t wrong = 0;
  for (std::size_t j = 0; j < s.recvCount; ++j)
    if (loadElement(recv, s.dtype, j) != expectedValue(s, rank, j, seed)) ++wrong;
  return wrong;
}

}  // namespace fb

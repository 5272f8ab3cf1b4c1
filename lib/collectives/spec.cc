#include "collectives/spec.h"

#include <cstdint>

#include "core/error.h"

namespace fb {

static_assert(static_cast<int>(DataType::kFloat32) == static_cast<int>(verify::Dtype::kFloat32));
static_assert(static_cast<int>(DataType::kFloat64) == static_cast<int>(verify::Dtype::kFloat64));
static_assert(static_cast<int>(DataType::kInt32) == static_cast<int>(verify::Dtype::kInt32));
static_assert(static_cast<int>(DataType::kFloat16) == static_cast<int>(verify::Dtype::kFloat16));
static_assert(static_cast<int>(DataType::kBFloat16) == static_cast<int>(verify::Dtype::kBFloat16));

std::string_view opName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kAvg: return "avg";
  }
  return "?";
}

std::optional<ReduceOp> parseReduceOp(std::string_view n) {
  for (ReduceOp op : allReduceOps())
    if (opName(op) == n) return op;
  return std::nullopt;
}

std::vector<ReduceOp> allReduceOps() {
  return {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kAvg};
}

std::string_view collName(CollKind k) { return describe(k).name; }

std::optional<CollKind> parseCollKind(std::string_view n) {
  for (const CollDescriptor* d : allCollectives()) {
    if (d->name == n) return d->kind;
    for (auto a : d->aliases)
      if (a == n) return d->kind;
  }
  return std::nullopt;
}

std::vector<CollKind> allCollKinds() {
  std::vector<CollKind> out;
  for (const CollDescriptor* d : allCollectives()) out.push_back(d->kind);
  return out;
}

double busBwFactor(CollKind k, int n) { return describe(k).busBwFactor(n); }

std::size_t CollShape::sendInPlaceOffset(int rank) const {
  return desc().inPlaceSendAtRankBlock ? paramCount * static_cast<std::size_t>(rank) : 0;
}
std::size_t CollShape::recvInPlaceOffset(int rank) const {
  return desc().inPlaceRecvAtRankBlock ? paramCount * static_cast<std::size_t>(rank) : 0;
}

CollShape makeShape(CollKind k, DataType t, std::size_t requestedBytes, int n, bool inPlace, ReduceOp op,
                    int root) {
  FB_ENFORCE(n >= 1, "rank count ", n);
  const CollDescriptor& d = describe(k);
  CollShape s{};
  s.kind = k;
  s.dtype = t;
  s.nRanks = n;
  s.inPlace = inPlace;
  s.op = d.reduces ? op : ReduceOp::kSum;
  s.root = d.needsRoot ? root : 0;
  const std::size_t elt = dtypeSize(t);
  const std::size_t count = requestedBytes / elt;
  const std::size_t nn = static_cast<std::size_t>(n);
  s.paramCount = d.splitPerRank ? count / nn : count;
  s.sendCount = s.paramCount * (d.sendPerRank ? nn : 1);
  s.recvCount = s.paramCount * (d.recvPerRank ? nn : 1);
  s.bytes = std::max(s.sendCount, s.recvCount) * elt;
  return s;
}

std::string rowName(const CollShape& s) {
  std::string n(s.desc().name);
  if (s.desc().reduces && s.op != ReduceOp::kSum) n += "(" + std::string(opName(s.op)) + ")";
  if (s.desc().needsRoot && s.root != 0) n += "(root=" + std::to_string(s.root) + ")";
  return n;
}

verify::VerifySpec verifySpec(const CollShape& s, int rank, int seed) {
  verify::VerifySpec v;
  v.rule = s.desc().expect;
  v.op = s.op;
  v.dtype = static_cast<verify::Dtype>(s.dtype);
  v.nRanks = s.nRanks;
  v.rank = rank;
  v.root = s.root;
  v.seed = seed;
  v.paramCount = s.paramCount;
  v.recvCount = s.recvCount;
  return v;
}

double expectedValue(const CollShape& s, int rank, std::size_t j, int seed) {
  return verify::expected(verifySpec(s, rank, seed), j);
}

void fillPattern(void* buf, DataType t, std::size_t count, int rank, int seed, ReduceOp op) {
  for (std::size_t i = 0; i < count; ++i) storeElement(buf, t, i, patternValue(rank, i, seed, op));
}

std::int64_t countWrong(const CollShape& s, const void* recv, int rank, int seed) {
  const verify::VerifySpec v = verifySpec(s, rank, seed);
  std::int64_t wrong = 0;
  for (std::size_t j = 0; j < s.recvCount; ++j)
    if (!verify::matches(v, loadElement(recv, s.dtype, j), verify::expected(v, j))) ++wrong;
  return wrong;
}

}  // namespace fb

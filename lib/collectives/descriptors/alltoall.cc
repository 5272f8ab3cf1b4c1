// AllToAll: block b of rank r's input goes to rank b, into block r of its output.
//   count = per-rank total / n per peer; S = count × elt × n (each rank's buffer);
//   busbw factor (n-1)/n (nccl-tests: each rank sends and receives n-1 of its n blocks).
//   Out-of-place only: in place, a rank would overwrite blocks its peers have not read yet.
#include "collectives/descriptors/descriptors.h"

namespace fb::coll {
const CollDescriptor kAllToAll{
    .kind = CollKind::kAllToAll,
    .name = "alltoall",
    .aliases = {"all_to_all", "a2a"},
    .summary = "block b of rank r's buffer goes to rank b, into its block r",
    .splitPerRank = true,
    .sendPerRank = true,
    .recvPerRank = true,
    .hasInPlace = false,
    .noInPlaceWhy = "in place, a rank would overwrite blocks its peers have not read yet (NCCL has no in-place "
                    "AllToAll either)",
    .busBwFactor = [](int n) { return static_cast<double>(n - 1) / n; },
    .expect = {verify::ExpectRule::kBlock, true, true},
};
}  // namespace fb::coll

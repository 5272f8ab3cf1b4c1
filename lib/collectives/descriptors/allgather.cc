// AllGather: block b of every rank's output is rank b's input.
//   S = count × elt × n (the total output); busbw factor (n-1)/n (each rank receives n-1 blocks).
//   In place, rank r's input is block r of the output.
#include "collectives/descriptors/descriptors.h"

namespace fb::coll {
const CollDescriptor kAllGather{
    .kind = CollKind::kAllGather,
    .name = "allgather",
    .aliases = {"all_gather"},
    .summary = "block b of every rank's output is rank b's input",
    .splitPerRank = true,
    .recvPerRank = true,
    .inPlaceSendAtRankBlock = true,
    .busBwFactor = [](int n) { return static_cast<double>(n - 1) / n; },
    .expect = {verify::ExpectRule::kBlock, false, true},
};
}  // namespace fb::coll

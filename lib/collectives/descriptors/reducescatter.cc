// ReduceScatter: rank r gets the reduction of block r of every rank's input.
//   S = count × elt × n (the total input); busbw factor (n-1)/n (the reduce half of AllReduce).
//   In place, the output is block r of the input buffer.
#include "collectives/descriptors/descriptors.h"

namespace fb::coll {
const CollDescriptor kReduceScatter{
    .kind = CollKind::kReduceScatter,
    .name = "reducescatter",
    .aliases = {"reduce_scatter"},
    .summary = "rank r gets the reduction (-o) of block r of all ranks' buffers",
    .splitPerRank = true,
    .sendPerRank = true,
    .inPlaceRecvAtRankBlock = true,
    .reduces = true,
    .busBwFactor = [](int n) { return static_cast<double>(n - 1) / n; },
    .expect = {verify::ExpectRule::kAllRanks, true, false},
};
}  // namespace fb::coll

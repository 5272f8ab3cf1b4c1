// AllReduce: every rank ends with the reduction of every rank's buffer.
//   S = count × elt; busbw factor 2(n-1)/n (reduce-scatter + all-gather: each rank sends and
//   receives 2(n-1)/n · S).
#include "collectives/descriptors/descriptors.h"

namespace fb::coll {
const CollDescriptor kAllReduce{
    .kind = CollKind::kAllReduce,
    .name = "allreduce",
    .aliases = {"all_reduce"},
    .summary = "every rank gets the reduction (-o) of all ranks' buffers",
    .reduces = true,
    .busBwFactor = [](int n) { return 2.0 * (n - 1) / n; },
    .expect = {verify::ExpectRule::kAllRanks, false, false},
};
}  // namespace fb::coll

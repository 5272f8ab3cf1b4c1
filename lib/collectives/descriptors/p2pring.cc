// P2P ring: every rank sends its buffer to rank+1 and receives rank-1's.
//   S = count × elt; busbw factor 1. Out-of-place only.
#include "collectives/descriptors/descriptors.h"

namespace fb::coll {
const CollDescriptor kP2PRing{
    .kind = CollKind::kP2PRing,
    .name = "p2pring",
    .aliases = {"p2p", "ring", "sendrecv"},
    .summary = "every rank sends to rank+1 and receives from rank-1",
    .hasInPlace = false,
    .noInPlaceWhy = "an in-place ring exchange sends and receives one buffer at once, a data race on GPU backends",
    .busBwFactor = [](int) { return 1.0; },
    .expect = {verify::ExpectRule::kLeft, false, false},
};
}  // namespace fb::coll

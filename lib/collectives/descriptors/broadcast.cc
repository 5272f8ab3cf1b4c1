// Broadcast: every rank gets the root's buffer (--root, default 0).
//   S = count × elt; busbw factor 1 (nccl-tests: each rank receives S once).
//   Out of place, the root also copies its input into its output.
#include "collectives/descriptors/descriptors.h"

namespace fb::coll {
const CollDescriptor kBroadcast{
    .kind = CollKind::kBroadcast,
    .name = "broadcast",
    .aliases = {"bcast"},
    .summary = "every rank gets the root's buffer (--root)",
    .needsRoot = true,
    .busBwFactor = [](int) { return 1.0; },
    .expect = {verify::ExpectRule::kRoot, false, false},
};
}  // namespace fb::coll

// The list of collectives, in the order "--collective all" runs them.
#include "collectives/descriptors/descriptors.h"

#include "core/error.h"

namespace fb {

const std::vector<const CollDescriptor*>& allCollectives() {
  static const std::vector<const CollDescriptor*> all = {&coll::kAllReduce, &coll::kAllGather,
                                                         &coll::kReduceScatter, &coll::kP2PRing,
                                                         &coll::kAllToAll, &coll::kBroadcast};
  return all;
}

const CollDescriptor& describe(CollKind k) {
  for (const CollDescriptor* d : allCollectives())
    if (d->kind == k) return *d;
  FB_THROW(Error, "no descriptor for collective ", static_cast<int>(k));
}

}  // namespace fb

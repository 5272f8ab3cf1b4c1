// One descriptor per collective, each in its own file of this folder.
#pragma once
// Descriptors are written with designated initializers; the fields left out keep their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include "collectives/spec.h"

namespace fb::coll {
extern const CollDescriptor kAllReduce;
extern const CollDescriptor kAllGather;
extern const CollDescriptor kReduceScatter;
extern const CollDescriptor kP2PRing;
extern const CollDescriptor kAllToAll;
extern const CollDescriptor kBroadcast;
}  // namespace fb::coll

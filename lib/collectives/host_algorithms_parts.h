// The host algorithms' families, one file each (host_algorithms.h describes them); runHostAlgo
// (host_algorithms.cc) dispatches to them. Each runs one operation as HostOp says.
#pragma once
#include "collectives/host_algorithms.h"

namespace fb::hostalgo {

// host_algorithms_flat.cc: every rank exchanges with every other directly, on the recursive
// doubling/halving fold for rank counts that are not a power of two.
void allReduceRecursiveDoubling(const HostOp& op);
void allReduceRabenseifner(const HostOp& op);
void allReduceRing(const HostOp& op);  // step by step: the leaders' inner ring of kHier (ring.cc runs the flat one)
void reduceScatterRecursiveHalving(const HostOp& op);
void allGatherBruck(const HostOp& op);

// host_algorithms_hier.cc: through each node's leader, `inner` between the leaders (AllReduce,
// AllGather, ReduceScatter; one node when op.placement is null).
void hierarchical(HostAlgo inner, const HostOp& op);

}  // namespace fb::hostalgo

// AllToAll pulls every peer's block directly, Broadcast the root's buffer. AllReduce, AllGather, ReduceScatter and the P2P ring as ring algorithms over CUDA IPC (one rank per GPU, all ranks on one node),
// reductions done by kernels in kernels/, plus a one-shot AllReduce for small messages: the
// "raw" row beside NCCL's on nvlink/pcie. Implementation name "cuda".
//
// Environment knobs (for measurements; every rank must set the same):
//   FB_CUDA_ALGO=auto|ring|oneshot|ll AllReduce algorithm (auto: one-shot LL up to FB_CUDA_LL_MAX,
//                                    then one-shot up to FB_CUDA_ONESHOT_MAX, then ring)
//   FB_CUDA_ONESHOT_MAX=<size>       largest one-shot AllReduce (default 1M)
//   FB_CUDA_LL_MAX=<size>            largest LL one-shot (default 512K, at most half the above;
//                                    never from CUDA graphs). On 2xH200 NV18 LL took 4.4 us up to
//                                    64 KiB and stayed ahead of the plain one-shot up to 512 KiB.
//   FB_CUDA_BLOCKS=<n>               blocks per kernel (default: by size, at most one per SM)
#pragma once
#include <memory>

#include "bootstrap/bootstrap.h"
#include "collectives/collective.h"
#include "transport/transport.h"

namespace fb::cudaipc {

std::unique_ptr<Collective> makeCollective(CollKind kind, Bootstrap& bs, const CollectiveOptions& opts);
// "" when this backend runs the request, else why not (the same on every rank).
std::string whyNot(const CollRequest& request);
BackendStatus probe(Bootstrap* bs);  // built? GPUs? P2P sanity check result per pair (no hang: time-out)

}  // namespace fb::cudaipc

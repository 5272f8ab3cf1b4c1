// NCCL's native collectives (ncclAllReduce, ncclAllGather, ncclReduceScatter, the P2P ring =
// ncclSend to rank+1 / ncclRecv from rank-1 in one group, AllToAll = ncclSend/ncclRecv with every
// peer in one group, as nccl-tests; ncclBroadcast from the shape's root) behind the Collective interface, on
// the path a profile forces (gpu/nccl/path_profile.h) and attested from NCCL's own INFO
// log: every connection NCCL made for this communicator must be of the forced transport family,
// else the constructor / prepare() throw fb::Error "forced path X but NCCL used Y".
//
// NCCL reads its path settings once per process: one process forces one path. A second
// makeCollective with another path throws fb::UnavailableError saying so; run each path in its
// own fabricbench run (the reference suite does).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "collectives/collective.h"
#include "transport/transport.h"

namespace fb::nccl {
// paths this machine has, for --path=auto: subset of nvlink, pcie, shm, socket, ib, roce
std::vector<std::string> availablePaths(Bootstrap& bs);
std::unique_ptr<Collective> makeCollective(CollKind kind, Bootstrap& bs,
                                           const CollectiveOptions& opts, const std::string& path);
BackendStatus probe();   // built? GPUs visible? (used by --list; must not hang: no GPU -> usable=false, reason)
std::string topologyText();  // nvidia-smi topo -m style picture + link details for --list and run.json ("" if no GPU)

}  // namespace fb::nccl

// The nccl collective's path attestation (nccl_attestation.cc): what NCCL's log says it did,
// checked and described; the collective's buffers, launches and checks stay in nccl_collective.cc.
#pragma once
#include "bootstrap/bootstrap.h"
#include "collectives/collective.h"
#include "gpu/nccl/nccl_comm.h"
#include "gpu/nccl/path_profile.h"
#include "topology/topology.h"

namespace fb::nccl {

// nvidia-smi's GPU for CUDA device `dev` (matched by PCI bus id; CUDA's order may differ); null when none.
const topo::GpuInfo* smiGpuFor(int dev);

// Reads NCCL's INFO lines written since the communicator was created, checks every connection of
// this rank against the forced path on every rank, and describes the path (attestation columns,
// the warm-up's algorithm and protocol, the nominal rate). A collective call: every rank calls it
// after the same warm-up operation.
PathInfo attestPath(Bootstrap& bs, const CollectiveOptions& opts, const PathProfile& profile, int device,
                    NcclComm& comm, const CollShape& shape);

}  // namespace fb::nccl

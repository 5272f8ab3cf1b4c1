// DeviceStaging with CUDA (see collectives/collective.h): the GPU memory of a tcp/verbs ring row
// run with --gpu-staging, copied through page-locked host memory on a stream of this rank's GPU.
#pragma once
#include <memory>

#include "collectives/collective.h"

namespace fb::cudaipc {

// This rank's GPU (local rank modulo the visible GPUs). Throws UnavailableError when there is none.
std::shared_ptr<DeviceStaging> makeCudaStaging(int localRank);

}  // namespace fb::cudaipc

// How every GPU wait polls (NcclComm::wait and its init loop, cuda_ipc's waitEvent/waitStream,
// GPU staging): query; while not ready, run the caller's checks (NCCL's asynchronous error), give
// up at the deadline, else yield the core and query again, as nccl-tests' testStreamSynchronize
// does. Never a sleep: a waiter that sleeps sees the end of the work up to one sleep late, and the
// host timer (nccl-tests' method) counts that. No CUDA here, so the loop is unit-tested with a fake
// query (tests/gpu/test_gpu_wait.cc).
#pragma once
#include <thread>

#include "core/units.h"

namespace fb::gpu {

enum class WaitEnd { kDone, kDeadline };

// query(): true when the work is done, false while it is not; throws on an error. between(): run
// after every not-ready poll, before the deadline is looked at; may throw. kDeadline when the
// deadline passed first (the caller aborts and names what it waited for).
template <typename Query, typename Between>
WaitEnd pollUntil(Query&& query, Between&& between, Deadline deadline) {
  for (;;) {
    if (query()) return WaitEnd::kDone;
    between();
    if (deadline.expired()) return WaitEnd::kDeadline;
    std::this_thread::yield();
  }
}

}  // namespace fb::gpu

// HOW a collective is run: one implementation of the four patterns (ring over a Transport,
// MPI reference, NCCL, CUDA IPC ...). The harness (lib/harness/runner) drives it:
//   prepare(shape)              allocate, register, connect, fill inputs; never timed
//   runBatch(iters, deadline)   `iters` operations back to back; returns THIS rank's seconds,
//                               measured the way the backend can measure honestly (host clock
//                               around host-driven rings; CUDA events on the stream for GPUs)
//   check(seed, deadline)       refill inputs with pattern(seed), run one op, count wrong
//                               elements of this rank's output (element by element)
// Every wait honours the deadline and throws TimeoutError/IoError instead of hanging.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "collectives/spec.h"
#include "transport/transport.h"

namespace fb {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual std::string impl() const = 0;   // "tcp", "mpi", "nccl", "verbs", "cuda"
  virtual PathInfo path() const = 0;      // the path really used (attested where possible)
  virtual void prepare(const CollShape& shape) = 0;
  virtual double runBatch(int iters, Deadline deadline) = 0;
  virtual std::int64_t check(int seed, Deadline deadline) = 0;
  // Test-only hook: make check() corrupt output element `index` (if it exists on this rank)
  // after the operation and before the comparison, so the wrong-count path is exercised.
  void corruptNextCheck(std::optional<std::size_t> index) { corrupt_ = index; }

 protected:
  std::optional<std::size_t> corrupt_;
};

// Everything the command line says about how to run, that an implementation may need.
struct CollectiveOptions {
  TransportOptions transport;
  std::string path = "auto";       // --path for nccl: auto|nvlink|pcie|shm|socket|ib|roce
  bool cudaGraph = false;          // --graph: capture the batch in a CUDA graph and replay it
  std::string logDir;              // where backends may save their own logs (NCCL_DEBUG_FILE)
};

// Host-memory ring algorithms over any Transport (tcp, verbs). Implemented in ring.cc.
std::unique_ptr<Collective> makeRingCollective(CollKind kind, std::shared_ptr<Transport> transport);

// Reference row through MPI's own collectives (MPI_Allreduce, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Sendrecv ring) on MPI_COMM_WORLD. Implemented in mpi_native.cc.
std::unique_ptr<Collective> makeMpiCollective(CollKind kind);

}  // namespace fb

// HOW a collective is run: one backend's implementation of the six collectives (AllReduce,
// AllGather, ReduceScatter, P2P ring, AllToAll, Broadcast): host algorithms over a Transport,
// MPI reference, NCCL, CUDA IPC ... The harness (lib/harness/runner) drives it:
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
#include "collectives/host_algorithms.h"
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
  // --per-op: `iters` operations, each timed on its own (seconds, one entry per operation).
  // The default runs one-operation batches, i.e. a clock per operation on host-driven
  // backends; GPU backends override it with an event between operations on their stream.
  virtual std::vector<double> runPerOp(int iters, Deadline deadline) {
    std::vector<double> t;
    for (int i = 0; i < iters; ++i) t.push_back(runBatch(1, deadline));
    return t;
  }
  // Called once after a size's timed batches (and --per-op), before its check, outside every clock:
  // GPU backends note this rank's SM clock, read then, in path().details. Must not throw.
  virtual void afterTiming() {}
  // Test-only hook: make check() corrupt output element `index` (if it exists on this rank)
  // after the operation and before the comparison, so the wrong-count path is exercised.
  void corruptNextCheck(std::optional<std::size_t> index) { corrupt_ = index; }

 protected:
  std::optional<std::size_t> corrupt_;
};

// One collective a backend is asked for (a backend may decline it: see Support).
struct CollRequest {
  CollKind kind = CollKind::kAllReduce;
  DataType dtype = DataType::kFloat32;
  bool inPlace = false;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
};

// A backend's answer: an implementation, or why it does not run this collective (its rows are
// skipped with the reason; the rest of the backend runs). The answer must be the same on every
// rank (it depends on the request and the build only).
struct Support {
  std::unique_ptr<Collective> impl;
  std::string whyNot;
  static Support no(std::string why) { return {nullptr, std::move(why)}; }
};

// Everything the command line says about how to run, that an implementation may need.
struct CollectiveOptions {
  TransportOptions transport;
  std::string path = "auto";       // --path for nccl: auto|training|nvlink|pcie|shm|socket|ib|roce|local
  bool cudaGraph = false;          // --graph: capture the batch in a CUDA graph and replay it
  bool gpuStaging = false;         // --gpu-staging: tcp/verbs data in GPU memory, staged via host
  bool rotateBuffers = false;      // nccl: buffers moved per operation as nccl-tests does (on unless --reuse-buffers)
                                   // as nccl-tests moves them (no L2 reuse)
  std::size_t rotateSpan = 0;      // bytes the rotation spans: the sweep's largest size (nccl-tests' -e)
  int rotateOps = 1024;            // the most operations of one batch (-n, -w): positions to allocate
  bool ncclTestsLoop = false;      // --per-op under --timer nccl-tests: nccl-tests' -I loop (per operation a host
                                   // clock read, cudaSetDevice, the event, then the operation)
  std::string logDir;              // where backends may save their own logs (NCCL_DEBUG_FILE)
  std::vector<std::string> require;  // nccl: --require ib|roce|gdr|nvlink|rails=N, checked on NCCL's attestation
};

// GPU memory for a host-memory ring (tcp, or verbs without GPUDirect RDMA), asked for with
// --gpu-staging: the operation's input lives in GPU memory and is copied to host memory before
// each operation, the output copied back after it, both inside the timed operation; the row says
// so. Mirrors are device buffers of the ring's host buffers (slot 0 and 1). Every copy waits
// under the deadline. Implemented with CUDA in lib/collectives/cuda (makeCudaStaging).
class DeviceStaging {
 public:
  virtual ~DeviceStaging() = default;
  virtual std::byte* mirror(int slot, std::size_t bytes) = 0;  // device buffer (grown as needed)
  virtual void pin(void* host, std::size_t bytes) = 0;         // page-lock a host buffer (copies at PCIe speed)
  virtual void unpin(void* host) = 0;
  virtual void toHost(void* host, const void* dev, std::size_t bytes, Deadline deadline) = 0;
  virtual void toDevice(void* dev, const void* host, std::size_t bytes, Deadline deadline) = 0;
  virtual std::string describe() const = 0;  // e.g. "GPU 0 (NVIDIA H200) memory, staged via pinned host memory"
};

// Host-memory ring algorithms over any Transport (tcp, verbs). Implemented in ring.cc.
// With `staging`, the data live in GPU memory and are staged through host memory (above).
// `ranker` (host_algorithms.h; the cost model's, lib/model/host_choice.h) chooses the algorithm
// on more than one node; null: the defaults.
std::unique_ptr<Collective> makeRingCollective(CollKind kind, std::shared_ptr<Transport> transport,
                                               std::shared_ptr<DeviceStaging> staging = nullptr,
                                               std::shared_ptr<const HostRanker> ranker = nullptr);

// Reference row through MPI's own collectives (MPI_Allreduce, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Sendrecv ring) on MPI_COMM_WORLD. Implemented in mpi_native.cc.
std::unique_ptr<Collective> makeMpiCollective(CollKind kind);

}  // namespace fb

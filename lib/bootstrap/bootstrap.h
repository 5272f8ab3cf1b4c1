// Control plane: who am I, how many are we, and small collective exchanges used to set up
// the data plane (addresses, tokens, QP numbers, ncclUniqueId) and to agree on verdicts.
// Never the thing being measured. All calls are collective: every rank must call them in the
// same order. One Bootstrap per process (or per thread, for ThreadBootstrap); not thread-safe.
#pragma once
#include <chrono>
#include <cstddef>
#include <functional>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fb {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The node this rank runs on (MPI_Get_processor_name / gethostname).
  virtual std::string hostname() const = 0;
  virtual void barrier() = 0;
  // Every rank contributes a blob (lengths may differ); returns all blobs indexed by rank.
  virtual std::vector<std::vector<std::byte>> allGather(std::span<const std::byte> mine) = 0;
  virtual double allReduceMax(double v) = 0;
  virtual std::int64_t allReduceSum(std::int64_t v) = 0;
  // Aborts every rank of the job (MPI_Abort); used after a fatal error so no rank hangs.
  [[noreturn]] virtual void abortJob(int code) = 0;

  // Failure detection while waiting in the bootstrap (a rank stuck in a barrier because a peer
  // died must not hang): implementations that can wait without blocking call the probes
  // periodically while they wait, and give up with TimeoutError after timeout(). A probe throws
  // (IoError naming the peer) when it knows a peer is gone, e.g. its TCP connection closed.
  void addLivenessProbe(std::function<void()> probe) { probes_.push_back(std::move(probe)); }
  void clearLivenessProbes() { probes_.clear(); }
  void setTimeout(std::chrono::milliseconds t) { timeout_ = t; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Helpers built on the primitives above.
  std::vector<std::string> allGatherStrings(const std::string& mine);
  std::vector<std::string> hostnames();      // per rank
  // Collective here (from hostnames()); MpiBootstrap answers from MPI_Comm_split_type instead.
  virtual int localRank();                   // index among the ranks on my host
  virtual int localSize();                   // ranks on my host
  virtual int nodeCount();                   // distinct hosts
  // Rank 0's bytes, delivered to everyone.
  std::vector<std::byte> broadcastFromRoot(std::span<const std::byte> rootData);

 protected:
  void runLivenessProbes() {
    for (auto& p : probes_) p();
  }

 private:
  std::vector<std::function<void()>> probes_;
  std::chrono::milliseconds timeout_{120000};
};

}  // namespace fb

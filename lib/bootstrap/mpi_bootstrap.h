// Bootstrap over MPI_COMM_WORLD. The caller owns MPI_Init/MPI_Finalize (benchmarks/ main).
#pragma once
#include <mpi.h>

#include <chrono>
#include <optional>

#include "bootstrap/bootstrap.h"
#include "core/error.h"

// MPI calls return an error code; this keeps MPI's own text (MPI_Error_string).
#define FB_MPI_CHECK(expr)                                                            \
  do {                                                                                \
    int fb_rc_ = (expr);                                                              \
    if (fb_rc_ != MPI_SUCCESS) {                                                      \
      char fb_msg_[MPI_MAX_ERROR_STRING]; int fb_len_ = 0;                            \
      MPI_Error_string(fb_rc_, fb_msg_, &fb_len_);                                    \
      FB_THROW(::fb::Error, #expr ": ", std::string(fb_msg_, fb_len_));               \
    }                                                                                 \
  } while (0)

namespace fb {

// Another rank reported a failure while this rank waited in the bootstrap.
class PeerFailedError : public Error {
 public:
  PeerFailedError(const std::string& what, int peer) : Error(what), peer_(peer) {}
  int peer() const { return peer_; }

 private:
  int peer_;
};

class MpiBootstrap : public Bootstrap {
 public:
  MpiBootstrap();
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string hostname() const override { return host_; }
  // From MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) at construction; no communication.
  int localRank() override { return localRank_; }
  int localSize() override { return localSize_; }
  int nodeCount() override { return nodeCount_; }
  void barrier() override;
  std::vector<std::vector<std::byte>> allGather(std::span<const std::byte> mine) override;
  double allReduceMax(double v) override;
  std::int64_t allReduceSum(std::int64_t v) override;
  [[noreturn]] void abortJob(int code) override;

  // ---- After a failure (a lost peer, a time-out): who is still there ----
  // This rank tells every other rank `mine` and collects what they tell, for at most `grace`:
  // point-to-point on a communicator of its own, never a collective (a lost rank would block it).
  // Returns one entry per rank: its report, or nullopt when it said nothing in time (lost or
  // stuck); this rank's entry is `mine`. Ranks waiting in a bootstrap call notice a report within
  // ~0.2 s and throw PeerFailedError, so they join the exchange.
  std::vector<std::optional<std::string>> exchangeFailureReports(const std::string& mine,
                                                                 std::chrono::milliseconds grace);
  // What this host can tell about rank r: "pid 123 on node1: stopped (SIGSTOP)", "... exited",
  // "... running", or "on node2" for a rank on another host.
  std::string describeRank(int r) const;

 private:
  // Polls req until done: spins for the first milliseconds (so ranks leave a barrier together,
  // which matters for small-message timing), then backs off, running the liveness probes, and
  // throws TimeoutError after timeout().
  void waitRequest(void* req, const char* what);
  void checkFailureReports();  // throws PeerFailedError when a report is waiting
  int rank_ = 0, size_ = 1;
  int localRank_ = 0, localSize_ = 1, nodeCount_ = 1;
  std::string host_;
  MPI_Comm failComm_ = MPI_COMM_NULL;  // failure reports only (MPI_ERRORS_RETURN)
  std::vector<long> pids_;             // every rank's pid, by rank
  std::vector<std::string> hosts_;     // every rank's processor name, by rank
};

// Call before MPI_Init. FB_PROGRESS=block or yield says this node's ranks share cores in a way a
// rank cannot see (the namespace lab: every "node" reports the host's cores, but the nodes share
// them). Open MPI then busy-polls in its collectives and in this bootstrap's barrier, and a spinning
// rank holds a core the rank that must arrive needs for a scheduler time slice (0.75-3 ms here):
// 3 lab nodes on 2 cores, 4 KiB AllReduce, -n 5: tcp 784 us and Open MPI 11.7 ms per operation
// spinning, 62 us and 166 us yielding. So unless OMPI_MCA_mpi_yield_when_idle is set already, it is
// set to 1 (Open MPI sets it itself when it sees more ranks than cores on one host). Open MPI
// only: an MPICH-family library has no such setting (mpiWaitPolicy() then says so).
void prepareMpiInit();
// How MPI waits, for the mpi rows' path details: "yield when idle (OMPI_MCA_mpi_yield_when_idle=1,
// set for FB_PROGRESS=block)", "... (set by the user)", or "" (the library's default).
std::string mpiWaitPolicy();

// "Open MPI v4.1.4, ..." from MPI_Get_library_version, first line.
std::string mpiLibraryVersion();

}  // namespace fb

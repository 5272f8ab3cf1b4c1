#include "bootstrap/mpi_bootstrap.h"

#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "core/units.h"

#include "core/error.h"
#include "core/progress_mode.h"


namespace fb {

namespace {
std::string& waitPolicy() {
  static std::string s;
  return s;
}
}  // namespace

void prepareMpiInit() {
#if defined(OMPI_MAJOR_VERSION)
  const char* mine = std::getenv("OMPI_MCA_mpi_yield_when_idle");
  if (mine && *mine) {
    waitPolicy() = std::string("OMPI_MCA_mpi_yield_when_idle=") + mine + " (set by the user)";
  } else if (progressSaysSharedCores()) {
    ::setenv("OMPI_MCA_mpi_yield_when_idle", "1", 1);
    waitPolicy() = "yield when idle (OMPI_MCA_mpi_yield_when_idle=1, set for FB_PROGRESS=" + progressMode() + ")";
  }
#else
  // MPICH-family libraries have no yield-when-idle setting: their collectives poll. FB_PROGRESS
  // still applies to fabricbench's own transports and this bootstrap's waits.
  if (progressSaysSharedCores())
    waitPolicy() = "library default (polls; this MPI has no yield-when-idle setting, FB_PROGRESS=" + progressMode() +
                   " applies to fabricbench's own paths only)";
#endif
}

std::string mpiWaitPolicy() { return waitPolicy(); }

MpiBootstrap::MpiBootstrap() {
  FB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  FB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  FB_MPI_CHECK(MPI_Get_processor_name(name, &len));
  host_.assign(name, len);
  // Failure reports travel on a communicator of their own, and an error there (a peer that is
  // gone) is returned, not fatal. Every rank's pid and host, for naming a lost or stuck rank.
  FB_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &failComm_));
  FB_MPI_CHECK(MPI_Comm_set_errhandler(failComm_, MPI_ERRORS_RETURN));
  long pid = static_cast<long>(::getpid());
  pids_.resize(size_);
  FB_MPI_CHECK(MPI_Allgather(&pid, 1, MPI_LONG, pids_.data(), 1, MPI_LONG, failComm_));
  std::vector<char> names(static_cast<std::size_t>(size_) * MPI_MAX_PROCESSOR_NAME);
  std::memset(name + len, 0, MPI_MAX_PROCESSOR_NAME - len);
  FB_MPI_CHECK(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                             failComm_));
  for (int r = 0; r < size_; ++r) hosts_.emplace_back(names.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME);
  // Ranks sharing this node, as the MPI library knows it (MPI_COMM_TYPE_SHARED), not from launcher
  // variables (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID differ per launcher).
  MPI_Comm node = MPI_COMM_NULL;
  FB_MPI_CHECK(MPI_Comm_split_type(failComm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  FB_MPI_CHECK(MPI_Comm_rank(node, &localRank_));
  FB_MPI_CHECK(MPI_Comm_size(node, &localSize_));
  MPI_Comm_free(&node);
  int leader = localRank_ == 0 ? 1 : 0;
  FB_MPI_CHECK(MPI_Allreduce(&leader, &nodeCount_, 1, MPI_INT, MPI_SUM, failComm_));
}

namespace {
constexpr int kFailTag = 7411;
constexpr int kFailMsg = 2048;  // bytes of one failure report (longer ones are cut)
}  // namespace

void MpiBootstrap::checkFailureReports() {
  if (failComm_ == MPI_COMM_NULL) return;
  int flag = 0;
  MPI_Status st;
  if (MPI_Iprobe(MPI_ANY_SOURCE, kFailTag, failComm_, &flag, &st) == MPI_SUCCESS && flag)
    throw PeerFailedError("rank " + std::to_string(st.MPI_SOURCE) + " reported a failure", st.MPI_SOURCE);
}

std::vector<std::optional<std::string>> MpiBootstrap::exchangeFailureReports(const std::string& mine,
                                                                             std::chrono::milliseconds grace) {
  std::vector<std::optional<std::string>> out(size_);
  out[rank_] = mine;
  if (failComm_ == MPI_COMM_NULL || size_ == 1) return out;
  static std::vector<char> sendBuf;  // sends may still be in flight when the process ends
  sendBuf.assign(kFailMsg, '\0');
  std::memcpy(sendBuf.data(), mine.data(), std::min<std::size_t>(mine.size(), kFailMsg - 1));
  std::vector<std::vector<char>> recv(size_, std::vector<char>(kFailMsg, '\0'));
  std::vector<MPI_Request> rreq(size_, MPI_REQUEST_NULL);
  static std::vector<MPI_Request> sreq;
  sreq.assign(size_, MPI_REQUEST_NULL);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Irecv(recv[r].data(), kFailMsg, MPI_CHAR, r, kFailTag, failComm_, &rreq[r]);
    MPI_Isend(sendBuf.data(), kFailMsg, MPI_CHAR, r, kFailTag, failComm_, &sreq[r]);
  }
  const Deadline deadline = Deadline::in(grace);
  int pending = size_ - 1;
  while (pending > 0 && !deadline.expired()) {
    for (int r = 0; r < size_; ++r) {
      if (rreq[r] == MPI_REQUEST_NULL || out[r]) continue;
      int done = 0;
      if (MPI_Test(&rreq[r], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        rreq[r] = MPI_REQUEST_NULL;  // the peer is gone: it stays silent
        --pending;
        continue;
      }
      if (done) {
        out[r] = std::string(recv[r].data());
        --pending;
      }
    }
    for (int r = 0; r < size_; ++r) {  // drive the sends too
      int done = 0;
      if (sreq[r] != MPI_REQUEST_NULL) MPI_Test(&sreq[r], &done, MPI_STATUS_IGNORE);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // Receives that never completed are left posted: the job ends right after this.
  return out;
}

std::string MpiBootstrap::describeRank(int r) const {
  if (r < 0 || r >= size_ || pids_.empty()) return "";
  std::string who = "pid " + std::to_string(pids_[r]) + " on " + hosts_[r];
  if (hosts_[r] != host_) return who;
  if (::kill(static_cast<pid_t>(pids_[r]), 0) != 0 && errno == ESRCH) return who + ": exited";
  std::ifstream f("/proc/" + std::to_string(pids_[r]) + "/stat");
  std::string line;
  std::getline(f, line);
  auto close = line.rfind(')');
  char state = close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
  if (state == 'T' || state == 't') return who + ": stopped (SIGSTOP or a debugger)";
  if (state == 'Z' || state == 'X' || line.empty()) return who + ": exited";
  return who + ": running";
}

void MpiBootstrap::waitRequest(void* reqPtr, const char* what) {
  auto* req = static_cast<MPI_Request*>(reqPtr);
  const auto start = Clock::now();
  const auto spinUntil = start + std::chrono::milliseconds(20);
  auto nextProbe = start + std::chrono::milliseconds(200);
  const Deadline deadline{start + timeout()};
  static const bool shareCores = progressSaysSharedCores();
  int done = 0;
  while (true) {
    FB_MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    auto now = Clock::now();
    if (now < spinUntil) {
      if (shareCores) sched_yield();  // FB_PROGRESS=block/yield: the core may be a peer's
      continue;
    }
    if (now >= nextProbe) {
      try {
        checkFailureReports();
        runLivenessProbes();
      } catch (...) {
        // A peer that finished this very call first may already have closed its connections:
        // only a request that still does not complete within a grace period means a lost peer.
        const auto grace = Clock::now() + std::chrono::seconds(2);
        while (Clock::now() < grace) {
          FB_MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
          if (done) return;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        throw;
      }
      nextProbe = now + std::chrono::milliseconds(200);
    }
    if (deadline.expired())
      FB_THROW(TimeoutError, "bootstrap ", what, ": not every rank arrived within ", timeout().count() / 1000,
               " s (--timeout; a rank or node is lost or stuck)");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void MpiBootstrap::barrier() {
  MPI_Request req;
  FB_MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &req));
  waitRequest(&req, "barrier");
}

std::vector<std::vector<std::byte>> MpiBootstrap::allGather(std::span<const std::byte> mine) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(size_);
  MPI_Request req;
  FB_MPI_CHECK(MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD, &req));
  waitRequest(&req, "allgather");
  std::vector<int> displs(size_);
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[r] = total;
    total += lens[r];
  }
  std::vector<std::byte> flat(static_cast<std::size_t>(total) + 1);
  FB_MPI_CHECK(MPI_Iallgatherv(mine.data(), len, MPI_BYTE, flat.data(), lens.data(), displs.data(), MPI_BYTE,
                               MPI_COMM_WORLD, &req));
  waitRequest(&req, "allgather");
  std::vector<std::vector<std::byte>> out(size_);
  for (int r = 0; r < size_; ++r) out[r].assign(flat.begin() + displs[r], flat.begin() + displs[r] + lens[r]);
  return out;
}

double MpiBootstrap::allReduceMax(double v) {
  double out = 0;
  MPI_Request req;
  FB_MPI_CHECK(MPI_Iallreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &req));
  waitRequest(&req, "allreduce(max)");
  return out;
}

std::int64_t MpiBootstrap::allReduceSum(std::int64_t v) {
  long long in = v, out = 0;
  MPI_Request req;
  FB_MPI_CHECK(MPI_Iallreduce(&in, &out, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &req));
  waitRequest(&req, "allreduce(sum)");
  return out;
}

void MpiBootstrap::abortJob(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

std::string mpiLibraryVersion() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(v, &len);
  std::string s(v, len);
  auto nl = s.find_first_of("\n,");
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace fb

#include "bootstrap/mpi_bootstrap.h"

#include <mpi.h>

#include <cstdlib>
#include <thread>

#include "core/units.h"

#include "core/error.h"


namespace fb {

MpiBootstrap::MpiBootstrap() {
  FB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  FB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  FB_MPI_CHECK(MPI_Get_processor_name(name, &len));
  host_.assign(name, len);
}

void MpiBootstrap::waitRequest(void* reqPtr, const char* what) {
  auto* req = static_cast<MPI_Request*>(reqPtr);
  const auto start = Clock::now();
  const auto spinUntil = start + std::chrono::milliseconds(20);
  auto nextProbe = start + std::chrono::milliseconds(200);
  const Deadline deadline{start + timeout()};
  int done = 0;
  while (true) {
    FB_MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    auto now = Clock::now();
    if (now < spinUntil) continue;
    if (now >= nextProbe) {
      try {
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

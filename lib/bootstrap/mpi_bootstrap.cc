#include "bootstrap/mpi_bootstrap.h"

#include <mpi.h>

#include <cstdlib>

#include "core/error.h"

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

MpiBootstrap::MpiBootstrap() {
  FB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  FB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  FB_MPI_CHECK(MPI_Get_processor_name(name, &len));
  host_.assign(name, len);
}

void MpiBootstrap::barrier() { FB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); }

std::vector<std::vector<std::byte>> MpiBootstrap::allGather(std::span<const std::byte> mine) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(size_);
  FB_MPI_CHECK(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD));
  std::vector<int> displs(size_);
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[r] = total;
    total += lens[r];
  }
  std::vector<std::byte> flat(static_cast<std::size_t>(total) + 1);
  FB_MPI_CHECK(MPI_Allgatherv(mine.data(), len, MPI_BYTE, flat.data(), lens.data(), displs.data(),
                              MPI_BYTE, MPI_COMM_WORLD));
  std::vector<std::vector<std::byte>> out(size_);
  for (int r = 0; r < size_; ++r) out[r].assign(flat.begin() + displs[r], flat.begin() + displs[r] + lens[r]);
  return out;
}

double MpiBootstrap::allReduceMax(double v) {
  double out = 0;
  FB_MPI_CHECK(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  return out;
}

std::int64_t MpiBootstrap::allReduceSum(std::int64_t v) {
  long long in = v, out = 0;
  FB_MPI_CHECK(MPI_Allreduce(&in, &out, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
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

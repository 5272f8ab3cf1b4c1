// Bootstrap over MPI_COMM_WORLD. The caller owns MPI_Init/MPI_Finalize (benchmarks/ main).
#pragma once
#include <mpi.h>

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

class MpiBootstrap : public Bootstrap {
 public:
  MpiBootstrap();
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string hostname() const override { return host_; }
  void barrier() override;
  std::vector<std::vector<std::byte>> allGather(std::span<const std::byte> mine) override;
  double allReduceMax(double v) override;
  std::int64_t allReduceSum(std::int64_t v) override;
  [[noreturn]] void abortJob(int code) override;

 private:
  // Polls req until done: spins for the first milliseconds (so ranks leave a barrier together,
  // which matters for small-message timing), then backs off, running the liveness probes, and
  // throws TimeoutError after timeout().
  void waitRequest(void* req, const char* what);
  int rank_ = 0, size_ = 1;
  std::string host_;
};

// "Open MPI v4.1.4, ..." from MPI_Get_library_version, first line.
std::string mpiLibraryVersion();

}  // namespace fb

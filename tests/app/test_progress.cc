// The progress line's estimate (app/progress.h estimateRowSeconds): each row's cost from
// what the finished rows cost, not a linear scale of one small row up to a large size.
#include <catch2/catch.hpp>

#include "app/progress.h"

using fb::estimateRowSeconds;
using fb::FinishedRow;

TEST_CASE("eta: latency-bound rows are not scaled up with their size", "[progress]") {
  // np 64 oversubscribed, -b 8 -e 4K -f 8: every row costs about 0.45 s whatever its size. The
  // next collective has finished its 8 B row only; its 4 KiB row was estimated 512 x 0.5 s.
  std::vector<FinishedRow> done = {{"tcp/allreduce", 8, 0.44},   {"tcp/allreduce", 64, 0.45},
                                   {"tcp/allreduce", 512, 0.45}, {"tcp/allreduce", 4096, 0.46},
                                   {"tcp/allgather", 8, 0.50}};
  double e = estimateRowSeconds(done, "tcp/allgather", 4096);
  CHECK(e == Approx(0.50 * 0.46 / 0.44));
  CHECK(estimateRowSeconds(done, "tcp/allgather", 64) == Approx(0.50 * 0.45 / 0.44));
  // A group with no finished row: every group's rows at that size.
  CHECK(estimateRowSeconds(done, "mpi/allreduce", 512) == Approx(0.45));
  CHECK(estimateRowSeconds(done, "mpi/allreduce", 8) == Approx((0.44 + 0.50) / 2));
}

TEST_CASE("eta: bandwidth-bound rows grow with size, between and beyond the finished ones", "[progress]") {
  std::vector<FinishedRow> done = {{"nccl/allreduce", 1 << 20, 1.0}, {"nccl/allreduce", 2 << 20, 2.0}};
  CHECK(estimateRowSeconds(done, "nccl/allreduce", 3 << 19) == Approx(1.5));
  CHECK(estimateRowSeconds(done, "nccl/allreduce", 4 << 20) == Approx(4.0));
  CHECK(estimateRowSeconds(done, "nccl/allreduce", 8) == Approx(1.0));  // below the smallest: flat
  // Cost that fell with size (noise) is not extrapolated downwards.
  std::vector<FinishedRow> noisy = {{"g", 1000, 2.0}, {"g", 2000, 1.5}};
  CHECK(estimateRowSeconds(noisy, "g", 8000) == Approx(1.5));
}

TEST_CASE("eta: nothing finished, nothing known", "[progress]") {
  CHECK(estimateRowSeconds({}, "g", 8) < 0);
  // One row in all: that row's cost, whatever the size.
  CHECK(estimateRowSeconds({{"g", 8, 0.3}}, "g", 1 << 20) == Approx(0.3));
  CHECK(estimateRowSeconds({{"g", 8, 0.3}}, "h", 1 << 20) == Approx(0.3));
}

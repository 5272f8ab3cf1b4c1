#include <catch2/catch.hpp>
#include <cmath>

#include "helpers.h"
#include "report/summary.h"

using fbtest::row;

TEST_CASE("summary: median", "[summary]") {
  CHECK(std::isnan(fb::median({})));
  CHECK(fb::median({3}) == 3);
  CHECK(fb::median({5, 1, 3}) == 3);
  CHECK(fb::median({4, 1, 3, 2}) == 2.5);
}

TEST_CASE("summary: plateau = median busbw over sizes >= max/4; floor = min time over (0, 8 KiB]", "[summary]") {
  // Hand-made series 8 B .. 64 MiB (x2). busbw rises then settles; a noisy dip at 32 MiB.
  std::vector<fb::Sample> rows;
  for (std::size_t b = 8, i = 0; b <= (64u << 20); b *= 2, ++i) {
    double bw = std::min(10.0, static_cast<double>(b) / 1e6);
    double t = 20.0 + static_cast<double>(i);  // time grows with size
    rows.push_back(row("allreduce", "tcp", "lo", b, t, bw));
  }
  // Sizes >= 16 MiB: 16M (10), 32M (set to 4), 64M (9) -> median 9.
  for (auto& r : rows) {
    if (r.bytes == (32u << 20)) r.busBwGBps = 4;
    if (r.bytes == (64u << 20)) r.busBwGBps = 9;
  }
  CHECK(fb::plateauBusBw(rows) == 9.0);
  // Floor: smallest time at sizes <= 8192 is the 8 B row (20 us); make 64 B the fastest.
  for (auto& r : rows)
    if (r.bytes == 64) r.timeUs = 7.5;
  CHECK(fb::smallMessageFloorUs(rows) == 7.5);
  // A fast row above 8 KiB does not count.
  for (auto& r : rows)
    if (r.bytes == 16384) r.timeUs = 1.0;
  CHECK(fb::smallMessageFloorUs(rows) == 7.5);
  // Rows with wrong elements are excluded from both.
  for (auto& r : rows)
    if (r.bytes == 64) r.wrong = 3;
  CHECK(fb::smallMessageFloorUs(rows) == 20.0 + 0);  // back to the 8 B row
  for (auto& r : rows)
    if (r.bytes == (64u << 20)) r.wrong = 1;
  // Now max size is still 64 MiB (range), valid plateau rows: 16M (10), 32M (4) -> 7.
  CHECK(fb::plateauBusBw(rows) == 7.0);
  // Size 0 is not a small message for the floor.
  std::vector<fb::Sample> zero = {row("allreduce", "tcp", "lo", 0, 0.5, 0), row("allreduce", "tcp", "lo", 8, 3, 0)};
  CHECK(fb::smallMessageFloorUs(zero) == 3);
  CHECK(std::isnan(fb::smallMessageFloorUs({row("allreduce", "tcp", "lo", 1 << 20, 3, 1)})));
  CHECK(std::isnan(fb::plateauBusBw({})));
}

TEST_CASE("summary: grouping into series by coll/impl/path/dtype/placement, sorted by size", "[summary]") {
  std::vector<fb::Sample> rows = {
      row("allreduce", "tcp", "lo", 2048, 2, 2), row("allreduce", "tcp", "lo", 1024, 1, 1),
      row("allreduce", "mpi", "lo", 1024, 1, 1), row("allreduce", "tcp", "lo", 1024, 1, 1, 0, true),
      row("allgather", "tcp", "lo", 1024, 1, 1), row("allreduce", "tcp", "lo", 1024, 5, 5),  // repeat: last wins
  };
  auto s = fb::groupSeries(rows);
  REQUIRE(s.size() == 4);
  CHECK(s[0].label() == "tcp/lo [out]");
  REQUIRE(s[0].rows.size() == 2);
  CHECK(s[0].rows[0].bytes == 1024);
  CHECK(s[0].rows[0].timeUs == 5);
  CHECK(s[1].impl == "mpi");
  CHECK(s[2].inPlace);
  CHECK(s[3].coll == "allgather");
  CHECK(fb::seriesMatches(s[1], "mpi"));
  CHECK(fb::seriesMatches(s[1], "mpi/lo"));
  CHECK(fb::seriesMatches(s[1], "mpi/lo [out]"));
  CHECK_FALSE(fb::seriesMatches(s[1], "tcp"));
  CHECK(fb::seriesMatches(s[1], "pi/l"));  // part of the label
  CHECK_FALSE(fb::seriesMatches(s[1], ""));
  auto withRun = fb::groupSeries(rows, "runA");
  CHECK(withRun[0].label() == "runA: tcp/lo [out]");
}

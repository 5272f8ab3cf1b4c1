#include <catch2/catch.hpp>

#include <cmath>

#include "core/stats.h"
#include "core/text.h"

using namespace fb;

TEST_CASE("text helpers: trim, split, lines, lower, join", "[unit][text]") {
  CHECK(text::trim("  a b\t\r\n") == "a b");
  CHECK(text::trim("\v\f x \f") == "x");
  CHECK(text::trim("   ").empty());
  CHECK(text::split(" a, b ,,c ,", ',') == std::vector<std::string>{"a", "b", "c"});
  CHECK(text::split("", ',').empty());
  CHECK(text::lines("a\r\nb\n\nc") == std::vector<std::string>{"a", "b", "", "c"});
  CHECK(text::lines("a\n") == std::vector<std::string>{"a"});
  CHECK(text::lines("").empty());
  CHECK(text::lower("NET/IB mlx5_0") == "net/ib mlx5_0");
  CHECK(text::join({"x", "y", "z"}, ", ") == "x, y, z");
  CHECK(text::startsWith("NCCL INFO", "NCCL"));
  CHECK_FALSE(text::startsWith("NC", "NCCL"));
}

TEST_CASE("stats: nearest-rank percentile, median, MAD", "[unit][stats]") {
  std::vector<double> v{5, 1, 4, 2, 3};  // sorted 1..5
  CHECK(stats::percentile(v, 0) == 1);
  CHECK(stats::percentile(v, 20) == 1);  // ceil(0.2 x 5) = 1st
  CHECK(stats::percentile(v, 21) == 2);
  CHECK(stats::percentile(v, 50) == 3);
  CHECK(stats::percentile(v, 90) == 5);  // ceil(4.5) = 5th
  CHECK(stats::percentile(v, 100) == 5);
  std::vector<double> even{4, 1, 3, 2};
  CHECK(stats::percentile(even, 50) == 2);  // nearest rank: the lower middle
  CHECK(stats::median(even) == 2.5);        // the median: mean of the two middle values
  CHECK(stats::median(v) == 3);
  CHECK(stats::mad({1, 2, 3, 4, 100}) == 1);  // deviations 2,1,0,1,97 -> median 1
  CHECK(std::isnan(stats::percentile({}, 50)));
  CHECK(std::isnan(stats::median({})));
  CHECK(std::isnan(stats::mad({})));
}

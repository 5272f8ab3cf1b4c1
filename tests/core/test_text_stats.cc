#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

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

// The nccl-tests and perftest readers (lib/report/import*.cc) rely on these cases.
TEST_CASE("text helpers: lines' carriage returns, words, whole-string numbers", "[unit][text]") {
  CHECK(text::lines("a\r\n\r\nb\r") == std::vector<std::string>{"a", "", "b"});  // the last line's CR too
  CHECK(text::lines("a\n\n") == std::vector<std::string>{"a", ""});
  CHECK(text::lines("a\rb\n") == std::vector<std::string>{"a\rb"});  // a lone CR splits nothing
  CHECK(text::words("  8388608\t2097152  float\r\n") == std::vector<std::string>{"8388608", "2097152", "float"});
  CHECK(text::words("a\vb\fc") == std::vector<std::string>{"a", "b", "c"});
  CHECK(text::words(" \t\r\n").empty());
  CHECK(text::words("").empty());
  CHECK(text::words("\xc2\xb5s x") == std::vector<std::string>{"\xc2\xb5s", "x"});  // bytes past ASCII are not space

  double d = 0;
  CHECK((text::toDouble("12.5", d) && d == 12.5));
  CHECK((text::toDouble("-1e3", d) && d == -1000));
  CHECK((text::toDouble(" 7", d) && d == 7));  // strtod skips leading whitespace
  CHECK_FALSE(text::toDouble("", d));
  CHECK_FALSE(text::toDouble("1.5x", d));
  CHECK_FALSE(text::toDouble("7 ", d));
  CHECK_FALSE(text::toDouble("N/A", d));
  CHECK_FALSE(text::toDouble("inf", d));  // perftest prints inf/nan after a failed clock calibration
  CHECK_FALSE(text::toDouble("nan", d));
  CHECK_FALSE(text::toDouble("1e999", d));

  std::size_t n = 0;
  CHECK((text::toUnsigned("8388608", n) && n == 8388608));
  CHECK((text::toUnsigned("0", n) && n == 0));
  CHECK((text::toUnsigned("18446744073709551615", n) && n == SIZE_MAX));
  CHECK_FALSE(text::toUnsigned("18446744073709551616", n));
  CHECK_FALSE(text::toUnsigned("", n));
  CHECK_FALSE(text::toUnsigned("1K", n));  // no suffix: sizes with one are fb::parseSize's
  CHECK_FALSE(text::toUnsigned("12,", n));
  CHECK_FALSE(text::toUnsigned(" 1", n));
  CHECK_FALSE(text::toUnsigned("-1", n));
  CHECK_FALSE(text::toUnsigned("+1", n));
  CHECK_FALSE(text::toUnsigned("1.0", n));
}

TEST_CASE("stats: nearest-rank percentile, median, upper median, MAD", "[unit][stats]") {
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
  CHECK(stats::upperMedian(even) == 3);     // nccl-tests' -I p50: sorted[n / 2], the upper middle
  CHECK(stats::upperMedian(v) == 3);        // odd: the median
  CHECK(stats::upperMedian({7}) == 7);
  CHECK(std::isnan(stats::upperMedian({})));
  CHECK(stats::median(v) == 3);
  CHECK(stats::mad({1, 2, 3, 4, 100}) == 1);  // deviations 2,1,0,1,97 -> median 1
  CHECK(std::isnan(stats::percentile({}, 50)));
  CHECK(std::isnan(stats::median({})));
  CHECK(std::isnan(stats::mad({})));
}

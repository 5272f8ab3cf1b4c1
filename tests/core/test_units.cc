#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/units.h"

using namespace fb;

TEST_CASE("sizes parse with nccl-tests suffixes", "[unit]") {
  CHECK(parseSize("8") == 8);
  CHECK(parseSize("0") == 0);
  CHECK(parseSize("1K") == 1024);
  CHECK(parseSize("1k") == 1024);
  CHECK(parseSize("64M") == 64ull << 20);
  CHECK(parseSize("8G") == 8ull << 30);
  CHECK(parseSize("512B") == 512);
  CHECK(parseSize("4KiB") == 4096);
}

TEST_CASE("bad sizes are rejected with a message naming the input", "[unit]") {
  for (const char* bad : {"12Q", "", "K", "-1", "1.5M", "99999999999999999999", "16777216T"}) {
    CAPTURE(bad);
    try {
      parseSize(bad);
      FAIL("no exception for " << bad);
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find(std::string("'") + bad + "'") != std::string::npos);
    }
  }
}

TEST_CASE("formatSize is exact", "[unit]") {
  CHECK(formatSize(8) == "8");
  CHECK(formatSize(1024) == "1K");
  CHECK(formatSize(64u << 20) == "64M");
  CHECK(formatSize(1000) == "1000");
  CHECK(formatSize(1536) == "1536");
}

TEST_CASE("size sweeps follow -b -e -f and -i", "[unit]") {
  CHECK(sizeSweep(8, 64, 2) == std::vector<std::size_t>{8, 16, 32, 64});
  CHECK(sizeSweep(8, 100, 2) == std::vector<std::size_t>{8, 16, 32, 64});
  CHECK(sizeSweep(5, 5, 2) == std::vector<std::size_t>{5});
  CHECK(sizeSweep(0, 4, 2) == std::vector<std::size_t>{0, 1, 2, 4});
  CHECK(sizeSweep(10, 40, 0, 10) == std::vector<std::size_t>{10, 20, 30, 40});
  CHECK_THROWS_AS(sizeSweep(64, 8, 2), ConfigError);
  CHECK_THROWS_AS(sizeSweep(8, 64, 1.0), ConfigError);
}

TEST_CASE("sizeFromEnv: default when unset or empty, the size when in range, one ConfigError otherwise") {
  ::unsetenv("FB_TEST_SIZE_ENV");
  CHECK(fb::sizeFromEnv("FB_TEST_SIZE_ENV", 123, 4096, 1 << 20, "8K") == 123);
  ::setenv("FB_TEST_SIZE_ENV", "", 1);
  CHECK(fb::sizeFromEnv("FB_TEST_SIZE_ENV", 123, 4096, 1 << 20, "8K") == 123);
  ::setenv("FB_TEST_SIZE_ENV", "64K", 1);
  CHECK(fb::sizeFromEnv("FB_TEST_SIZE_ENV", 123, 4096, 1 << 20, "8K") == 65536);
  for (const char* bad : {"junk", "1K", "2M", "-1", "12Q"}) {
    ::setenv("FB_TEST_SIZE_ENV", bad, 1);
    CAPTURE(bad);
    try {
      fb::sizeFromEnv("FB_TEST_SIZE_ENV", 123, 4096, 1 << 20, "8K");
      FAIL("no error");
    } catch (const fb::ConfigError& e) {
      CHECK(std::string(e.what()) ==
            std::string("FB_TEST_SIZE_ENV='") + bad + "': expected a size from 4K to 1M (e.g. 8K)");
    }
  }
  ::unsetenv("FB_TEST_SIZE_ENV");
}

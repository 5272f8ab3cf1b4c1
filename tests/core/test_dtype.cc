#include <catch2/catch.hpp>

#include <cmath>

#include "core/dtype.h"

using namespace fb;

TEST_CASE("half and bfloat16 round-trip small integers exactly", "[unit]") {
  for (int i = -256; i <= 256; ++i) {
    CAPTURE(i);
    CHECK(halfToFloat(floatToHalf(float(i))) == float(i));
    CHECK(bf16ToFloat(floatToBf16(float(i))) == float(i));
  }
}

TEST_CASE("half conversion rounds to nearest even and handles specials", "[unit]") {
  CHECK(floatToHalf(1.0f) == 0x3c00);
  CHECK(floatToHalf(-2.0f) == 0xc000);
  CHECK(floatToHalf(65504.0f) == 0x7bff);
  CHECK(floatToHalf(1e6f) == 0x7c00);  // overflow -> inf
  CHECK(std::isnan(halfToFloat(floatToHalf(NAN))));
  CHECK(halfToFloat(0x0001) == Approx(5.960464e-08f));  // smallest subnormal
  CHECK(floatToHalf(1.0f + 1.0f / 2048) == 0x3c00);     // tie to even
  CHECK(floatToBf16(1.0f) == 0x3f80);
}

TEST_CASE("dtype names parse both ways", "[unit]") {
  for (DataType t : allDataTypes()) CHECK(parseDataType(dtypeName(t)) == t);
  CHECK(parseDataType("half") == DataType::kFloat16);
  CHECK(!parseDataType("float8").has_value());
}

#include <catch2/catch.hpp>

#include "collectives/spec.h"

using namespace fb;

TEST_CASE("busbw factors match nccl-tests doc/PERFORMANCE.md", "[unit]") {
  for (int n : {1, 2, 3, 4, 7, 8, 64}) {
    CAPTURE(n);
    CHECK(busBwFactor(CollKind::kAllReduce, n) == Approx(2.0 * (n - 1) / n));
    CHECK(busBwFactor(CollKind::kAllGather, n) == Approx(double(n - 1) / n));
    CHECK(busBwFactor(CollKind::kReduceScatter, n) == Approx(double(n - 1) / n));
    CHECK(busBwFactor(CollKind::kP2PRing, n) == 1.0);
    CHECK(busBwFactor(CollKind::kAllToAll, n) == Approx(double(n - 1) / n));
  }
  CHECK(busBwFactor(CollKind::kAllReduce, 2) == 1.0);
  CHECK(busBwFactor(CollKind::kAllReduce, 1) == 0.0);
}

TEST_CASE("shapes: S is the total buffer for allgather and reducescatter", "[unit]") {
  auto ag = makeShape(CollKind::kAllGather, DataType::kFloat32, 1 << 20, 4, false);
  CHECK(ag.paramCount == (1u << 20) / 4 / 4);
  CHECK(ag.sendCount == ag.paramCount);
  CHECK(ag.recvCount == ag.paramCount * 4);
  CHECK(ag.bytes == 1u << 20);
  auto rs = makeShape(CollKind::kReduceScatter, DataType::kFloat32, 1000, 3, true);
  CHECK(rs.paramCount == 83);  // 250 elements / 3 ranks, rounded down as nccl-tests does
  CHECK(rs.sendCount == 249);
  CHECK(rs.bytes == 996);
  CHECK(rs.recvInPlaceOffset(2) == 166);
  auto ar = makeShape(CollKind::kAllReduce, DataType::kFloat16, 7, 2, false);
  CHECK(ar.paramCount == 3);
  CHECK(ar.bytes == 6);
  CHECK(makeShape(CollKind::kAllGather, DataType::kInt32, 8, 4, false).bytes == 0);
  // AllToAll (nccl-tests): count / n elements per peer, n blocks sent and received.
  auto a2a = makeShape(CollKind::kAllToAll, DataType::kFloat32, 1000, 3, false);
  CHECK(a2a.paramCount == 83);
  CHECK(a2a.sendCount == 249);
  CHECK(a2a.recvCount == 249);
  CHECK(a2a.bytes == 996);
}

TEST_CASE("alltoall: block b of rank r's output is block r of rank b's input", "[unit]") {
  auto s = makeShape(CollKind::kAllToAll, DataType::kInt32, 4 * 5 * 4, 4, false);  // 5 per peer
  REQUIRE(s.paramCount == 5);
  for (int r = 0; r < 4; ++r)
    for (std::size_t j = 0; j < s.recvCount; ++j)
      CHECK(expectedValue(s, r, j, 3) == patternValue(static_cast<int>(j / 5), r * 5 + j % 5, 3));
}

TEST_CASE("pattern values are small integers and expected results are exact", "[unit]") {
  for (std::size_t i = 0; i < 100; ++i) {
    double v = patternValue(3, i, 2);
    CHECK(v >= -4);
    CHECK(v <= 4);
  }
  auto s = makeShape(CollKind::kAllReduce, DataType::kFloat32, 40, 3, false);
  for (std::size_t j = 0; j < s.recvCount; ++j)
    CHECK(expectedValue(s, 1, j, 5) == patternValue(0, j, 5) + patternValue(1, j, 5) + patternValue(2, j, 5));
  auto ring = makeShape(CollKind::kP2PRing, DataType::kFloat32, 40, 3, false);
  CHECK(expectedValue(ring, 0, 4, 1) == patternValue(2, 4, 1));
}

TEST_CASE("countWrong counts every wrong element", "[unit]") {
  for (DataType t : allDataTypes()) {
    CAPTURE(dtypeName(t));
    auto s = makeShape(CollKind::kAllGather, t, 3 * 17 * dtypeSize(t), 3, false);
    std::vector<std::byte> buf(s.recvCount * dtypeSize(t));
    for (int r = 0; r < 3; ++r) fillPattern(buf.data() + r * s.paramCount * dtypeSize(t), t, s.paramCount, r, 9);
    CHECK(countWrong(s, buf.data(), 0, 9) == 0);
    storeElement(buf.data(), t, 5, loadElement(buf.data(), t, 5) + 1);
    storeElement(buf.data(), t, 40, loadElement(buf.data(), t, 40) - 2);
    CHECK(countWrong(s, buf.data(), 0, 9) == 2);
    CHECK(countWrong(s, buf.data(), 0, 10) > 2);  // stale data from another round is wrong
  }
}

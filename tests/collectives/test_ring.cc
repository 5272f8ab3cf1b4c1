// Ring algorithms over the tcp Transport with ranks as threads: every pattern, in-place and
// out-of-place, every dtype, rank counts 1..8, counts 0, 1, n-1, odd and large, element by element.
#include <catch2/catch.hpp>

#include <mutex>

#include "bootstrap/thread_bootstrap.h"
#include "collectives/collective.h"
#include "core/error.h"
#include "transport/tcp/tcp_transport.h"

using namespace fb;

namespace {
std::int64_t runPoint(int n, CollKind kind, DataType t, std::size_t count, bool inPlace,
                      std::optional<std::pair<int, std::size_t>> corrupt = std::nullopt) {
  std::mutex mu;
  std::int64_t wrong = 0;
  runRanks(n, [&](Bootstrap& bs) {
    TransportOptions opts;
    opts.tcpInterface = "lo";
    std::shared_ptr<Transport> tr = tcp::createTransport(bs, opts);
    auto coll = makeRingCollective(kind, tr);
    std::size_t bytes = count * dtypeSize(t) * (describe(kind).splitPerRank ? n : 1);
    CollShape shape = makeShape(kind, t, bytes, n, inPlace);
    REQUIRE(shape.paramCount == count);
    coll->prepare(shape);
    coll->runBatch(2, Deadline::in(std::chrono::seconds(60)));
    if (corrupt && corrupt->first == bs.rank()) coll->corruptNextCheck(corrupt->second);
    std::int64_t w = coll->check(3, Deadline::in(std::chrono::seconds(60)));
    std::lock_guard<std::mutex> lk(mu);
    wrong += w;
  });
  return wrong;
}
}  // namespace

TEST_CASE("ring collectives over tcp are exact for every rank count and count", "[transport][tcp]") {
  for (int n : {1, 2, 3, 4, 5, 8}) {
    for (CollKind kind : allCollKinds()) {
      for (bool inPlace : {false, true}) {
        if (inPlace && !describe(kind).hasInPlace && kind != CollKind::kP2PRing) continue;  // out-of-place only
        for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(n > 1 ? n - 1 : 2),
                                  std::size_t(4097)}) {
          CAPTURE(n, collName(kind), inPlace, count);
          CHECK(runPoint(n, kind, DataType::kFloat32, count, inPlace) == 0);
        }
      }
    }
  }
}

TEST_CASE("ring collectives are exact for every dtype and a count beyond one pipeline piece", "[transport][tcp]") {
  for (DataType t : allDataTypes()) {
    for (CollKind kind : allCollKinds()) {
      CAPTURE(dtypeName(t), collName(kind));
      CHECK(runPoint(3, kind, t, 1000003, false) == 0);
    }
  }
}

TEST_CASE("a corrupted element is counted", "[transport][tcp]") {
  CHECK(runPoint(3, CollKind::kAllReduce, DataType::kFloat32, 100, false, std::make_pair(1, std::size_t(7))) == 1);
  CHECK(runPoint(2, CollKind::kAllGather, DataType::kInt32, 10, true, std::make_pair(0, std::size_t(0))) == 1);
}

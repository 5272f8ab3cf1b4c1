// Every host algorithm (host_algorithms.h, forced with FB_HOST_ALGO) over the tcp Transport with
// ranks as threads: np 1..7 (powers of two and not), in-place and out-of-place, counts 0, 1, odd,
// not divisible by n, and one beyond a pipeline piece; checked element by element after two timed
// operations (the check refills the input with a fresh pattern).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <mutex>

#include "bootstrap/thread_bootstrap.h"
#include "collectives/collective.h"
#include "collectives/host_algorithms.h"
#include "core/error.h"
#include "transport/tcp/tcp_transport.h"

using namespace fb;

namespace {

struct Case {
  CollKind kind;
  const char* algo;
};
const Case kCases[] = {
    {CollKind::kAllReduce, "rd"},     {CollKind::kAllReduce, "rabenseifner"},
    {CollKind::kAllReduce, "ring"},   {CollKind::kAllGather, "bruck"},
    {CollKind::kAllGather, "ring"},   {CollKind::kReduceScatter, "rh"},
    {CollKind::kReduceScatter, "ring"}, {CollKind::kP2PRing, "ring"},
};

// Runs every case at `n` ranks over one transport; returns wrong elements per case key, and the
// algorithm each row named (must be the forced one; its model_algo id under key + "#model_algo").
template <std::size_t K = std::size(kCases)>
std::map<std::string, std::int64_t> runAll(int n, DataType t, const std::vector<std::size_t>& counts,
                                           std::map<std::string, std::string>* named,
                                           const Case (&cases)[K] = kCases) {
  std::mutex mu;
  std::map<std::string, std::int64_t> wrong;
  runRanks(n, [&](Bootstrap& bs) {
    TransportOptions opts;
    opts.tcpInterface = "lo";
    std::shared_ptr<Transport> tr = tcp::createTransport(bs, opts);
    tr->setNodeOf(nodePlacement(bs));
    for (const Case& c : cases) {
      for (bool inPlace : {false, true}) {
        if (inPlace && c.kind == CollKind::kP2PRing) continue;
        for (std::size_t count : counts) {
          // Every thread sets the same value before prepare(); the barrier keeps one case at a time.
          bs.barrier();
          if (bs.rank() == 0) ::setenv("FB_HOST_ALGO", (std::string(collName(c.kind)) + "=" + c.algo).c_str(), 1);
          bs.barrier();
          auto coll = makeRingCollective(c.kind, tr);
          bool perRankTotal = c.kind == CollKind::kAllGather || c.kind == CollKind::kReduceScatter;
          CollShape shape = makeShape(c.kind, t, count * dtypeSize(t) * (perRankTotal ? n : 1), n, inPlace);
          coll->prepare(shape);
          coll->runBatch(2, Deadline::in(std::chrono::seconds(60)));
          std::int64_t w = shape.paramCount == count ? coll->check(3, Deadline::in(std::chrono::seconds(60))) : -1000000;
          std::string key = std::string(collName(c.kind)) + "/" + c.algo + (inPlace ? "/in" : "/out") + "/count=" +
                            std::to_string(count);
          std::string algo, modelAlgo;
          for (auto& [k, v] : coll->path().details) {
            if (k == "algorithm") algo = v;
            if (k == "model_algo") modelAlgo = v;
          }
          std::lock_guard<std::mutex> lk(mu);
          wrong[key] += w;
          if (named) {
            (*named)[key] = algo;
            (*named)[key + "#model_algo"] = modelAlgo;
          }
        }
      }
    }
  });
  ::unsetenv("FB_HOST_ALGO");
  return wrong;
}

std::string expectedName(const std::string& algo) {
  static const std::map<std::string, std::string> full{
      {"rd", "recursive-doubling"}, {"rh", "recursive-halving"}, {"hier", "hierarchical (ring)"},
      {"hier-ring", "hierarchical (ring)"}, {"hier-rd", "hierarchical (recursive-doubling)"},
      {"hier-rabenseifner", "hierarchical (rabenseifner)"}};
  auto it = full.find(algo);
  return it == full.end() ? algo : it->second;
}
// The row's typed id for the forced FB_HOST_ALGO name: the model's canonical name, "hier" for any
// hierarchical choice.
std::string expectedModelAlgo(const std::string& algo) {
  if (algo.rfind("hier", 0) == 0) return "hier";
  return algo == "rd" ? "recursive-doubling" : algo == "rh" ? "recursive-halving" : algo;
}

// FB_HOST_ALGO=algo forced, n ranks (placed on the nodes FB_HOST_NODES names when `placed`), one
// element corrupted on rank `victim` before the check: the wrong elements all ranks counted.
std::int64_t wrongAfterCorruption(const char* algo, int n, int victim, bool placed) {
  ::setenv("FB_HOST_ALGO", algo, 1);
  std::mutex mu;
  std::int64_t wrong = 0;
  CollKind kind = *parseCollKind(std::string(algo).substr(0, std::string(algo).find('=')));
  runRanks(n, [&](Bootstrap& bs) {
    TransportOptions opts;
    opts.tcpInterface = "lo";
    std::shared_ptr<Transport> tr = tcp::createTransport(bs, opts);
    if (placed) tr->setNodeOf(nodePlacement(bs));
    auto coll = makeRingCollective(kind, tr);
    coll->prepare(makeShape(kind, DataType::kFloat32, static_cast<std::size_t>(n) * 4 * 101, n, false));
    if (bs.rank() == victim) coll->corruptNextCheck(5);
    std::int64_t w = coll->check(2, Deadline::in(std::chrono::seconds(60)));
    std::lock_guard<std::mutex> lk(mu);
    wrong += w;
  });
  ::unsetenv("FB_HOST_ALGO");
  return wrong;
}

}  // namespace

TEST_CASE("every host algorithm is exact at np 1..7, odd and uneven counts, both placements", "[collectives][tcp]") {
  for (int n = 1; n <= 7; ++n) {
    std::vector<std::size_t> counts{0, 1, static_cast<std::size_t>(n + 1), 4099};
    if (n == 3 || n == 6) counts.push_back(300007);  // beyond one 1 MiB piece, not divisible by n
    std::map<std::string, std::string> named;
    auto wrong = runAll(n, DataType::kFloat32, counts, &named);
    REQUIRE(!wrong.empty());
    for (auto& [key, w] : wrong) {
      CAPTURE(n, key);
      CHECK(w == 0);
    }
    for (const Case& c : kCases) {
      std::string key = std::string(collName(c.kind)) + "/" + c.algo + "/out/count=1";
      CAPTURE(n, key);
      CHECK(named[key] == expectedName(c.algo));
      CHECK(named[key + "#model_algo"] == expectedModelAlgo(c.algo));
    }
  }
}

// The hierarchical schedules, forced, with ranks placed on simulated nodes (FB_HOST_NODES): even
// (3x2, 2x3), uneven (1 + 2, 2 + 3, 1 + 1 + 3), interleaved (0,1,0,1: no node's ranks contiguous) and
// one node (the leader alone does everything).
const Case kHierCases[] = {
    {CollKind::kAllReduce, "hier-ring"}, {CollKind::kAllReduce, "hier-rd"},
    {CollKind::kAllReduce, "hier-rabenseifner"}, {CollKind::kAllGather, "hier"},
    {CollKind::kReduceScatter, "hier"},
};

TEST_CASE("hierarchical schedules are exact at even, uneven and interleaved placements", "[collectives][tcp]") {
  const std::pair<int, const char*> placements[] = {
      {6, "a,a,b,b,c,c"}, {6, "a,a,a,b,b,b"}, {3, "a,b,b"}, {5, "a,a,b,b,b"}, {5, "x,y,z,z,z"},
      {4, "a,b,a,b"},     {3, "a,a,a"},       {4, "a,b,c,d"}, {2, "a,b"}};
  for (auto [n, nodes] : placements) {
    ::setenv("FB_HOST_NODES", nodes, 1);
    std::vector<std::size_t> counts{0, 1, static_cast<std::size_t>(n + 1), 4099};
    if (n == 6 || n == 5) counts.push_back(300007);  // beyond one 1 MiB piece, not divisible by n
    std::map<std::string, std::string> named;
    auto wrong = runAll(n, DataType::kFloat32, counts, &named, kHierCases);
    ::unsetenv("FB_HOST_NODES");
    REQUIRE(wrong.size() == std::size(kHierCases) * 2 * counts.size());
    for (auto& [key, w] : wrong) {
      CAPTURE(n, nodes, key);
      CHECK(w == 0);
    }
    for (const Case& c : kHierCases) {
      std::string key = std::string(collName(c.kind)) + "/" + c.algo + "/in/count=1";
      CAPTURE(n, nodes, key);
      CHECK(named[key] == expectedName(c.algo));
      CHECK(named[key + "#model_algo"] == expectedModelAlgo(c.algo));
    }
  }
}

TEST_CASE("hierarchical: 16-bit and 64-bit types, a corrupted element is counted", "[collectives][tcp]") {
  ::setenv("FB_HOST_NODES", "0,0,1,1,1", 1);
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt32}) {
    auto wrong = runAll(5, t, {13, 1001}, nullptr, kHierCases);
    REQUIRE(!wrong.empty());
    for (auto& [key, w] : wrong) {
      CAPTURE(dtypeName(t), key);
      CHECK(w == 0);
    }
  }
  for (const char* algo : {"allreduce=hier-ring", "allreduce=hier-rd", "allgather=hier", "reducescatter=hier"}) {
    CAPTURE(algo);
    CHECK(wrongAfterCorruption(algo, 5, 3, true) == 1);
  }
  ::unsetenv("FB_HOST_NODES");
}

TEST_CASE("placement: FB_HOST_NODES numbers nodes by first appearance; a wrong length is a ConfigError",
          "[collectives]") {
  ::setenv("FB_HOST_NODES", "b,a,b,c", 1);
  auto v = nodesFromEnv(4);
  REQUIRE(v);
  CHECK(*v == std::vector<int>{0, 1, 0, 2});
  HostPlacement p{*v, 4};
  CHECK(p.nodes() == 3);
  CHECK(p.maxPerNode() == 2);
  CHECK(p.members() == std::vector<std::vector<int>>{{0, 2}, {1}, {3}});
  CHECK(p.maxRingCrossings() == 2);  // rank 0 -> 1 and rank 2 -> 3 leave node b
  CHECK(HostPlacement{{0, 0, 1, 1}, 4}.maxRingCrossings() == 1);
  CHECK_THROWS_AS(nodesFromEnv(3), ConfigError);
  ::setenv("FB_HOST_NODES", "a,,b", 1);
  CHECK_THROWS_AS(nodesFromEnv(3), ConfigError);
  ::unsetenv("FB_HOST_NODES");
  CHECK(!nodesFromEnv(3));
  // Without a ranker: one node keeps the size table, several nodes with several ranks go hierarchical,
  // one rank per node keeps the table; FB_HOST_ALGO wins over both.
  HostPlacement one{{0, 0, 0, 0}, 4}, two{{0, 0, 1, 1}, 4}, flat{{0, 1, 2}, 3};
  CHECK(chooseHostAlgo(CollKind::kAllGather, 4096, one, nullptr) == HostChoice{HostAlgo::kBruck, HostAlgo::kRing});
  CHECK(chooseHostAlgo(CollKind::kAllGather, 4096, two, nullptr) == HostChoice{HostAlgo::kHier, HostAlgo::kRing});
  CHECK(chooseHostAlgo(CollKind::kAllReduce, 4096, flat, nullptr).algo == HostAlgo::kRecursiveDoubling);
  CHECK(chooseHostAlgo(CollKind::kP2PRing, 4096, two, nullptr).algo == HostAlgo::kRing);
  HostRanker r = [](CollKind, std::size_t, const HostPlacement&) -> std::optional<HostChoice> {
    return HostChoice{HostAlgo::kRing, HostAlgo::kRing};
  };
  CHECK(chooseHostAlgo(CollKind::kAllGather, 4096, two, &r).algo == HostAlgo::kRing);
  CHECK(chooseHostAlgo(CollKind::kAllGather, 4096, one, &r).algo == HostAlgo::kBruck);  // one node: the table
  ::setenv("FB_HOST_ALGO", "allreduce=hier-rd", 1);
  CHECK(chooseHostAlgo(CollKind::kAllReduce, 4096, two, &r) ==
        HostChoice{HostAlgo::kHier, HostAlgo::kRecursiveDoubling});
  ::setenv("FB_HOST_ALGO", "allgather=hier-rd", 1);
  CHECK_THROWS_AS(validateHostAlgoEnv(), ConfigError);
  ::setenv("FB_HOST_ALGO", "hier-bruck", 1);
  CHECK_THROWS_AS(validateHostAlgoEnv(), ConfigError);
  ::unsetenv("FB_HOST_ALGO");
}

TEST_CASE("host algorithms are exact for 16-bit types", "[collectives][tcp]") {
  for (int n : {3, 4}) {
    for (DataType t : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt32}) {
      auto wrong = runAll(n, t, {13, 1001}, nullptr);
      for (auto& [key, w] : wrong) {
        CAPTURE(n, dtypeName(t), key);
        CHECK(w == 0);
      }
    }
  }
}

TEST_CASE("a corrupted element is counted on the algorithm path", "[collectives][tcp]") {
  for (const char* algo : {"allreduce=rd", "allreduce=rabenseifner", "allgather=bruck", "reducescatter=rh"}) {
    CAPTURE(algo);
    CHECK(wrongAfterCorruption(algo, 3, 1, false) == 1);
  }
}

TEST_CASE("FB_HOST_ALGO: bad values are ConfigErrors, defaults depend on size", "[collectives]") {
  for (const char* bad : {"nope", "allreduce=bruck", "allgather=rd", "bogus=ring", "ring,,rd", "allreduce="}) {
    ::setenv("FB_HOST_ALGO", bad, 1);
    CAPTURE(bad);
    CHECK_THROWS_AS(validateHostAlgoEnv(), ConfigError);
    CHECK_THROWS_AS(chooseHostAlgo(CollKind::kAllReduce, 8, 4), ConfigError);
  }
  ::setenv("FB_HOST_ALGO", "ring", 1);
  CHECK(chooseHostAlgo(CollKind::kAllReduce, 8, 4) == HostAlgo::kRing);
  CHECK(chooseHostAlgo(CollKind::kAllGather, 8, 4) == HostAlgo::kRing);
  ::setenv("FB_HOST_ALGO", "rd", 1);  // a plain name applies only where it is implemented
  CHECK(chooseHostAlgo(CollKind::kAllReduce, std::size_t(1) << 30, 4) == HostAlgo::kRecursiveDoubling);
  CHECK(chooseHostAlgo(CollKind::kAllGather, 8, 4) == chooseHostAlgo(CollKind::kAllGather, 8, 4));
  ::unsetenv("FB_HOST_ALGO");
  CHECK(chooseHostAlgo(CollKind::kAllReduce, 8, 4) == HostAlgo::kRecursiveDoubling);
  CHECK(chooseHostAlgo(CollKind::kP2PRing, 8, 4) == HostAlgo::kRing);
  // AllGather: Bruck below 256 KiB; from 4 ranks up to 8 MiB; the ring above
  CHECK(chooseHostAlgo(CollKind::kAllGather, (256u << 10) - 1, 3) == HostAlgo::kBruck);
  CHECK(chooseHostAlgo(CollKind::kAllGather, 256u << 10, 3) == HostAlgo::kRing);
  CHECK(chooseHostAlgo(CollKind::kAllGather, 8u << 20, 4) == HostAlgo::kBruck);
  CHECK(chooseHostAlgo(CollKind::kAllGather, (8u << 20) + 1, 4) == HostAlgo::kRing);
  CHECK(chooseHostAlgo(CollKind::kAllGather, 1u << 20, 7) == HostAlgo::kBruck);
  // AllReduce: Rabenseifner up to 512 KiB at any count, then the ring
  CHECK(chooseHostAlgo(CollKind::kAllReduce, 512u << 10, 4) == HostAlgo::kRabenseifner);
  CHECK(chooseHostAlgo(CollKind::kAllReduce, (512u << 10) + 1, 4) == HostAlgo::kRing);
  // ReduceScatter: recursive halving up to 512 KiB; up to 2 MiB at a power of two from 4 ranks
  const CollKind rs = CollKind::kReduceScatter;
  CHECK(chooseHostAlgo(rs, 512u << 10, 3) == HostAlgo::kRecursiveHalving);
  CHECK(chooseHostAlgo(rs, (512u << 10) + 1, 3) == HostAlgo::kRing);
  CHECK(chooseHostAlgo(rs, (512u << 10) + 1, 2) == HostAlgo::kRing);
  CHECK(chooseHostAlgo(rs, (512u << 10) + 1, 6) == HostAlgo::kRing);
  CHECK(chooseHostAlgo(rs, 2u << 20, 4) == HostAlgo::kRecursiveHalving);
  CHECK(chooseHostAlgo(rs, 2u << 20, 8) == HostAlgo::kRecursiveHalving);
  CHECK(chooseHostAlgo(rs, (2u << 20) + 1, 4) == HostAlgo::kRing);
}

TEST_CASE("FB_PROGRESS: spin, yield and block all give exact results; the path says which; bad values refused",
          "[collectives][tcp]") {
  for (const char* mode : {"block", "spin", "yield"}) {
    ::setenv("FB_PROGRESS", mode, 1);
    std::mutex mu;
    std::int64_t wrong = 0;
    std::vector<std::string> said;
    runRanks(4, [&](Bootstrap& bs) {
      TransportOptions opts;
      opts.tcpInterface = "lo";
      std::shared_ptr<Transport> tr = tcp::createTransport(bs, opts);
      std::int64_t w = 0;
      for (CollKind k : allCollKinds()) {
        auto coll = makeRingCollective(k, tr);
        coll->prepare(makeShape(k, DataType::kFloat32, 4 * 4 * 1001, 4, false));
        coll->runBatch(3, Deadline::in(std::chrono::seconds(60)));
        w += coll->check(5, Deadline::in(std::chrono::seconds(60)));
      }
      std::string progress;
      for (auto& [k, v] : tr->path().details)
        if (k == "progress") progress = v;
      std::lock_guard<std::mutex> lk(mu);
      wrong += w;
      said.push_back(progress);
    });
    CAPTURE(mode);
    CHECK(wrong == 0);
    REQUIRE(said.size() == 4);
    for (auto& p : said) CHECK(p.find(std::string("FB_PROGRESS=") + mode) != std::string::npos);
  }
  ::setenv("FB_PROGRESS", "sometimes", 1);
  CHECK_THROWS_AS(runRanks(2,
                           [&](Bootstrap& bs) {
                             TransportOptions opts;
                             opts.tcpInterface = "lo";
                             tcp::createTransport(bs, opts);
                           }),
                  ConfigError);
  ::unsetenv("FB_PROGRESS");
}

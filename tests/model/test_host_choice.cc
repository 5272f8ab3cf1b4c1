// The host algorithm choice by the model (lib/model/host_choice.h): times of the candidates on a
// placement, the node-aware corrections, the ranker's answers and FB_HOST_LINKS.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "core/error.h"
#include "model/host_choice.h"

using namespace fb;
using fb::model::HostLinks;

namespace {
HostPlacement shape(int N, int G) {
  HostPlacement p;
  p.nRanks = N * G;
  for (int r = 0; r < N * G; ++r) p.nodeOf.push_back(r / G);
  return p;
}
// 1 Gbit/s between nodes, as the lab shapes it: 0.125 GB/s, 50 us; loopback 3 GB/s, 15 us.
HostLinks lab() { return model::hostLinks(0.125); }
}  // namespace

TEST_CASE("host choice: the hand-computed times of the flat and hierarchical schedules", "[model][host]") {
  ::unsetenv("FB_HOST_LINKS");
  const HostLinks l = lab();
  const double be = 1e-3 / 0.125, bi = 1e-3 / 3.0, S = 6.0 * (1 << 20);
  // Bruck AllGather at 3x2: 3 hops of 1, 2 and min(4, 6-4) = 2 blocks of S/6, leaving each node
  // from both its ranks at once (2 x the chunk on its one NIC).
  const double bruck = (50 + 2 * S / 6 * be) + 2 * (50 + 2 * S / 3 * be);
  CHECK(model::hostTime(CollKind::kAllGather, {HostAlgo::kBruck, HostAlgo::kRing}, S, shape(3, 2), l) ==
        Approx(bruck).epsilon(1e-9));
  // The flat ring at 3x2 (contiguous: one crossing per node): 5 hops of S/6 at the inter rate.
  CHECK(model::hostTime(CollKind::kAllGather, {HostAlgo::kRing, HostAlgo::kRing}, S, shape(3, 2), l) ==
        Approx(5 * (50 + S / 6 * be)).epsilon(1e-9));
  // Hierarchical: 1 intra hop of S/6 into the leader, the leaders' ring (2 hops of S/3), one
  // broadcast of S.
  const double hier = (15 + S / 6 * bi) + 2 * (50 + S / 3 * be) + (15 + S * bi);
  CHECK(model::hostTime(CollKind::kAllGather, {HostAlgo::kHier, HostAlgo::kRing}, S, shape(3, 2), l) ==
        Approx(hier).epsilon(1e-9));
  // AllReduce hierarchical with recursive doubling between 2 leaders: reduce, 1 hop of S, broadcast.
  CHECK(model::hostTime(CollKind::kAllReduce, {HostAlgo::kHier, HostAlgo::kRecursiveDoubling}, S, shape(2, 2), l) ==
        Approx((15 + S * bi) + (50 + S * be) + (15 + S * bi)).epsilon(1e-9));
  // Interleaved placement: the ring leaves each node from every rank.
  HostPlacement inter{{0, 1, 0, 1}, 4};
  CHECK(model::hostTime(CollKind::kAllGather, {HostAlgo::kRing, HostAlgo::kRing}, S, inter, l) ==
        Approx(3 * (50 + 2 * S / 4 * be)).epsilon(1e-9));
}

TEST_CASE("host choice: the ranker's choices on lab shapes", "[model][host]") {
  ::unsetenv("FB_HOST_LINKS");
  auto r = model::hostRanker(lab());
  auto pick = [&](CollKind k, std::size_t b, const HostPlacement& p) { return (*r)(k, b, p); };
  // One node: no opinion (the size table measured on loopback stays).
  CHECK(!pick(CollKind::kAllGather, 1 << 20, shape(1, 4)));
  // Two ranks per node: hierarchical from 4 KiB to 64 MiB for all three.
  for (auto [N, G] : {std::pair{2, 2}, {3, 2}, {4, 2}})
    for (CollKind k : {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter})
      for (std::size_t b : {std::size_t(4) << 10, std::size_t(1) << 20, std::size_t(64) << 20}) {
        auto c = pick(k, b, shape(N, G));
        CAPTURE(N, G, collName(k), b);
        REQUIRE(c);
        CHECK(c->algo == HostAlgo::kHier);
      }
  // 2 leaders: recursive doubling (1 hop of S) beats the ring's 2 hops of S/2 at every size.
  CHECK(pick(CollKind::kAllReduce, 64 << 20, shape(2, 2))->inner == HostAlgo::kRecursiveDoubling);
  // 3 leaders: the ring (4 hops of S/3) beats recursive doubling's 3 hops of S once S beta > alpha.
  CHECK(pick(CollKind::kAllReduce, 1 << 20, shape(3, 2))->inner == HostAlgo::kRing);
  // One rank per node: flat; AllReduce 2x1 recursive doubling, 3x1 large the ring.
  CHECK(pick(CollKind::kAllReduce, 1 << 20, shape(2, 1))->algo == HostAlgo::kRecursiveDoubling);
  CHECK(pick(CollKind::kAllReduce, 1 << 20, shape(3, 1))->algo == HostAlgo::kRing);
  CHECK(pick(CollKind::kP2PRing, 1 << 20, shape(3, 2)) == std::nullopt);
}

TEST_CASE("host choice: FB_HOST_LINKS overrides the rates; bad values are ConfigErrors", "[model][host]") {
  ::setenv("FB_HOST_LINKS", "inter=0.0625:100,intra=:5", 1);
  HostLinks l = model::hostLinks(-1);
  CHECK(l.inter.segs.at(0).gbps() == Approx(0.0625));
  CHECK(l.inter.segs.at(0).alphaUs == 100);
  CHECK(l.intra.segs.at(0).gbps() == Approx(3.0));
  CHECK(l.intra.segs.at(0).alphaUs == 5);
  for (const char* bad : {"inter=x", "inter=0:5", "foo=1", "inter=1:-2", "inter=1:2us"}) {
    ::setenv("FB_HOST_LINKS", bad, 1);
    CAPTURE(bad);
    CHECK_THROWS_AS(model::validateHostLinksEnv(), ConfigError);
  }
  ::unsetenv("FB_HOST_LINKS");
  CHECK(model::hostLinks(-1).inter.segs.at(0).gbps() == Approx(1.25));  // unknown: 10 GbE
}

// Not a check: prints the choice per shape and size at 1 Gbit/s and 500 Mbit/s (the lab's rates);
// run with `host_choice_test "[.table]"`.
TEST_CASE("host choice: the table of choices on the lab's shapes", "[.table]") {
  ::unsetenv("FB_HOST_LINKS");
  for (double gbps : {0.125, 0.0625}) {
    auto r = model::hostRanker(model::hostLinks(gbps));
    for (CollKind k : {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter}) {
      for (auto [N, G] : {std::pair{2, 1}, {3, 1}, {4, 1}, {2, 2}, {3, 2}, {4, 2}}) {
        std::string line, last;
        std::size_t from = 0;
        auto flush = [&](std::size_t to) {
          if (!last.empty()) line += last + " " + std::to_string(from >> 10) + "K-" + std::to_string(to >> 10) + "K; ";
        };
        for (std::size_t b = 4 << 10; b <= (64u << 20); b *= 2) {
          std::string name = hostChoiceName(*(*r)(k, b, shape(N, G)));
          if (name != last) {
            flush(b / 2);
            last = name;
            from = b;
          }
        }
        flush(64u << 20);
        std::printf("%.4g GB/s %s %dx%d: %s\n", gbps, std::string(collName(k)).c_str(), N, G, line.c_str());
      }
    }
  }
}

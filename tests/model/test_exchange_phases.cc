// The exchange algorithms' phases on N nodes x G ranks in blocks: which hops cross nodes, and from
// how many of a node's ranks at once (hand-counted partner tables below).
#include <catch2/catch.hpp>

#include <cmath>

#include "model/model.h"

using namespace fb::model;

namespace {
struct Want {
  double chunk, scale;
  bool intra, inter;
};
int wrongPhases(const std::vector<Phase>& got, const std::vector<Want>& want) {
  int wrong = std::abs(static_cast<int>(got.size()) - static_cast<int>(want.size()));
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const auto& g = got[i];
    const auto& w = want[i];
    if (g.count != 1 || std::abs(g.chunk - w.chunk) > 1e-9 * w.chunk || std::abs(g.interScale - w.scale) > 1e-12 ||
        g.intra != w.intra || g.inter != w.inter)
      ++wrong;
  }
  return wrong;
}
}  // namespace

TEST_CASE("Bruck at 3 nodes x 2 ranks, one NIC: the first hop crosses from one rank per node, the others from both") {
  // n = 6, S = 600: distance 1 sends 1 block (100 B) to rank i-1: 0->5, 2->1, 4->3 cross, 1->0, 3->2, 5->4 stay;
  // distance 2 and 4 send 2 blocks (200 B): every partner is on another node (2 per node on 1 NIC).
  auto ph = phases("allgather", Algo::kBruck, Shape{3, 2, 1}, 600);
  CHECK(wrongPhases(ph, {{100, 1, true, true}, {200, 2, false, true}, {200, 2, false, true}}) == 0);
}

TEST_CASE("recursive doubling AllReduce at 2 x 2: mask 1 stays inside, mask 2 crosses from both ranks") {
  auto ph = phases("allreduce", Algo::kRecDoubling, Shape{2, 2, 1}, 1000);
  CHECK(wrongPhases(ph, {{1000, 1, true, false}, {1000, 2, false, true}}) == 0);
  // with one NIC per rank (rails), the two crossing ranks each have their own NIC
  auto rails = phases("allreduce", Algo::kRecDoubling, Shape{2, 2, 0}, 1000);
  CHECK(wrongPhases(rails, {{1000, 1, true, false}, {1000, 1, false, true}}) == 0);
}

TEST_CASE("Rabenseifner at 4 x 2: halving from mask 4 (crossing) down to 1 (inside), then doubling back") {
  // p = 8, S = 800: mask m carries m blocks of 100 B; masks 4 and 2 pair ranks of other nodes.
  auto ph = phases("allreduce", Algo::kRabenseifner, Shape{4, 2, 1}, 800);
  CHECK(wrongPhases(ph, {{400, 2, false, true},
                         {200, 2, false, true},
                         {100, 1, true, false},
                         {100, 1, true, false},
                         {200, 2, false, true},
                         {400, 2, false, true}}) == 0);
}

TEST_CASE("on one node every exchange hop is intra; with one rank per node every hop crosses once") {
  for (const auto& ph : phases("reducescatter", Algo::kRecHalving, Shape{1, 4, 1}, 400)) {
    CHECK(ph.intra);
    CHECK_FALSE(ph.inter);
  }
  for (const auto& ph : phases("allgather", Algo::kBruck, Shape{5, 1, 1}, 500)) {
    CHECK_FALSE(ph.intra);
    CHECK(ph.inter);
    CHECK(ph.interScale == Catch::Detail::Approx(1.0));
  }
}

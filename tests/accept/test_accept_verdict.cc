// lib/accept's verdicts on synthetic pair matrices: node, link and fabric-wide suspects, the latency
// and stall rules, thresholds from the line rate and from --expect, and the pairs retested.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "accept/accept.h"

using namespace fb::accept;

namespace {

// n units at `bw` GB/s and `lat` us, each pair jittered deterministically by up to +-2 %.
PairMatrix clean(int n, double bw = 10.0, double lat = 5.0, double rate = kNaN) {
  PairMatrix m(n);
  m.path = "tcp";
  m.bwBytes = 1 << 24;
  m.latBytes = 8;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      double j = ((a * 7 + b * 13) % 9 - 4) / 200.0;  // -2 % .. +2 %
      m.set(a, b, bw * (1 + j), lat * (1 - j), rate);
    }
  return m;
}

std::vector<std::string> names(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back("node" + std::to_string(i));
  return v;
}

}  // namespace

TEST_CASE("verdict: a clean matrix gives no suspect") {
  for (int n : {2, 3, 6, 16, 64}) {
    auto m = clean(n);
    auto v = judgePath(m, Thresholds{}, Expectations{}, names(n));
    INFO("n = " << n);
    REQUIRE(v.suspects.empty());
    REQUIRE(v.slow.empty());
    REQUIRE(v.failures.empty());  // no line rate known, no --expect
  }
}

TEST_CASE("verdict: a half-rate node is a node fault, not n-1 link faults") {
  const int n = 8;
  auto m = clean(n);
  for (int b = 0; b < n; ++b)
    if (b != 5) m.set(5, b, m.get(m.bw, 5, b) / 2, m.get(m.lat, 5, b), 12.5);
  auto v = judgePath(m, Thresholds{}, Expectations{}, names(n));
  REQUIRE(v.suspects.size() == 1);
  REQUIRE(v.suspects[0].kind == "node");
  REQUIRE(v.suspects[0].units == std::vector<int>{5});
  REQUIRE(v.slow.size() == n - 1);
  for (const auto& f : v.slow) REQUIRE((f.pair.first == 5 || f.pair.second == 5));
}

TEST_CASE("verdict: a half-rate node with noisy pairs beside it is a node fault, not fabric-wide") {
  // 6 units: the node's 5 pairs slow plus 3 noisy latency pairs = 8 of 15 (> half); the node
  // explains 5 of them and 3 of the other 10 pairs are slow, so the node is named, not the fabric.
  const int n = 6;
  auto m = clean(n);
  for (int b = 0; b < n; ++b)
    if (b != 2) m.set(2, b, m.get(m.bw, 2, b) / 2, m.get(m.lat, 2, b), kNaN);
  const std::vector<Pair> noisy = {{0, 1}, {3, 4}, {4, 5}};
  for (auto [a, b] : noisy) m.set(a, b, m.get(m.bw, a, b), 40.0, kNaN);
  auto v = judgePath(m, Thresholds{}, Expectations{}, names(n));
  REQUIRE(v.slow.size() == 8);
  REQUIRE(v.suspects.size() == 4);
  REQUIRE(v.suspects[0].kind == "node");
  REQUIRE(v.suspects[0].units == std::vector<int>{2});
  int wrong = 0;
  for (std::size_t i = 1; i < v.suspects.size(); ++i) {
    const auto& s = v.suspects[i];
    Pair p{s.units.at(0), s.units.at(1)};
    if (s.kind != "link" || std::find(noisy.begin(), noisy.end(), p) == noisy.end()) ++wrong;
  }
  REQUIRE(wrong == 0);
  // two half-rate nodes of 6 explain 9 of 15 pairs (> half): no one node stands out
  auto m2 = clean(n);
  for (int b = 0; b < n; ++b) {
    if (b != 1) m2.set(1, b, m2.get(m2.bw, 1, b) / 2, 5.0, kNaN);
    if (b != 4 && b != 1) m2.set(4, b, m2.get(m2.bw, 4, b) / 2, 5.0, kNaN);
  }
  auto v2 = judgePath(m2, Thresholds{}, Expectations{}, names(n));
  REQUIRE(v2.suspects.size() == 1);
  REQUIRE(v2.suspects[0].kind == "fabric");
}

TEST_CASE("verdict: one slow pair is a link fault naming both ends") {
  const int n = 6;
  auto m = clean(n);
  m.set(1, 4, 6.0, 5.0, 12.5);  // bandwidth 60 %
  auto v = judgePath(m, Thresholds{}, Expectations{}, names(n));
  REQUIRE(v.suspects.size() == 1);
  REQUIRE(v.suspects[0].kind == "link");
  REQUIRE(v.suspects[0].units == std::vector<int>{1, 4});
  REQUIRE(!v.suspects[0].why.empty());
  REQUIRE(!v.suspects[0].stalled);  // slow, not lossy: no retransmission evidence asked for

  auto m2 = clean(n);
  m2.set(0, 3, 10.0, 30.0, 12.5);  // latency 6x (netem delay)
  auto v2 = judgePath(m2, Thresholds{}, Expectations{}, names(n));
  REQUIRE(v2.suspects.size() == 1);
  REQUIRE(v2.suspects[0].kind == "link");
  REQUIRE(v2.suspects[0].units == std::vector<int>{0, 3});
  REQUIRE(v2.suspects[0].why[0].find("latency") != std::string::npos);
}

TEST_CASE("verdict: latency is slow only beyond 2.1x the best pairs AND a MAD outlier") {
  // The lab's halfnode trial 9 of the series before results/20261206-accept-lab-10x, tcp latency floors in us:
  // median 13.65, MAD 1.27, 10th percentile 12.35 (these 2-decimal figures). n4-n6 at 20.66 is a MAD outlier (> 13.65 + 3 x
  // 1.4826 x 1.27 and > 1.5 x 13.65) but under 2.1 x 12.35 = 25.9: wake-up noise, not a fault.
  const double lat[6][6] = {{0, 14.54, 12.86, 12.25, 12.54, 15.8},  {14.54, 0, 14.19, 12.69, 15.66, 20.37},
                            {12.86, 14.19, 0, 12.33, 12.9, 13.65},  {12.25, 12.69, 12.33, 0, 15.43, 20.66},
                            {12.54, 15.66, 12.9, 15.43, 0, 12.38},  {15.8, 20.37, 13.65, 20.66, 12.38, 0}};
  auto table = [&](Pair bump, double to) {
    PairMatrix m(6);
    m.path = "tcp";
    for (int a = 0; a < 6; ++a)
      for (int b = a + 1; b < 6; ++b) m.set(a, b, 0.0597, Pair{a, b} == bump ? to : lat[a][b], kNaN);
    return m;
  };
  auto flagged = [](const PairMatrix& m) {
    std::set<Pair> s;
    for (const auto& f : slowPairs(m, Thresholds{})) s.insert(f.pair);
    return s;
  };
  auto m = table({-1, -1}, 0);
  auto st = judgePath(m, Thresholds{}, Expectations{}, names(6)).lat;
  REQUIRE(st.median == Approx(13.65));
  REQUIRE(st.mad == Approx(1.27));
  REQUIRE(st.ref == Approx(12.35).epsilon(0.002));
  REQUIRE(m.get(m.lat, 3, 5) > st.median + 3 * 1.4826 * st.mad);  // the MAD rule alone would flag it
  REQUIRE(m.get(m.lat, 3, 5) > 1.5 * st.median);
  REQUIRE(flagged(m).empty());
  REQUIRE(judgePath(m, Thresholds{}, Expectations{}, names(6)).suspects.empty());
  // n4-n6 at 30 us (2.4x the 10th percentile, and an outlier): that pair and no other
  auto m2 = table({3, 5}, 30.0);
  REQUIRE(flagged(m2) == std::set<Pair>{{3, 5}});
  auto v2 = judgePath(m2, Thresholds{}, Expectations{}, names(6));
  REQUIRE(v2.suspects.size() == 1);
  REQUIRE(v2.suspects[0].kind == "link");
  REQUIRE(v2.suspects[0].units == std::vector<int>{3, 5});
  REQUIRE(v2.suspects[0].why.at(0).find("and an outlier") != std::string::npos);
  // beyond 2.1x but not an outlier: 9 of 15 pairs at 27-31 us (MAD wide), the rest at 12-13: the
  // latency rule flags none of them (no single pair stands out)
  PairMatrix m3(6);
  m3.path = "tcp";
  int k = 0;
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b, ++k) m3.set(a, b, 0.0597, k % 5 < 3 ? 27.0 + k % 4 : 12.0 + 0.1 * k, kNaN);
  REQUIRE(flagged(m3).empty());
}

TEST_CASE("stalls: round trips counted against 10 ms or 10x the pair's shortest") {
  Thresholds t;
  // shortest 27 us: the limit is 10 ms; 9999 is under it, 10000, 12000 and 50000 at or over it
  REQUIRE(countStalls({30, 28, 12000, 9999, 10000, 50000, 27}, t) == 3);
  // shortest 2 ms (a long path): the limit is 10 x 2 ms = 20 ms; only 25 ms stalled
  REQUIRE(countStalls({2000, 2100, 25000, 19000}, t) == 1);
  REQUIRE(countStalls({}, t) == 0);
  REQUIRE(countStalls({14, 15, 16}, t) == 0);
}

namespace {

// 6 units, 200 round trips per pair, `stalled` per pair (upper triangle in schedule order).
PairMatrix stallTable(const std::map<Pair, int>& stalled, int others = 0) {
  auto m = clean(6, 0.0597, 13.6);
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b) {
      auto it = stalled.find({a, b});
      m.setStalls(a, b, it == stalled.end() ? others : it->second, 200);
    }
  return m;
}

std::set<Pair> flaggedPairs(const PairMatrix& m) {
  std::set<Pair> s;
  for (const auto& f : slowPairs(m, Thresholds{})) s.insert(f.pair);
  return s;
}

}  // namespace

TEST_CASE("stalls: a pair losing packets is a link fault; one stall is not") {
  // n2<->n5 (units 1, 4) losing 10 % of packets: ~19 % of round trips wait for a retransmission.
  // A few other pairs stall once or twice (a loaded host).
  auto m = stallTable({{{1, 4}, 38}, {{0, 2}, 1}, {{3, 5}, 2}, {{2, 3}, 1}});
  auto v = judgePath(m, Thresholds{}, Expectations{}, names(6));
  int wrong = 0;
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b) {
      bool want = Pair{a, b} == Pair{1, 4};
      bool got = std::any_of(v.slow.begin(), v.slow.end(), [&](const PairFlag& f) { return f.pair == Pair{a, b}; });
      if (want != got) ++wrong;
    }
  REQUIRE(wrong == 0);
  REQUIRE(v.suspects.size() == 1);
  REQUIRE(v.suspects[0].kind == "link");
  REQUIRE(v.suspects[0].units == std::vector<int>{1, 4});
  REQUIRE(v.suspects[0].why.at(0).find("38 of 200 round trips stalled (19.0 %") != std::string::npos);
  REQUIRE(v.suspects[0].stalled);  // its nodes' retransmissions are joined as evidence
  REQUIRE(v.slow.size() == 1);
  REQUIRE(v.slow[0].stalled);
  REQUIRE(v.stall.median == Approx(0.0));
  // a single stall on one pair (the rest none): not a fault; nor 4 (under the minimum count of 5)
  REQUIRE(flaggedPairs(stallTable({{{1, 4}, 1}})).empty());
  REQUIRE(judgePath(stallTable({{{1, 4}, 1}}), Thresholds{}, Expectations{}, names(6)).suspects.empty());
  REQUIRE(flaggedPairs(stallTable({{{1, 4}, 4}})).empty());
  REQUIRE(flaggedPairs(stallTable({{{1, 4}, 5}})) == std::set<Pair>{{1, 4}});
  // a loaded machine: every pair stalls 4-6 times; one at 10 is under 3x the median (5): none
  std::map<Pair, int> loaded;
  int k = 0;
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b) loaded[{a, b}] = 4 + (k++ % 3);
  loaded[{0, 5}] = 10;
  REQUIRE(flaggedPairs(stallTable(loaded)).empty());
  loaded[{0, 5}] = 40;  // 8x the median: flagged
  REQUIRE(flaggedPairs(stallTable(loaded)) == std::set<Pair>{{0, 5}});
  // not measured (NaN) pairs are no evidence either way
  auto m4 = stallTable({{{1, 4}, 38}});
  m4.setStalls(0, 1, kNaN, kNaN);
  REQUIRE(flaggedPairs(m4) == std::set<Pair>{{1, 4}});
}

TEST_CASE("stalls: a unit all of whose pairs stall is a node fault") {
  std::map<Pair, int> s;
  for (int b = 0; b < 6; ++b)
    if (b != 2) s[{std::min(2, b), std::max(2, b)}] = 30;
  s[{0, 1}] = 1;
  auto v = judgePath(stallTable(s), Thresholds{}, Expectations{}, names(6));
  REQUIRE(v.slow.size() == 5);
  for (const auto& f : v.slow) REQUIRE((f.pair.first == 2 || f.pair.second == 2));
  REQUIRE(v.suspects.size() == 1);
  REQUIRE(v.suspects[0].kind == "node");
  REQUIRE(v.suspects[0].units == std::vector<int>{2});
  REQUIRE(v.suspects[0].stalled);
}

TEST_CASE("stalls: retransmissions as evidence beside a stalling pair") {
  // the loss trials: n2 and n5 +7..28, the others +0..4
  const std::vector<double> all = {2, 17, 0, 4, 21, 1};
  REQUIRE(retransEvidence("tcp RetransSegs", 17, all) == "counter tcp RetransSegs +17 during the pair test (median unit +3)");
  REQUIRE(retransEvidence("tcp RetransSegs", 2, all).empty());  // under the median unit
  REQUIRE(retransEvidence("eth0 rx_errors", 17, all).empty());  // another counter
  REQUIRE(counterCause("tcp RetransSegs", 17, all, 5.0).empty());  // under counterCause's own bar
}

TEST_CASE("verdict: two units cannot tell node from link; most pairs slow is fabric-wide") {
  auto m = clean(2);
  auto v = judgePath(m, Thresholds{}, Expectations{}, names(2));
  REQUIRE(v.suspects.empty());
  auto m6 = clean(6);
  // half of the pairs at random-ish low values: no node or link is named
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b)
      if ((a + b) % 3 != 0) m6.set(a, b, 3.0 + a * 0.3 + b * 0.2, 5.0, 12.5);
  auto v6 = judgePath(m6, Thresholds{}, Expectations{}, names(6));
  REQUIRE(v6.suspects.size() == 1);
  REQUIRE(v6.suspects[0].kind == "fabric");
}

TEST_CASE("verdict: thresholds from the line rate and from --expect") {
  auto m = clean(4, 10.0, 5.0, 12.5);  // line rate 12.5: 10 GB/s is 80 %
  Thresholds t;
  auto v = judgePath(m, t, Expectations{}, names(4));
  REQUIRE(v.failures.size() == 6);  // every pair below 90 % of 12.5
  REQUIRE(v.failures[0].row.find("line rate") != std::string::npos);
  REQUIRE(v.suspects.empty());       // uniform: nothing stands out
  t.lineRateFloor = 0.75;
  REQUIRE(judgePath(m, t, Expectations{}, names(4)).failures.empty());
  Expectations e;
  e.source = "promise.json";
  e.pairs.push_back({"tcp", std::size_t(1) << 24, 11.0, std::nullopt});
  e.pairs.push_back({"tcp", 8, std::nullopt, 4.0});
  e.pairs.push_back({"mpi", 8, std::nullopt, 0.1});  // another path: ignored here
  auto v2 = judgePath(m, t, e, names(4));
  REQUIRE(v2.failures.size() == 12);  // 6 pairs x (bandwidth, latency)
}

TEST_CASE("retests: slow pairs and pairs below an absolute threshold") {
  auto m = clean(6, 10.0, 5.0, 11.0);  // floor 0.9 x 11 = 9.9 GB/s: the clean pairs (9.8-10.2) straddle it
  Thresholds t;
  auto r = retestPairs(m, t, Expectations{});
  REQUIRE(slowPairs(m, t).empty());
  int wrong = 0, below = 0;
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b) {
      bool want = m.get(m.bw, a, b) < 9.9;
      below += want;
      if (want != (std::find(r.begin(), r.end(), Pair{a, b}) != r.end())) ++wrong;
    }
  REQUIRE(below > 0);
  REQUIRE(wrong == 0);
  m.set(1, 4, 6.0, 5.0, 11.0);  // a slow pair is retested too
  r = retestPairs(m, t, Expectations{});
  REQUIRE(std::find(r.begin(), r.end(), Pair{1, 4}) != r.end());
  Expectations e;
  e.pairs.push_back({"tcp", 8, std::nullopt, 4.0});  // every pair's 5 us latency above 4: all retested
  REQUIRE(retestPairs(clean(6), t, e).size() == 15);
}

TEST_CASE("clean() is what the clean test assumes") {
  auto m = clean(16, 10.0, 5.0, 12.5);
  auto v = judgePath(m, Thresholds{0.75}, Expectations{}, names(16));
  REQUIRE(v.failures.empty());
  REQUIRE(v.bw.median == Approx(10.0).epsilon(0.03));
}

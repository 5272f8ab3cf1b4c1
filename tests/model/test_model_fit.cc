// lib/model's inputs: the fit on exact and disturbed curves, the link spec table with its sources,
// and the cost arithmetic of the price files.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

#include "model/model.h"
#include "model_series.h"

using namespace fb::model;
using Approx = Catch::Detail::Approx;

TEST_CASE("fit recovers alpha and beta of an exact 3-node AllToAll", "[model][fit]") {
  const double a = 5, gbps = 2;  // 5 us per hop, 2 GB/s: 2 hops of S/3
  std::vector<std::pair<std::size_t, double>> pts;
  for (std::size_t b = 3 << 12; b <= (3u << 24); b *= 2) pts.push_back({b, 2 * (a + b / 3.0 * 1e-3 / gbps)});
  auto f = fitSeries(testSeries("alltoall", 3, 3, pts));
  REQUIRE(f.usable);
  REQUIRE(f.segs.size() == 1);
  CHECK(f.segs[0].alphaUs == Approx(a).epsilon(1e-6));
  CHECK(f.segs[0].gbps() == Approx(gbps).epsilon(1e-6));
  CHECK(f.points.front().algo == Algo::kDirect);
}

TEST_CASE("fit recovers per-hop alpha and beta from an exact 2-node curve and projects 4 nodes", "[model][fit]") {
  const double a = 80, gbps = 0.118;  // 80 us per hop, 118 MB/s
  std::vector<std::pair<std::size_t, double>> pts;
  for (std::size_t b = 4096; b <= (64u << 20); b *= 2) pts.push_back({b, 2 * (a + b / 2.0 * 1e-3 / gbps)});
  auto f = fitSeries(testSeries("allreduce", 2, 2, pts));
  REQUIRE(f.usable);
  REQUIRE(f.segs.size() == 1);
  CHECK(f.segs[0].alphaUs == Approx(a).epsilon(1e-6));
  CHECK(f.segs[0].gbps() == Approx(gbps).epsilon(1e-6));
  CHECK(f.maxAbsErrPct < 1e-6);
  // knee: 2 alpha = S b  ->  S = 2 a / b = 2 x 80 / (1e-3 / 0.118) bytes
  CHECK(f.kneeBytes == Approx(2 * a / (1e-3 / gbps)).epsilon(1e-6));
  Inputs in;
  in.inter = linkFromFit(f, "exact");
  CHECK(in.inter->measured);
  // 4 nodes, 16 MiB: 6 hops of 4 MiB
  double S = 16.0 * (1 << 20);
  CHECK(timeOf("allreduce", Algo::kRing, Shape{4, 1, 0}, S, in) == Approx(6 * (a + S / 4 * 1e-3 / gbps)));
}

TEST_CASE("fit finds a regime switch and shrugs off one disturbed size", "[model][fit]") {
  std::vector<std::pair<std::size_t, double>> pts;
  for (std::size_t b = 1024; b <= (64u << 20); b *= 2) {
    bool small = b < (256u << 10);  // e.g. a protocol switch at 256 KiB
    double a = small ? 5 : 40, g = small ? 2.0 : 10.0;
    pts.push_back({b, a + b * 1e-3 / g});  // p2pring: one hop of S
  }
  pts[15].second *= 1.3;  // one batch 30 % slow (a starved CPU)
  auto f = fitSeries(testSeries("p2pring", 2, 2, pts));
  REQUIRE(f.usable);
  REQUIRE(f.segs.size() == 2);
  CHECK(f.segs[0].hi == (128u << 10));
  CHECK(f.segs[1].lo == (256u << 10));
  CHECK(f.segs[0].gbps() == Approx(2.0).epsilon(0.01));
  CHECK(f.segs[1].gbps() == Approx(10.0).epsilon(0.01));
  CHECK(f.segs[1].alphaUs == Approx(40).epsilon(0.05));
  // a size between the segments' measured sizes goes to the nearer one (log scale)
  CHECK(&f.segmentFor(250 << 10) == &f.segs[1]);
  CHECK(&f.segmentFor(140 << 10) == &f.segs[0]);
  CHECK(&f.segmentFor(1e12) == &f.segs[1]);
  // the disturbed point shows its error, the others are exact
  int off = 0;
  for (auto& p : f.points)
    if (std::fabs(p.errPct) > 0.5) ++off;
  CHECK(off == 1);
}

TEST_CASE("fit refuses short, noisy and mixed series", "[model][fit]") {
  auto f = fitSeries(testSeries("allreduce", 2, 2, {{1024, 10}, {2048, 11}, {4096, 12}}));
  CHECK_FALSE(f.usable);
  CHECK(f.why.find("too short") != std::string::npos);
  std::vector<std::pair<std::size_t, double>> noisy;
  double t = 100;
  for (std::size_t b = 1024, i = 0; b <= (1u << 20); b *= 2, ++i) noisy.push_back({b, (i % 2 ? 3.0 : 0.33) * (t += 50)});
  auto g = fitSeries(testSeries("allreduce", 2, 2, noisy));
  CHECK_FALSE(g.usable);
  CHECK(g.why.find("too noisy") != std::string::npos);
  auto h = fitSeries(testSeries("allreduce", 4, 2, {{1024, 10}, {2048, 11}, {4096, 12}, {8192, 13}}));
  CHECK_FALSE(h.usable);
  CHECK(h.why.find("mixes") != std::string::npos);
}

TEST_CASE("specs: table with sources, unknown name is bad input", "[model][spec]") {
  const auto& hdr = findSpec("ib-hdr");
  CHECK(hdr.lineGbps == 25.0);
  CHECK(hdr.source.find("200 Gb/s") != std::string::npos);
  // Every default names a public source: an NVIDIA/nccl or nccl-tests thread, NCCL's own constants, or a
  // published measurement; none says it has none.
  int cited = 0;
  for (auto& s : specTable()) {
    INFO(s.name);
    CHECK(!s.source.empty());
    CHECK(!s.defaultsSource.empty());
    const auto& d = s.defaultsSource;
    bool cites = d.find("NVIDIA/nccl") != std::string::npos || d.find("serverfault.com") != std::string::npos;
    CHECK(cites);
    CHECK(d.find("no public") == std::string::npos);
    CHECK(d.find("(default") == std::string::npos);  // a bare "(default)" in place of a source
    char eff[32];
    std::snprintf(eff, sizeof eff, "efficiency %.2f", s.efficiency);
    CHECK(d.find(eff) == 0);  // the text states the value it sources
    cited += cites;
  }
  CHECK(cited == static_cast<int>(specTable().size()));
  // NCCL's own per-link NVLink figures (src/graph/topo.h) over the 25 / 50 GB/s line, to 2 places.
  CHECK(findSpec("nvlink3-a100").efficiency == Approx(20.0 / 25).margin(0.005));
  CHECK(findSpec("nvlink4-h100").efficiency == Approx(20.6 / 25).margin(0.005));
  CHECK(findSpec("nvlink5-b200").efficiency == Approx(40.1 / 50).margin(0.005));
  // NCCL's PCIe model: 16 lanes x 60 (Gen3) / 80 = 12 GB/s of 15.75.
  CHECK(findSpec("pcie-gen3-x16").efficiency == Approx(12.0 / 15.75).margin(0.005));
  auto l = linkFromSpec(hdr);
  CHECK_FALSE(l.measured);
  CHECK(l.source.find("(default)") != std::string::npos);
  CHECK(l.notes.find("replace with a measurement") != std::string::npos);
  CHECK(l.segs[0].gbps() == Approx(25.0 * 0.96));
  CHECK_THROWS_AS(findSpec("ib-hdrx"), InputError);
  CHECK_THROWS_AS(linkFromSpec(hdr, 1.5), InputError);
}

TEST_CASE("cost arithmetic: single switch and leaf/spine, hand-computed", "[model][cost]") {
  nlohmann::json j = {{"fabrics",
                       {{"hdr",
                         {{"note", "user input"},
                          {"nic", {{"usd", 1000}, {"per_node", 8}}},
                          {"switch", {{"usd", 20000}, {"ports", 40}}},
                          {"cable", {{"usd", 100}}},
                          {"per_gpu_usd", 0}}}}}};
  auto p = parsePrices(j, "t.json").at("hdr");
  // 4 nodes x 8 NICs = 32 ports <= 40: one switch, 32 cables
  auto c = fabricCost(p, 4, 8);
  CHECK(c.leaves == 1);
  CHECK(c.spines == 0);
  CHECK(c.cables == 32);
  CHECK(c.totalUsd == Approx(32 * 1000 + 20000 + 32 * 100));
  CHECK(c.perNodeUsd == Approx((32000 + 20000 + 3200) / 4.0));
  // 64 nodes x 8 = 512 ports: leaves = ceil(512 / 20) = 26, spines = ceil(26 x 20 / 40) = 13,
  // cables = 512 + 26 x 20 = 1032
  auto d = fabricCost(p, 64, 8);
  CHECK(d.leaves == 26);
  CHECK(d.spines == 13);
  CHECK(d.cables == 1032);
  CHECK(d.totalUsd == Approx(512 * 1000 + 39 * 20000 + 1032 * 100));
  // 256 nodes x 8 = 2048 ports: 103 leaves > 40 -> three tiers: 103 aggregation, ceil(103 x 20 / 40) = 52
  // cores, cables 2048 + 103 x 20 x 2 = 6168
  auto t3 = fabricCost(p, 256, 8);
  CHECK(t3.leaves == 103);
  CHECK(t3.spines == 103);
  CHECK(t3.cores == 52);
  CHECK(t3.cables == 6168);
  CHECK(t3.totalUsd == Approx(2048 * 1000 + (103 + 103 + 52) * 20000 + 6168 * 100));
  CHECK_THROWS_AS(fabricCost(p, 100000, 8), InputError);  // 800000 ports > 40^3/4 = 16000
  CHECK_THROWS_AS(fabricCost(p, 0, 8), InputError);
  // bad price files
  auto bad = j;
  bad["fabrics"]["hdr"]["nic"]["usd"] = -5;
  CHECK_THROWS_AS(parsePrices(bad, "t.json"), InputError);
  auto missing = j;
  missing["fabrics"]["hdr"]["switch"].erase("usd");
  CHECK_THROWS_WITH(parsePrices(missing, "t.json"), Catch::Contains("missing 'usd'"));
  auto nocable = j;
  nocable["fabrics"]["hdr"].erase("cable");
  CHECK_THROWS_AS(parsePrices(nocable, "t.json"), InputError);
  CHECK(c.includes.find("fabric only") != std::string::npos);
  CHECK_FALSE(c.wholeCluster);
  // unknown keys are refused, naming the file, the entry and the key
  auto unk = j;
  unk["fabrics"]["hdr"]["optic"] = 3;
  CHECK_THROWS_WITH(parsePrices(unk, "t.json"), Catch::Contains("t.json: fabric 'hdr': unknown key 'optic'"));
  auto unkSub = j;
  unkSub["fabrics"]["hdr"]["cable"]["per_port"] = 1;
  CHECK_THROWS_WITH(parsePrices(unkSub, "t.json"), Catch::Contains("cable: unknown key 'per_port'"));
  auto unkTop = j;
  unkTop["colour"] = "red";
  CHECK_THROWS_WITH(parsePrices(unkTop, "t.json"), Catch::Contains("unknown key 'colour'"));
  // optics per cable, GPUs and nodes: 4 nodes x 8 -> 32 cables x 2 optics x 300 = 19200; 32 GPUs x 25000 =
  // 800000; 4 nodes x 50000 = 200000; whole cluster = 32000 + 20000 + 3200 + 19200 + 800000 + 200000
  auto full = j;
  full["fabrics"]["hdr"]["optics"] = {{"usd", 300}, {"per_cable", 2}};
  full["fabrics"]["hdr"]["per_gpu_usd"] = 25000;
  full["fabrics"]["hdr"]["per_node_usd"] = 50000;
  auto f = fabricCost(parsePrices(full, "t.json").at("hdr"), 4, 8);
  CHECK(f.opticsUsd == Approx(19200));
  CHECK(f.gpuUsd == Approx(800000));
  CHECK(f.nodeUsd == Approx(200000));
  CHECK(f.totalUsd == Approx(32000 + 20000 + 3200 + 19200 + 800000 + 200000));
  CHECK(f.wholeCluster);
  CHECK(f.includes == "NICs, switches, cables, optics, GPUs, nodes (servers without GPUs)");
  auto zeroOptics = full;
  zeroOptics["fabrics"]["hdr"]["optics"]["per_cable"] = 0;
  CHECK_THROWS_WITH(parsePrices(zeroOptics, "t.json"), Catch::Contains("'per_cable' = 0 must be > 0"));
}

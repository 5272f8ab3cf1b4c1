// lib/model's projections: the formulas against hand-computed cases, the bus factors, the
// training step, the algorithm a row names, and the typed ids lib/collectives writes.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "collectives/cuda/cuda_program.h"
#include "collectives/host_algorithms.h"
#include "model/host_choice.h"
#include "model/model.h"
#include "report/series.h"

using namespace fb::model;
using Approx = Catch::Detail::Approx;

namespace {

Link link(double alphaUs, double gbps) {
  Link l;
  l.source = "test";
  Segment s;
  s.lo = 0;
  s.hi = ~std::size_t{0};
  s.alphaUs = alphaUs;
  s.betaUsPerByte = 1e-3 / gbps;
  l.segs.push_back(s);
  return l;
}

}  // namespace

TEST_CASE("ring formulas, hand-computed", "[model][formula]") {
  Inputs in;
  in.inter = link(10, 1.0);  // 10 us per hop, 1 GB/s = 1e-3 us per byte
  Shape sh{4, 1, 0};
  // AllReduce, 4 ranks, 4 MB: 2(n-1) = 6 hops of 1 MB: 6 x (10 + 1000) = 6060 us
  CHECK(timeOf("allreduce", Algo::kRing, sh, 4e6, in) == Approx(6060));
  // AllGather / ReduceScatter: 3 hops of 1 MB = 3030 us
  CHECK(timeOf("allgather", Algo::kRing, sh, 4e6, in) == Approx(3030));
  CHECK(timeOf("reducescatter", Algo::kRing, sh, 4e6, in) == Approx(3030));
  // P2P ring: one hop of S = 10 + 4000
  CHECK(timeOf("p2pring", Algo::kRing, sh, 4e6, in) == Approx(4010));
  // busbw of the projected ring AllReduce = link rate when alpha = 0
  in.inter = link(0, 1.0);
  auto p = project("allreduce", sh, 4e6, in, Algo::kRing);
  CHECK(p.busbwGBps == Approx(1.0));
  CHECK(p.algbwGBps == Approx(4e6 / 6000 / 1e3));
}

TEST_CASE("tree and host algorithms, hand-computed", "[model][formula]") {
  Inputs in;
  in.inter = link(10, 1.0);
  // Tree AllReduce on 8 nodes x 1: 2 x ceil(log2 8) = 6 hops, bandwidth term 2 S b: 60 + 2 x 8000 = 16060
  CHECK(timeOf("allreduce", Algo::kTree, Shape{8, 1, 0}, 8e6, in) == Approx(16060));
  // 5 nodes: ceil(log2 5) = 3 -> same latency, 2 S b
  CHECK(timeOf("allreduce", Algo::kTree, Shape{5, 1, 0}, 8e6, in) == Approx(60 + 16000));
  // Recursive doubling, 8 ranks: 3 hops of S = 3 x (10 + 8000)
  CHECK(timeOf("allreduce", Algo::kRecDoubling, Shape{8, 1, 0}, 8e6, in) == Approx(3 * 8010));
  // 6 ranks (not a power of 2): floor(log2 6) = 2 hops + 2 extra hops of S
  CHECK(timeOf("allreduce", Algo::kRecDoubling, Shape{6, 1, 0}, 8e6, in) == Approx(4 * 8010));
  // Rabenseifner, 8 ranks: hops of S/2, S/4, S/8 twice = 6 x 10 + 2 x 7e6 x 1e-3
  CHECK(timeOf("allreduce", Algo::kRabenseifner, Shape{8, 1, 0}, 8e6, in) == Approx(60 + 14000));
  // Bruck AllGather, 5 ranks: rounds of 1, 2, 1 blocks of S/5: 3 x 10 + 4/5 x 8000
  CHECK(timeOf("allgather", Algo::kBruck, Shape{5, 1, 0}, 8e6, in) == Approx(30 + 6400));
  // Recursive halving ReduceScatter, 4 ranks: S/2 + S/4
  CHECK(timeOf("reducescatter", Algo::kRecHalving, Shape{4, 1, 0}, 8e6, in) == Approx(20 + 6000));
  // One-shot, 4 ranks: one hop of 3 S
  CHECK(timeOf("allreduce", Algo::kOneShot, Shape{1, 4, 0}, 1e6, Inputs{link(10, 1.0), std::nullopt}) ==
        Approx(10 + 3000));
  CHECK_THROWS_AS(phases("allgather", Algo::kTree, Shape{4, 1, 0}, 1e6), InputError);
  CHECK_THROWS_AS(phases("allreduce", Algo::kHier, Shape{4, 1, 0}, 1e6), InputError);
}

TEST_CASE("hierarchical and two-level ring, hand-computed", "[model][formula]") {
  Inputs in;
  in.intra = link(2, 100.0);  // 1e-5 us per byte
  in.inter = link(10, 10.0);  // 1e-4 us per byte
  // 4 nodes x 8 GPUs, 8 NICs (rails), AllReduce of 3.2e7 bytes, hierarchical:
  //   intra RS: 7 hops of S/8 = 4e6 B: 7 x (2 + 40) = 294
  //   inter AR per rail: 2 x 3 = 6 hops of S/32 = 1e6 B, G/R = 1: 6 x (10 + 100) = 660
  //   intra AG: 294        total 1248
  Shape sh{4, 8, 8};
  CHECK(timeOf("allreduce", Algo::kHier, sh, 3.2e7, in) == Approx(1248));
  // one NIC per node: the 8 rails share it: inter hops cost 10 + 8 x 100 = 810 -> 6 x 810 + 588
  CHECK(timeOf("allreduce", Algo::kHier, Shape{4, 8, 1}, 3.2e7, in) == Approx(588 + 6 * 810));
  // flat ring over 32 ranks, 8 rails, step-synchronous (host rings): each step = max(intra 2 + 1e6 x 1e-5,
  //   inter 10 + 1e6/8 x 1e-4) = max(12, 22.5) = 22.5; 62 steps -> 1395
  in.pipelined = false;
  CHECK(timeOf("allreduce", Algo::kRing, sh, 3.2e7, in) == Approx(62 * 22.5));
  // pipelined (NCCL): latency 2(32-1) - 2(4-1) = 56 intra hops x 2 + 6 network hops x 10 = 172, bandwidth
  //   62 x max(1e6 x 1e-5, 1e6/8 x 1e-4) = 62 x 12.5 = 775 -> 947
  in.pipelined = true;
  CHECK(timeOf("allreduce", Algo::kRing, sh, 3.2e7, in) == Approx(172 + 775));
  // tree: 2 x ((G-1) + ceil(log2 N)) = 18 hops carrying 2 S in total (chunk 2S/18 = 3.556e6 B): latency
  //   14 intra x 2 + 4 network x 10 = 68; bandwidth 18 x max(3.556e6 x 1e-5, 3.556e6 / 8 x 1e-4) = 800 -> 868
  CHECK(timeOf("allreduce", Algo::kTree, sh, 3.2e7, in) == Approx(68 + 800));
  // project() picks the fastest (tree 868 < ring 947 < hier 1248) and names every candidate
  auto p = project("allreduce", sh, 3.2e7, in);
  CHECK(p.algo == Algo::kTree);
  CHECK(p.timeUs == Approx(868));
  REQUIRE(p.candidates.size() == 3);
  CHECK(p.candidates[0].first == Algo::kRing);
  CHECK(p.candidates[1].first == Algo::kTree);
  // AllGather hierarchical: inter 3 hops of 1e6 (330) + intra 7 hops of 4e6 (294)
  CHECK(timeOf("allgather", Algo::kHier, sh, 3.2e7, in) == Approx(330 + 294));
  // small sizes: tree wins on 64 nodes (latency 2(7 + 6) hops vs 2 x 511 for the ring)
  auto small = project("allreduce", Shape{64, 8, 8}, 8192, in);
  CHECK(small.algo == Algo::kTree);
  // missing links and bad shapes are bad input
  Inputs onlyInter;
  onlyInter.inter = link(10, 10);
  CHECK_THROWS_AS(timeOf("allreduce", Algo::kRing, sh, 1e6, onlyInter), InputError);
  CHECK_THROWS_AS(project("allreduce", Shape{0, 1, 0}, 1e6, in), InputError);
}

TEST_CASE("alltoall and broadcast in the host model, hand-computed", "[model][formula]") {
  Inputs in;
  in.inter = link(10, 1.0);  // 10 us per hop, 1e-3 us per byte
  Shape sh{4, 1, 0};
  // AllToAll, 4 ranks, pairwise: 3 hops of S/4 = 1e6 B: 3 x (10 + 1000) = 3030 us
  CHECK(timeOf("alltoall", Algo::kDirect, sh, 4e6, in) == Approx(3030));
  auto a2a = project("alltoall", sh, 4e6, in);
  CHECK(a2a.algo == Algo::kDirect);
  REQUIRE(a2a.candidates.size() == 1);
  // busbw = algbw x (n-1)/n: 4e6 B / 3030 us = 1.3201 GB/s x 0.75
  CHECK(a2a.busbwGBps == Approx(4e6 / 3030 / 1e3 * 0.75));
  // 2 nodes x 4 ranks, one NIC, step-synchronous: 7 steps of S/8 = 1e6 B; the 4 ranks of a node share
  // the NIC: each step max(intra 2 + 1e6 x 1e-5, inter 10 + 4 x 1e6 x 1e-3) = 4010 -> 28070 us
  Inputs two = in;
  two.intra = link(2, 100.0);
  two.pipelined = false;
  CHECK(timeOf("alltoall", Algo::kDirect, Shape{2, 4, 1}, 8e6, two) == Approx(7 * 4010));
  // Broadcast, 4 ranks, 4 MiB: a chain of P = 4 pieces of 1 MiB: P + n - 2 = 6 hops of 1048576 B
  CHECK(timeOf("broadcast", Algo::kRing, sh, 4194304, in) == Approx(6 * (10 + 1048.576)));
  // 1000 B: one piece, 3 hops of 1000 B = 3 x (10 + 1) = 33 us
  CHECK(timeOf("broadcast", Algo::kRing, sh, 1000, in) == Approx(33));
  auto bc = project("broadcast", sh, 4194304, in);
  CHECK(bc.algo == Algo::kRing);
  CHECK(bc.busbwGBps == Approx(bc.algbwGBps));  // busbw factor 1
  // rows that name no algorithm: the first row of the table implementing the collective
  CHECK(defaultAlgo("alltoall") == Algo::kDirect);
  CHECK(defaultAlgo("broadcast") == Algo::kRing);
  CHECK(defaultAlgo("allgather") == Algo::kRing);
  CHECK_THROWS_AS(phases("alltoall", Algo::kRing, sh, 1e6), InputError);
  CHECK_THROWS_AS(phases("broadcast", Algo::kTree, sh, 1e6), InputError);
  CHECK_THROWS_AS(phases("gather", Algo::kRing, sh, 1e6), InputError);
}

TEST_CASE("bus factors come from the collective descriptors", "[model][formula]") {
  for (auto k : fb::allCollKinds()) {
    const std::string name(fb::collName(k));
    for (int n : {1, 2, 3, 8, 64}) {
      INFO(name << " n=" << n);
      CHECK(busbwFactor(name, n) == Approx(fb::describe(k).busBwFactor(n)));
    }
  }
  // hand-computed: nccl-tests PERFORMANCE.md
  CHECK(busbwFactor("allreduce", 8) == Approx(1.75));
  CHECK(busbwFactor("allgather", 8) == Approx(0.875));
  CHECK(busbwFactor("alltoall", 4) == Approx(0.75));
  CHECK(busbwFactor("broadcast", 4) == Approx(1));
  CHECK(busbwFactor("allreduce", 1) == Approx(0));
  CHECK(busbwFactor("p2pring", 1) == Approx(1));
  CHECK_THROWS_AS(busbwFactor("gather", 4), InputError);
}

TEST_CASE("training step: buckets, exposed communication, hand-computed", "[model][train]") {
  Inputs in;
  in.inter = link(0, 10.0);
  in.intra = link(0, 100.0);
  TrainModel m;
  m.params = 1e9;
  m.gradBytesPerParam = 2;
  m.tp = 1;
  m.bucketBytes = 3e8;  // 2e9 B of gradients -> 7 buckets, the last 2e8
  m.computeMs = 1000;
  m.overlap = 0.5;
  Shape cl{2, 1, 0};
  auto e = trainingStep(m, cl, in);
  CHECK(e.gradBytesPerRank == Approx(2e9));
  CHECK(e.buckets == 7);
  CHECK(e.lastBucketBytes == Approx(2e8));
  // 2 ranks ring AllReduce of B bytes with alpha 0: 2 hops of B/2 at 1e-4 us/B = B x 1e-4 us
  double commUs = 6 * 3e8 * 1e-4 + 2e8 * 1e-4;
  CHECK(e.commMs == Approx(commUs / 1e3));
  CHECK(e.exposedMs == Approx(commUs / 1e3 / 2));
  CHECK(e.stepMs == Approx(1000 + commUs / 1e3 / 2));
  // tensor parallel 2 inside an 8-GPU node: each DP group has 4 ranks per node, half the NICs
  m.tp = 2;
  auto t = trainingStep(m, Shape{2, 8, 8}, in);
  CHECK(t.gradBytesPerRank == Approx(1e9));
  CHECK(t.dpShape.perNode == 4);
  CHECK(t.dpShape.nics() == Approx(4));
  m.tp = 3;
  CHECK_THROWS_AS(trainingStep(m, Shape{2, 8, 8}, in), InputError);
}

TEST_CASE("algorithm named by the row", "[model][algo]") {
  fb::Sample s;
  CHECK_FALSE(algoOfRow(s).has_value());
  s.extra = {{"algorithm", "ring (pull from left neighbour, 2 steps, 64 blocks)"}};
  CHECK(*algoOfRow(s) == Algo::kRing);
  s.extra = {{"algorithm", "one-shot LL (8 B + flags in 16 B lines pushed to peers, local sum)"}};
  CHECK(*algoOfRow(s) == Algo::kOneShot);
  s.extra = {{"algorithm", "Rabenseifner (recursive halving + doubling)"}};
  CHECK(*algoOfRow(s) == Algo::kRabenseifner);
  s.extra = {{"algorithm", "recursive doubling"}};
  CHECK(*algoOfRow(s) == Algo::kRecDoubling);
  s.extra = {{"algorithm", "Bruck"}};
  CHECK(*algoOfRow(s) == Algo::kBruck);
  s.extra = {{"algorithm", "recursive-halving"}};
  CHECK(*algoOfRow(s) == Algo::kRecHalving);
  s.extra = {{"algorithm", "pairwise"}};
  CHECK(*algoOfRow(s) == Algo::kDirect);
  // a name inside other text is not a name: the row's text starts with it or names none
  s.extra = {{"algorithm", "nvls_tree"}};
  CHECK_FALSE(algoOfRow(s).has_value());
  s.extra = {{"algorithm", "ringleader"}};
  CHECK_FALSE(algoOfRow(s).has_value());
  CHECK_THROWS_AS(parseAlgo("butterfly"), InputError);
  // every row of the table: its name and aliases parse back to it
  for (const auto& d : algoTable()) {
    CHECK(parseAlgo(std::string(d.name)) == d.id);
    CHECK(algoName(d.id) == d.name);
    for (auto al : d.aliases) CHECK(parseAlgo(std::string(al)) == d.id);
  }
}

TEST_CASE("typed model_algo: read exactly, before the free text", "[model][algo]") {
  fb::Sample s;
  s.coll = "allreduce";
  s.impl = "tcp";
  s.path = "tcp lo";
  s.bytes = 4096;
  // the typed key wins over text that names another algorithm, wherever it stands
  s.extra = {{"algorithm", "ring (misleading)"}, {"model_algo", "recursive-doubling"}};
  CHECK(*algoOfRow(s) == Algo::kRecDoubling);
  s.extra = {{"model_algo", "hier"}, {"algorithm", "rabenseifner"}};
  CHECK(*algoOfRow(s) == Algo::kHier);
  s.extra = {{"model_algo", "one-shot"}, {"algo", "Ring"}};
  CHECK(*algoOfRow(s) == Algo::kOneShot);
  // exact, not a prefix: an unknown id (or trailing text) is refused with the row named, not read as text
  for (const char* bad : {"butterfly", "ring (pull)", ""}) {
    s.extra = {{"algorithm", "ring"}, {"model_algo", bad}};
    std::string what;
    try {
      algoOfRow(s);
    } catch (const InputError& e) {
      what = e.what();
    }
    INFO(what);
    CHECK(what.find(std::string("model_algo: unknown algorithm '") + bad + "'") != std::string::npos);
    CHECK(what.find("allreduce tcp/tcp lo [out] row of 4096 B") != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
  }
  // rows without it still read their text by prefix
  s.extra = {{"algorithm", "hierarchical (rabenseifner)"}};
  CHECK(*algoOfRow(s) == Algo::kHier);

  // a fit takes each row's typed id: 6 rows say recursive doubling in model_algo and ring in the text
  fb::Series ser;
  ser.coll = "allreduce";
  ser.impl = "tcp";
  ser.path = "tcp lo";
  ser.nRanks = 4;
  ser.nNodes = 1;
  for (std::size_t b = 4096; b <= (4096u << 5); b *= 2) {
    fb::Sample r = s;
    r.bytes = b;
    r.nRanks = 4;
    r.timeUs = 20 + 2e-3 * static_cast<double>(b);
    r.extra = {{"algorithm", "ring"}, {"model_algo", "recursive-doubling"}};
    ser.rows.push_back(r);
  }
  auto f = fitSeries(ser);
  REQUIRE(f.points.size() == 6);
  int rd = 0;
  for (const auto& p : f.points) rd += p.algo == Algo::kRecDoubling;
  CHECK(rd == 6);
  // one row with an unknown id: the fit refuses the series (a broken file), it does not just skip it
  ser.rows[3].extra = {{"model_algo", "butterfly"}};
  CHECK_THROWS_AS(fitSeries(ser), InputError);
  FitOptions forced;
  forced.forceAlgo = Algo::kRing;  // --algo: rows are not read
  CHECK(fitSeries(ser, forced).points.size() == 6);
}

// lib/collectives does not depend on lib/model: each side names the algorithm on its own, and this
// test fails when either renames one.
TEST_CASE("typed ids of the host algorithms and cuda programs parse to the model's algorithms", "[model][algo]") {

  // every choice the host ring collective (ring.cc: AllReduce, AllGather, ReduceScatter, P2P ring) can
  // make on 2 nodes x 2 ranks: each flat algorithm, hierarchical with each inner one
  const fb::HostPlacement p{{0, 0, 1, 1}, 4};
  std::set<fb::HostAlgo> seen;
  int choices = 0;
  for (auto k : {fb::CollKind::kAllReduce, fb::CollKind::kAllGather, fb::CollKind::kReduceScatter, fb::CollKind::kP2PRing})
    for (const auto& c : fb::hostCandidates(k, p)) {
      const std::string id(fb::hostModelAlgo(c));
      INFO(fb::collName(k) << " " << fb::hostChoiceName(c) << " -> " << id);
      const Algo a = parseAlgo(id);
      CHECK(a == modelAlgo(c.algo));  // the algorithm hostTime costs for this choice
      CHECK(algoName(a) == id);  // the canonical name, not an alias
      CHECK_NOTHROW(phases(std::string(fb::collName(k)), a, Shape{2, 2}, 1 << 20));
      seen.insert(c.algo);
      ++choices;
    }
  CHECK(seen.size() == 6);  // every HostAlgo value
  CHECK(choices == 13);     // AllReduce 3 flat + 3 hierarchical, AllGather 2 + 1, ReduceScatter 2 + 1, P2P ring 1
  // every cuda program on every collective it runs (the one-shot programs: AllReduce only)
  int programs = 0;
  for (auto prog : fb::cudaipc::kCudaPrograms)
    for (auto k : fb::allCollKinds()) {
      if (prog != fb::cudaipc::CudaProgram::kRing && k != fb::CollKind::kAllReduce) continue;
      const std::string id(fb::cudaipc::cudaModelAlgo(prog, k));
      INFO(fb::collName(k) << " program " << static_cast<int>(prog) << " -> " << id);
      const Algo a = parseAlgo(id);
      const Algo want = prog != fb::cudaipc::CudaProgram::kRing ? Algo::kOneShot
                        : k == fb::CollKind::kAllToAll          ? Algo::kDirect
                                                                : Algo::kRing;
      CHECK(a == want);
      CHECK(algoName(a) == id);
      CHECK_NOTHROW(phases(std::string(fb::collName(k)), a, Shape{1, 4}, 1 << 20));
      ++programs;
    }
  CHECK(programs == 8);  // ring x 6 collectives, one-shot and one-shot LL x AllReduce
}

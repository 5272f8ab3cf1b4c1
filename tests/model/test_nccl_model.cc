// lib/model/nccl: NCCL's algorithms and protocols against hand-computed cases (tuning.cc latencies,
// the bandwidth of each algorithm on a given machine), the choice, forcing, and the calibration
// recovering a machine from curves it generated.
#include <catch2/catch.hpp>

#include <cmath>

#include "collectives/spec.h"
#include "model/nccl.h"

using namespace fb::model;
using Approx = Catch::Detail::Approx;

namespace {
NcclMachine h100(int N, int G) {
  NcclMachine m;
  m.nodes = N;
  m.gpusPerNode = G;
  m.nicGBps = 48;
  m.ringIntraGBps = 360;
  m.nvlsGBps = 480;
  return m;
}
// A run on one node of `truth`'s shape with G GPUs: its model time at every power of two from `from` to `to`.
NcclRun synthetic(const std::string& coll, int G, const NcclMachine& truth, double from, double to, NcclForce force = {}) {
  NcclRun r;
  r.coll = coll;
  r.label = "1x" + std::to_string(G) + " " + coll;
  r.gpusPerNode = G;
  r.force = force;
  for (double S = from; S <= to; S *= 2) r.rows.push_back({S, ncclChoose(coll, truth, S, force).best.timeUs, 0});
  return r;
}
double t(const std::string& c, NcclAlgo a, NcclProto p, const NcclMachine& m, double S) {
  auto x = ncclCost(c, a, p, m, S);
  REQUIRE(x);
  return x->timeUs;
}
}  // namespace

TEST_CASE("nccl ring: tuning.cc latency and the NICs' bandwidth", "[nccl]") {
  auto m = h100(2, 8);  // 16 ranks, AllReduce: 30 steps, 2 of them between nodes
  const double S = 1 << 30, f = 2.0 * 15 / 16;
  // Simple: 8.4 + 28 x 3.4 + 2 x 14 = 131.6 us; bandwidth min(360, 8 x 48 = 384) = 360
  CHECK(t("allreduce", NcclAlgo::kRing, NcclProto::kSimple, m, S) == Approx(131.6 + S * f / 360e3));
  // LL: 6.6 + 28 x 1.0 (the network overhead, above LL's 0.6 us NVLink hop) + 2 x 2.7 = 40 us; 360 x 0.5 = 180
  // (NCCL >= 2.21), capped at llMaxBw 39 on 2 nodes
  CHECK(t("allreduce", NcclAlgo::kRing, NcclProto::kLL, m, S) == Approx(40 + S * f / 39e3));
  // one node: 180 capped at 141 (Hopper); before 2.21 360 / 4 = 90
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL, h100(1, 8), S)->busbwGBps == Approx(141));
  auto old = h100(1, 8);
  old.ncclVersion = 21803;
  old.ringIntraGBps = 240;  // 240 / 4 = 60, below 2.18-2.20's Hopper one-node llMaxBw of 87.7
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL, old, S)->busbwGBps == Approx(60));
  old.ringIntraGBps = 360;  // 90 capped at 87.7
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL, old, S)->busbwGBps == Approx(87.7));
  // more than 2 nodes: 20.4
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL, h100(4, 8), S)->busbwGBps == Approx(20.4));
  // one node, AllGather, before 2.21: / 3
  auto old1 = h100(1, 8);
  old1.ncclVersion = 21803;
  old1.ringIntraGBps = 240;  // 240 / 3 = 80
  CHECK(ncclCost("allgather", NcclAlgo::kRing, NcclProto::kLL, old1, S)->busbwGBps == Approx(80));
  // LL128: 14 + 28 x 1.9 + 2 x 4 = 75.2 us; 360 x 0.92
  CHECK(t("allreduce", NcclAlgo::kRing, NcclProto::kLL128, m, S) == Approx(75.2 + S * f / (360 * 0.92e3)));
  // AllGather: 15 steps, 1 between nodes: 8.4 + 14 x 3.4 + 14 = 70 us; factor 15/16
  CHECK(t("allgather", NcclAlgo::kRing, NcclProto::kSimple, m, S) == Approx(70 + S * (15.0 / 16) / 360e3));
  // 4 nodes, NICs the bottleneck when the node's ring is faster: min(500, 384)
  auto m4 = h100(4, 8);
  m4.ringIntraGBps = 500;
  auto c = ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kSimple, m4, S);
  CHECK(c->busbwGBps == Approx(384));
  // one node: the node's ring, NVLink hops only: 8.4 + 14 x 3.4
  CHECK(t("allreduce", NcclAlgo::kRing, NcclProto::kSimple, h100(1, 8), S) == Approx(8.4 + 14 * 3.4 + S * 1.75 / 360e3));
}

TEST_CASE("nccl tree and NVLSTree: busbw above line rate on 2 nodes follows from the algorithm", "[nccl]") {
  auto m = h100(2, 8);
  m.ringIntraGBps = 1000;
  m.nvlsGBps = 1000;
  const double f = 2.0 * 15 / 16;
  // 2 nodes: 2 tree edges per node: busbw = 8 x 48 x f x 2 / 2 = 720 GB/s, above the NICs' 384,
  // times tuning.cc's 0.92 for Tree AllReduce = 662.4
  auto tr = ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kSimple, m, 1e9);
  CHECK(tr->busbwGBps == Approx(384 * f * 0.92));
  // latency 8.4 + 2 (7 x 4 + 1 x 14) = 92.4 us
  CHECK(tr->latUs == Approx(92.4));
  // 8 nodes: 4 edges: 384 x f' x 2 / 4 x 0.92, f' = 2 x 63 / 64; latency 8.4 + 2 (7 x 4 + 3 x 14) = 148.4
  auto m8 = m;
  m8.nodes = 8;
  auto t8 = ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kSimple, m8, 1e9);
  CHECK(t8->busbwGBps == Approx(384 * (2.0 * 63 / 64) / 2 * 0.92));
  CHECK(t8->latUs == Approx(148.4));
  // NCCL 2.19-2.22's tuning.cc: Tree Simple at 28 us a hop (NVLink, PCI, network): 8.4 + 2 (7 x 28 + 1 x 28)
  // = 456.4 us; 2.23 went back to 4 / 14 (92.4 above), and LL128 is the same in every release: 14 + 2 (7 x 1.25
  // + 1 x 8.5) = 48.5
  auto v22 = m;
  v22.ncclVersion = 22203;
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kSimple, v22, 1e9)->latUs == Approx(456.4));
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kLL128, v22, 1e9)->latUs == Approx(48.5));
  v22.ncclVersion = 21903;
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kSimple, v22, 1e9)->latUs == Approx(456.4));
  v22.ncclVersion = 22304;
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kSimple, v22, 1e9)->latUs == Approx(92.4));
  v22.ncclVersion = 21803;  // 2.18's own table (base 0, PCI 6) is not modelled: taken as 2.23's
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kSimple, v22, 1e9)->latUs == Approx(92.4));
  // NVLSTree capped by NVLS: 2 x (25 + 1 x 14) = 78 us
  m.nvlsGBps = 470;
  auto nt = ncclCost("allreduce", NcclAlgo::kNvlsTree, NcclProto::kSimple, m, 1e9);
  CHECK(nt->busbwGBps == Approx(470));
  CHECK(nt->latUs == Approx(78));
  // protocols: tree LL = / 3.8 capped at llMaxBw (39 on 2 nodes), LL128 = x 120/128 on more than one node
  // (each after the x 0.92)
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kLL, m, 1e9)->busbwGBps == Approx(39));
  m.ringIntraGBps = 100;  // below the cap: 100 x 0.92 / 3.8
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kLL, m, 1e9)->busbwGBps == Approx(100 * 0.92 / 3.8));
  m.ringIntraGBps = 1000;
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kLL128, m, 1e9)->busbwGBps ==
        Approx(std::min(1000.0, 384 * f) * 0.92 * 120 / 128));
  // LL128 efficiency per algorithm, as tuning.cc gives LL128 its own factor and per-channel cap on rings and
  // trees: the tree's is effTreeLL128 alone. f = 1.875: min(1000, 384 x 1.875 = 720) x 0.92 x 120/128 x 0.8 =
  // 496.8 GB/s; the ring's 1000 x 0.92 x 0.5 = 460, capped by the NICs first: min(1000, 384) x 0.92 x 0.5 = 176.64
  auto eff = m;
  eff.effTreeLL128 = 0.8;
  eff.effLL128 = 0.5;
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kLL128, eff, 1e9)->busbwGBps == Approx(496.8));
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL128, eff, 1e9)->busbwGBps == Approx(176.64));
  // NVLS and NVLSTree are Simple only; NVLS only on one node
  CHECK_FALSE(ncclCost("allreduce", NcclAlgo::kNvlsTree, NcclProto::kLL, m, 1e9));
  CHECK_FALSE(ncclCost("allreduce", NcclAlgo::kNvls, NcclProto::kSimple, m, 1e9));
  auto one = h100(1, 8);
  auto nv = ncclCost("allreduce", NcclAlgo::kNvls, NcclProto::kSimple, one, 1e9);
  CHECK(nv->busbwGBps == Approx(480));
  CHECK(nv->latUs == Approx(25));
}

TEST_CASE("nccl tree: tuning.cc's correction factor at medium sizes", "[nccl]") {
  auto m = h100(2, 8);
  const double f = 2.0 * 15 / 16;
  // 1 MiB: log2(2^20 / 64) = 14 -> Simple 0.5, LL128 0.6, LL 0.5; 1 GB: 1 (above 128 MiB)
  auto big = ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kSimple, m, 1e9)->busbwGBps;
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kSimple, m, 1 << 20)->busbwGBps == Approx(0.5 * big));
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kLL128, m, 1 << 20)->busbwGBps ==
        Approx(0.6 * std::min(360.0, 384 * f) * 0.92 * 120 / 128));
  // 8 MiB: log2(2^23 / 64) = 17 -> Simple 0.8, LL128 0.9; 256 MiB: index 22 -> Simple 0.9 (tuning.cc 2.18-2.29)
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kSimple, m, 8 << 20)->busbwGBps == Approx(0.8 * big));
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kLL128, m, 8 << 20)->busbwGBps ==
        Approx(0.9 * std::min(360.0, 384 * f) * 0.92 * 120 / 128));
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kSimple, m, 256 << 20)->busbwGBps == Approx(0.9 * big));
  // NVLSTree is not corrected
  CHECK(ncclCost("allreduce", NcclAlgo::kNvlsTree, NcclProto::kSimple, m, 1 << 20)->busbwGBps == Approx(480));
}

TEST_CASE("nccl CollNet, PAT and P2P", "[nccl]") {
  auto m = h100(4, 8);
  CHECK_FALSE(ncclCost("allreduce", NcclAlgo::kCollNetDirect, NcclProto::kSimple, m, 1e9));  // no SHARP
  m.collNet = true;
  m.nvlsGBps = 2000;
  m.ringIntraGBps = 2000;
  const double f = 2.0 * 31 / 32;
  CHECK(ncclCost("allreduce", NcclAlgo::kCollNetDirect, NcclProto::kSimple, m, 1e9)->busbwGBps == Approx(384 * f));
  // CollNetDirect latency (tuning.cc): 2 (min(1, G - 1) x 3.7 + (G - 1) x 0.4) + 31 = 2 (3.7 + 2.8) + 31 = 44 us on 8 GPUs.
  CHECK(ncclCost("allreduce", NcclAlgo::kCollNetDirect, NcclProto::kSimple, m, 1e9)->latUs == Approx(44.0));
  // CollNetChain (nccl.cc: bw = min(NVLS, else the ring, R x NIC x f); lat = tuning.cc's 2 (G - 1) intra hops + one
  // network hop, its CollNetChain Simple rows: 2.8 us over NVLink, 30 us over the network, base 0). 4 x 8, 1e9 B,
  // f = 2 x 31/32: lat = 2 x 7 x 2.8 + 30 = 69.2 us; NICs 8 x min(line 50, 48 x 2 / 2) = 384, x f = 744 GB/s below
  // NVLS 2000: t = 69.2 + 1e9 x 1.9375 / 744e3 = 69.2 + 2604.17 = 2673.37 us.
  auto chain = ncclCost("allreduce", NcclAlgo::kCollNetChain, NcclProto::kSimple, m, 1e9);
  REQUIRE(chain);
  CHECK(chain->latUs == Approx(69.2));
  CHECK(chain->busbwGBps == Approx(744));
  CHECK(chain->timeUs == Approx(69.2 + 1e9 * f / 744e3));
  CHECK(chain->timeUs == Approx(2673.37).margin(0.01));
  // No NVLS: the chain inside the node runs at the node's ring, 360 < 744: t = 69.2 + 1e9 x 1.9375 / 360e3 = 5451.14 us.
  auto noNvls = h100(4, 8);
  noNvls.collNet = true;
  noNvls.nvlsGBps = 0;
  CHECK(t("allreduce", NcclAlgo::kCollNetChain, NcclProto::kSimple, noNvls, 1e9) == Approx(5451.14).margin(0.01));
  // Simple only (tuning.cc: "Not used" for LL/LL128), more than one node, SHARP only.
  CHECK_FALSE(ncclCost("allreduce", NcclAlgo::kCollNetChain, NcclProto::kLL, m, 1e9));
  CHECK_FALSE(ncclCost("allreduce", NcclAlgo::kCollNetChain, NcclProto::kLL128, m, 1e9));
  auto one = h100(1, 8);
  one.collNet = true;
  CHECK_FALSE(ncclCost("allreduce", NcclAlgo::kCollNetChain, NcclProto::kSimple, one, 1e9));
  CHECK_FALSE(ncclCost("allreduce", NcclAlgo::kCollNetChain, NcclProto::kSimple, h100(4, 8), 1e9));
  // PAT: one rank per node only; tuning.cc 2.23+: latency 8 + log2(8) x 14 / 3.5 + 8 x 2.8 = 42.4 us,
  // busbw 48 x 0.75 = 36 (2.24+), 48 x 0.85 = 40.8 in 2.23, none before 2.23
  auto p1 = h100(8, 1);
  CHECK_FALSE(ncclCost("allgather", NcclAlgo::kPat, NcclProto::kSimple, m, 1e9));
  auto pat = ncclCost("allgather", NcclAlgo::kPat, NcclProto::kSimple, p1, 1e9);
  CHECK(pat->latUs == Approx(42.4));
  CHECK(pat->busbwGBps == Approx(36));
  CHECK(ncclCost("reducescatter", NcclAlgo::kPat, NcclProto::kSimple, p1, 1e9)->timeUs ==
        Approx(42.4 + 1e9 * (7.0 / 8) / 36e3));
  // 1024 nodes: 8 + 10 x 4 + 2867.2 = 2915.2 us, the linear part dominating
  CHECK(ncclCost("allgather", NcclAlgo::kPat, NcclProto::kSimple, h100(1024, 1), 1e9)->latUs == Approx(2915.2));
  p1.ncclVersion = 22304;
  CHECK(ncclCost("allgather", NcclAlgo::kPat, NcclProto::kSimple, p1, 1e9)->busbwGBps == Approx(40.8));
  p1.ncclVersion = 22203;
  CHECK_FALSE(ncclCost("allgather", NcclAlgo::kPat, NcclProto::kSimple, p1, 1e9));
  // AllToAll, 2 nodes x 8: per node 8 S (8/16) leaves over 8 NICs. Each GPU has 8 remote peers x 2 channels:
  // 16 channels per NIC, so the NIC runs at its line rate 48 x 50/48 = 50: busbw = 8 x 50 x 15 / (8 x 8) = 93.75
  auto a = ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, h100(2, 8), 1e9);
  CHECK(a->busbwGBps == Approx(93.75));
  // 2 x 2: 2 remote peers x 2 channels x 2 GPUs / 2 NICs = 4 channels per NIC, line 50: 2 x 50 x 3 / (2 x 2) = 75
  CHECK(ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, h100(2, 2), 1e9)->busbwGBps == Approx(75));
  // 2 x 1: one remote peer, 2 channels: the 2-channel rate 48: 1 x 48 x 1 / (1 x 1) = 48
  // (and the CTAs' warps: with the self copy beside the peer, 8 x p2pWarpGBps; a faster warp leaves the NIC's)
  auto a1 = h100(2, 1);
  a1.p2pWarpGBps = 10;
  CHECK(ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, a1, 1e9)->busbwGBps == Approx(48));
  CHECK(ncclCost("sendrecv", NcclAlgo::kP2p, NcclProto::kSimple, h100(2, 1), 1e9)->busbwGBps == Approx(48));
  // SendRecv on 2 x 8: one peer per GPU, 2 channels on its NIC: 48, not the line rate
  CHECK(ncclCost("sendrecv", NcclAlgo::kP2p, NcclProto::kSimple, h100(2, 8), 1e9)->busbwGBps == Approx(48));
  // an explicit line rate: 2 x 8 AllToAll at 60 a NIC: 8 x 60 x 15 / 64 = 112.5; a line of 45, below the
  // 2-channel rate, is taken as 48: 90
  auto l = h100(2, 8);
  l.nicLineGBps = 60;
  CHECK(ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, l, 1e9)->busbwGBps == Approx(112.5));
  l.nicLineGBps = 45;
  CHECK(ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, l, 1e9)->busbwGBps == Approx(90));
}

TEST_CASE("nccl P2P across nodes: a batch's works split the CTA's warps (sendrecv.h)", "[nccl]") {
  // 2 x 1 AllToAll, 2 p2p channels (2 coll channels on one NIC), one warp at 5 GB/s. Round 0 (self copy) starts
  // at channel 0, round 1 (the peer) at reverseBits(1, 1) = 1: both ops on both channels, one batch of 2 works.
  // 20 / 2 = 10 warps a work: recv 4, send 5 (4 workers), the copy 9. Each part S/2/2 moves at 4 x 5 = 20 GB/s
  // on the network work: t = S/4 / 20, busbw = S x 1/2 / t = 40, below the NIC's 48.
  auto m = h100(2, 1);
  m.p2pWarpGBps = 5;
  CHECK(ncclP2pWarpBusbw("alltoall", m, 1e9) == Approx(40));
  CHECK(ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, m, 1e9)->busbwGBps == Approx(40));
  // SendRecv: one work a batch, 20 warps: recv 9, send 10 (9 workers), S/2 a channel: busbw 2 x 9 x 5 = 90 > 48
  CHECK(ncclP2pWarpBusbw("sendrecv", m, 1e9) == Approx(90));
  CHECK(ncclCost("sendrecv", NcclAlgo::kP2p, NcclProto::kSimple, m, 1e9)->busbwGBps == Approx(48));
  // 2 x 2: 4 p2p channels; rounds 0-1 (self, local peer) on channels 0-1, rounds 2-3 (remote) from
  // reverseBits(1, 2) = 2 on 2-3: 2 works a batch, 4 workers each on S/4/2: busbw 3/4 x 8 x 4 x 5 = 120 > 75
  auto m2 = h100(2, 2);
  m2.p2pWarpGBps = 5;
  CHECK(ncclP2pWarpBusbw("alltoall", m2, 1e9) == Approx(120));
  CHECK(ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, m2, 1e9)->busbwGBps == Approx(75));
  // In place NCCL skips the send to self: the peer's work has the batch's 20 warps (recv 9, send 10 with 9
  // workers), S/4 a channel at 9 x 5 = 45 GB/s: busbw 90, and the NIC's 48 binds.
  m.inPlace = true;
  CHECK(ncclP2pWarpBusbw("alltoall", m, 1e9) == Approx(90));
  CHECK(ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, m, 1e9)->busbwGBps == Approx(48));
  // one node: no such term (the node's own AllToAll rate is calibrated), with a rate set
  auto one = h100(1, 8);
  const double without = ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, one, 1e9)->busbwGBps;
  one.p2pWarpGBps = 5;
  CHECK(ncclP2pWarpBusbw("alltoall", one, 1e9) == 0);
  CHECK(ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, one, 1e9)->busbwGBps == Approx(without));
  // the rate comes only from the cards it was measured on; others keep no cap
  REQUIRE(ncclP2pWarpPrior("NVIDIA H100 80GB HBM3"));
  CHECK(ncclP2pWarpPrior("NVIDIA H100 80GB HBM3")->gbps == 4.465);
  REQUIRE(ncclP2pWarpPrior("NVIDIA H200"));
  CHECK(ncclP2pWarpPrior("NVIDIA H200")->gbps == 4.31);
  for (const char* other : {"NVIDIA H200 NVL", "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA A100-SXM4-80GB", "NVIDIA B200", ""})
    CHECK_FALSE(ncclP2pWarpPrior(other));
}

TEST_CASE("nccl NVLS by GPU count: algbw B x G / (G + 1)", "[nccl]") {
  // busbw / B = 2 (G - 1) / (G + 1): 14/9 at 8 GPUs, 6/5 at 4, 2/3 at 2; nvlsGBps is the 8-GPU busbw
  CHECK(ncclNvlsBusbw(h100(1, 8)) == Approx(480));
  CHECK(ncclNvlsBusbw(h100(1, 4)) == Approx(480 * 1.2 / (14.0 / 9)));  // 370.29
  CHECK(ncclNvlsBusbw(h100(1, 2)) == Approx(480 * (2.0 / 3) / (14.0 / 9)));  // 205.71
  CHECK(ncclNvlsBusbw(h100(1, 1)) == 0);
  // 1 x 4 AllReduce of 1 GB: 25 us + 1e9 x 1.5 / 370.29 GB/s
  auto m = h100(1, 4);
  CHECK(t("allreduce", NcclAlgo::kNvls, NcclProto::kSimple, m, 1e9) == Approx(25 + 1e9 * 1.5 / (480 * 1.2 / (14.0 / 9) * 1e3)));
}

TEST_CASE("nccl P2P on one node: NCCL's channels by size (enqueue.cc addP2pToPlan)", "[nccl]") {
  // 8 ranks, 32 p2p channels: 32 per peer halved to 4 (4 x 8 <= 32); a part above 16 MiB doubles them
  auto m = h100(1, 8);
  const double MiB = 1 << 20;
  CHECK(ncclP2pSendChannels(m, 32 * MiB) == 4);   // 8 MiB a part
  CHECK(ncclP2pSendChannels(m, 64 * MiB) == 4);   // 16 MiB, not above
  CHECK(ncclP2pSendChannels(m, 128 * MiB) == 8);
  CHECK(ncclP2pSendChannels(m, 256 * MiB) == 16);
  CHECK(ncclP2pSendChannels(m, 512 * MiB) == 32);
  CHECK(ncclP2pSendChannels(m, 4096 * MiB) == 32);  // all the peer has
  CHECK(ncclP2pSendChannels(m, 100 * 1024) == 2);   // 64 KiB parts: ceil(100 / 64)
  // 4 ranks: 8 (8 x 4 <= 32) up to 128 MiB, 16 at 256 MiB; 2 ranks: 16
  CHECK(ncclP2pSendChannels(h100(1, 4), 128 * MiB) == 8);
  CHECK(ncclP2pSendChannels(h100(1, 4), 256 * MiB) == 16);
  CHECK(ncclP2pSendChannels(h100(1, 2), 32 * MiB) == 16);
  // a known coll channel count: its power of two up, 24 -> 32 (as the default), 12 -> 16: 2 a peer on 1 x 8
  auto c12 = h100(1, 8);
  c12.channels = 24;
  CHECK(ncclP2pSendChannels(c12, 32 * MiB) == 4);
  c12.channels = 12;
  CHECK(ncclP2pSendChannels(c12, 32 * MiB) == 2);
  CHECK(ncclP2pSendChannels(c12, 1024 * MiB) == 16);
  // PCIe: 2 channels a peer, 128 KiB steps
  auto pcie = h100(1, 8);
  pcie.nvlink = false;
  CHECK(ncclP2pSendChannels(pcie, 1024 * MiB) == 2);
  // SendRecv 1 x 8, 32 MiB: min(360, 4 x 20.6 = 82.4) GB/s after 8.4 + 3.4 us
  CHECK(t("sendrecv", NcclAlgo::kP2p, NcclProto::kSimple, m, 32 * MiB) == Approx(11.8 + 32 * MiB / 82.4e3));
  // 1 GiB: 32 channels x 20.6 = 659.2, capped at the ring's 360
  CHECK(ncclCost("sendrecv", NcclAlgo::kP2p, NcclProto::kSimple, m, 1024 * MiB)->busbwGBps == Approx(360));
  // AllToAll 1 x 8, 1 MiB: 128 KiB a peer on 2 channels, 7 peers: 14 x 20.6 = 288.4; 32 MiB: 28 channels, 360
  CHECK(ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, m, 1 * MiB)->busbwGBps == Approx(288.4));
  CHECK(ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, m, 32 * MiB)->busbwGBps == Approx(360));
  // a node AllToAll rate of its own caps AllToAll only: 300, SendRecv still 360
  m.a2aIntraGBps = 300;
  CHECK(ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, m, 1024 * MiB)->busbwGBps == Approx(300));
  CHECK(ncclCost("sendrecv", NcclAlgo::kP2p, NcclProto::kSimple, m, 1024 * MiB)->busbwGBps == Approx(360));
  // AllToAll with 12 coll channels: the comm has 16 p2p channels (not 32), so 1 GiB runs on 16 x 20.6 = 329.6
  CHECK(ncclP2pCommChannels(c12) == 16);
  CHECK(ncclP2pCommChannels(h100(1, 8)) == 32);
  CHECK(ncclCost("alltoall", NcclAlgo::kP2p, NcclProto::kSimple, c12, 1024 * MiB)->busbwGBps == Approx(329.6));
}

TEST_CASE("nccl calibration: a 1 x 8 SendRecv run gives the P2P channel rate and a 1 x 4 NVLS run the 8-GPU rate", "[nccl]") {
  NcclMachine truth = h100(1, 8);
  truth.p2pChGBps = 15;
  NcclRun sr = synthetic("p2pring", 8, truth, 1 << 20, 1ull << 32);
  auto fit = ncclCalibrate(h100(1, 8), {sr});
  CHECK(fit.maxAbsErrPct < 2);
  CHECK(fit.machine.p2pChGBps == Approx(15).epsilon(0.03));
  // 1 x 4 AllReduce on NVLS at 8-GPU busbw 450 (370.29 x 450 / 480 at 4 GPUs): the fit returns the 8-GPU figure
  NcclMachine t4 = h100(1, 4);
  t4.nvlsGBps = 450;
  NcclForce nvls;
  nvls.algo = NcclAlgo::kNvls;  // NVLS on 4 GPUs (347 GB/s) would lose to the ring's 360: a run forced to it
  NcclRun ar = synthetic("allreduce", 4, t4, 64 << 20, 1ull << 33, nvls);
  auto c = ncclChoose("allreduce", t4, 1 << 30, nvls);
  REQUIRE(c.best.algo == NcclAlgo::kNvls);
  CHECK(c.best.busbwGBps == Approx(450 * ncclNvlsBusbw(h100(1, 4)) / 480));
  auto f4 = ncclCalibrate(h100(1, 4), {ar});
  CHECK(f4.machine.nvlsGBps == Approx(450).epsilon(0.03));
  // 1 x 8 AllToAll at a node rate of its own (300 GB/s, below the ring's 360): a2aIntraGBps is calibrated
  NcclMachine ta = h100(1, 8);
  ta.a2aIntraGBps = 300;
  auto fa = ncclCalibrate(h100(1, 8), {synthetic("alltoall", 8, ta, 1 << 20, 1ull << 32)});
  CHECK(std::find(fa.freed.begin(), fa.freed.end(), "a2aIntraGBps") != fa.freed.end());
  CHECK(fa.machine.a2aIntra() == Approx(300).epsilon(0.03));
  CHECK(fa.maxAbsErrPct < 2);
}

TEST_CASE("nccl NICs: the rate of the channels on a NIC", "[nccl]") {
  auto m = h100(2, 8);
  // k channels on a NIC: min(line 50, 48 x k / 2)
  CHECK(m.nicRate(1) == Approx(24));
  CHECK(m.nicRate(2) == Approx(48));
  CHECK(m.nicRate(3) == Approx(50));
  CHECK(m.nicRate(16) == Approx(50));
  m.nicLineGBps = 40;  // a line below the 2-channel rate is taken as that rate
  CHECK(m.nicRate(2) == Approx(48));
  CHECK(m.nicRate(4) == Approx(48));
  // Ring, 2 x 8, node ring 1000: default (2 channels per NIC) 8 x 48 = 384; NCCL_MIN_CTAS=24: 3 per NIC,
  // 8 x 50 = 400; 8 channels: 1 per NIC, 8 x 24 = 192
  auto r = h100(2, 8);
  r.ringIntraGBps = 1000;
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kSimple, r, 1e9)->busbwGBps == Approx(384));
  r.channels = 24;
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kSimple, r, 1e9)->busbwGBps == Approx(400));
  r.channels = 8;
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kSimple, r, 1e9)->busbwGBps == Approx(192));
  // 2 x 4 with 4 NICs and 8 channels (Snellius' INFO): 2 per NIC, 4 x 48 = 192
  auto e = h100(2, 4);
  e.ringIntraGBps = 1000;
  e.channels = 8;
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kSimple, e, 1e9)->busbwGBps == Approx(192));
}

TEST_CASE("nccl P2P channels per network peer by NCCL release (paths.cc), and SendRecv's NIC rate", "[nccl]") {
  // Hand-computed. The comm's p2p channels P: 2 per NIC (one per GPU here) rounded up to a power of two.
  auto at = [](int N, int G, int version) {
    auto m = h100(N, G);
    m.ncclVersion = version;
    return m;
  };
  CHECK(ncclNetP2pChannels(at(10, 1, 0)) == 2);
  CHECK(ncclNetP2pChannels(at(10, 8, 0)) == 16);
  // 2.29 (and unknown): start at 2, halve while 2 x ceil(ranks / 8) > P.
  CHECK(ncclNetPeerChannels(at(2, 1, 22902)) == 2);   // 2 x 1 <= 2
  CHECK(ncclNetPeerChannels(at(10, 1, 22902)) == 1);  // 2 x 2 > 2
  CHECK(ncclNetPeerChannels(at(10, 1, 0)) == 1);
  CHECK(ncclNetPeerChannels(at(2, 8, 22902)) == 2);   // 2 x 2 <= 16
  CHECK(ncclNetPeerChannels(at(8, 8, 22902)) == 2);   // 2 x 8 <= 16
  CHECK(ncclNetPeerChannels(at(9, 8, 22902)) == 1);   // 2 x 9 > 16
  CHECK(ncclNetPeerChannels(at(10, 8, 22902)) == 1);  // 2 x 10 > 16
  // 2.20-2.28: halve while 2 x ranks > 4 x P.
  CHECK(ncclNetPeerChannels(at(4, 1, 22807)) == 2);   // 8 <= 8
  CHECK(ncclNetPeerChannels(at(5, 1, 22807)) == 1);   // 10 > 8
  CHECK(ncclNetPeerChannels(at(8, 8, 22807)) == 1);   // 2 x 64 > 4 x 16, then 64 <= 64
  CHECK(ncclNetPeerChannels(at(2, 8, 22807)) == 2);   // 2 x 16 <= 64
  // 2.18-2.19: NCCL_NCHANNELS_PER_NET_PEER's 2 whatever the ranks; one node: 2.
  CHECK(ncclNetPeerChannels(at(10, 1, 21904)) == 2);
  CHECK(ncclNetPeerChannels(at(1, 8, 22902)) == 2);
  // SendRecv across nodes: one peer's k channels on its NIC, min(line 50, 48 x k / 2): 48 on 2 x 1, 24 on 10 x 1.
  CHECK(ncclCost("p2pring", NcclAlgo::kP2p, NcclProto::kSimple, at(2, 1, 22902), 1e9)->busbwGBps == Approx(48));
  CHECK(ncclCost("p2pring", NcclAlgo::kP2p, NcclProto::kSimple, at(10, 1, 22902), 1e9)->busbwGBps == Approx(24));
  CHECK(ncclCost("p2pring", NcclAlgo::kP2p, NcclProto::kSimple, at(10, 1, 21904), 1e9)->busbwGBps == Approx(48));
}

TEST_CASE("nccl choice: the cheapest pair, forced algorithm and protocol, channels", "[nccl]") {
  auto m = h100(2, 8);
  auto small = ncclChoose("allreduce", m, 8);
  // latency-bound: LL; the tree's 6.8 + 2 x (7 x 0.6 + 1 x 5) = 25.2 us beats the ring's 28.8 us,
  // as NCCL takes Tree/LL for small multi-node AllReduce
  CHECK(small.best.proto == NcclProto::kLL);
  CHECK(small.best.algo == NcclAlgo::kTree);
  CHECK(small.best.latUs == Approx(25.2));
  auto big = ncclChoose("allreduce", m, 8e9);
  CHECK(big.best.algo == NcclAlgo::kNvlsTree);  // min(480, 720) beats the ring's 360
  NcclForce f;
  f.algo = NcclAlgo::kRing;
  auto r = ncclChoose("allreduce", m, 8e9, f);
  CHECK(r.best.algo == NcclAlgo::kRing);
  CHECK(r.best.proto == NcclProto::kSimple);
  f.proto = NcclProto::kLL128;
  CHECK(ncclChoose("allreduce", m, 8e9, f).best.proto == NcclProto::kLL128);
  // channels cap LL128: one node, 4 channels x 36.7 = 146.8 below 360 x 0.92
  auto one = h100(1, 8);
  one.channels = 4;
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL128, one, 1e9)->busbwGBps == Approx(4 * 36.7));
  // the tree's per-channel maxima by node count (tuning.cc, Hopper): LL128 36.7 on 2 nodes, 29 on 4;
  // Simple 41.4 on 2, 36 on 4. 2 channels: the tree's network term would be far above.
  auto tr = h100(2, 8);
  tr.channels = 2;
  tr.nicGBps = 1000;
  tr.ringIntraGBps = 1000;
  const double S8 = 8e9;  // treeCorrection 1 above 256 MiB
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kLL128, tr, S8)->busbwGBps == Approx(2 * 36.7));
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kSimple, tr, S8)->busbwGBps == Approx(2 * 41.4));
  tr.nodes = 4;
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kLL128, tr, S8)->busbwGBps == Approx(2 * 29.0));
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kSimple, tr, S8)->busbwGBps == Approx(2 * 36.0));
  NcclForce bad;
  bad.algo = NcclAlgo::kPat;
  CHECK_THROWS_AS(ncclChoose("allreduce", m, 1e6, bad), fb::InputError);
  CHECK(parseNcclAlgo("NVLS_TREE") == NcclAlgo::kNvlsTree);
  CHECK(parseNcclAlgo("ring") == NcclAlgo::kRing);
  CHECK_THROWS_AS(parseNcclAlgo("butterfly"), fb::InputError);
  CHECK(parseNcclProto("ll128") == NcclProto::kLL128);
  CHECK_THROWS_AS(parseNcclProto("LL64"), fb::InputError);
  CHECK(ncclBusFactor("alltoall", 16) == Approx(15.0 / 16));
  CHECK(ncclBusFactor("broadcast", 16) == Approx(1));
  // the descriptors' factors (sendrecv = p2pring's alias); nccl-tests' reduce has none: 1
  CHECK(ncclBusFactor("sendrecv", 2) == Approx(1));
  CHECK(ncclBusFactor("p2pring", 1) == Approx(1));
  CHECK(ncclBusFactor("allreduce", 1) == Approx(0));
  CHECK(ncclBusFactor("allreduce", 16) == Approx(fb::busBwFactor(fb::CollKind::kAllReduce, 16)));
  CHECK(ncclBusFactor("reduce", 4) == Approx(1));
  CHECK_THROWS_AS(ncclBusFactor("gather", 4), fb::InputError);
}

TEST_CASE("nccl calibration recovers the machine that made the curves", "[nccl]") {
  NcclMachine truth = h100(2, 8);
  truth.nicGBps = 40;
  truth.latNetScale = 2;
  truth.nvlsGBps = 420;  // NVLS-bound tree on 2 nodes (min(420, 8 x 40 x 1.875)); above the ring's 365 so
                         // the 1 x 8 run takes NVLS and identifies it
  NcclRun one, two;
  one.coll = two.coll = "allreduce";
  one.label = "1x8";
  one.nodes = 1;
  one.gpusPerNode = 8;
  two.label = "2x8 ring";
  two.nodes = 2;
  two.gpusPerNode = 8;
  two.force.algo = NcclAlgo::kRing;  // a Ring run identifies the NICs
  for (double S = 1 << 20; S <= (1ull << 33); S *= 2) {
    NcclMachine m1 = truth;
    m1.nodes = 1;
    one.rows.push_back({S, ncclChoose("allreduce", m1, S).best.timeUs, 0});
    two.rows.push_back({S, ncclChoose("allreduce", truth, S, two.force).best.timeUs, 0});
  }
  NcclMachine prior = h100(2, 8);
  auto fit = ncclCalibrate(prior, {one, two});
  CHECK(fit.maxAbsErrPct < 2);
  CHECK(fit.machine.nicGBps == Approx(40).epsilon(0.05));
  CHECK(fit.machine.nvlsGBps == Approx(420).epsilon(0.05));
  // a noisy size (in-place 30 % off) is flagged and left out of the statistics
  two.rows[3].inPlaceUs = two.rows[3].timeUs * 1.3;
  two.rows[3].timeUs *= 3;
  auto pts = ncclPredict(fit.machine, two);
  CHECK(pts[3].noisy);
  CHECK(ncclErrStats(pts, 0).second < 2);
}

TEST_CASE("nccl fit of our own 2 x H200 nccl-tests log (NVLink, NVLS off)", "[nccl]") {
  auto rd = fb::loadRunAny(std::string(FB_MODEL_TEST_DATA) + "/nccl-tests/h200x2-nccl-tests-allreduce-nvlink.log");
  auto runs = ncclRunsOf(rd);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].nodes == 1);
  CHECK(runs[0].gpusPerNode == 2);
  CHECK(runs[0].rows.size() == 31);  // 8 B .. 8 GiB, factor 2
  CHECK(runs[0].gpu == "NVIDIA H200");  // the '#  Rank' lines' device name, for the GPU's priors
  NcclMachine prior;
  prior.nvlsGBps = 0;  // the log was made with NCCL_NVLS_ENABLE=0
  auto fit = ncclCalibrate(prior, runs);
  auto pts = ncclPredict(fit.machine, runs[0]);
  auto [med, mx] = ncclErrStats(pts, 1 << 20);
  CHECK(med < 10);
  CHECK(mx < 35);  // 4 MiB: the LL -> LL128 switch lands one size early in the model (+30.6 %)
  CHECK(pts.front().proto == NcclProto::kLL);
  CHECK(pts.back().algo == NcclAlgo::kRing);
  CHECK(pts.back().proto == NcclProto::kSimple);
  // 8 GiB: 24612.6 us measured (the log's out-of-place time)
  CHECK(pts.back().measuredUs == Approx(24612.6));
  CHECK(std::fabs(pts.back().errPct) < 3);
}

TEST_CASE("NCCL_NVLS_ENABLE=0 takes NVLS and NVLSTree out of a run's candidates", "[nccl]") {
  const std::string log = std::string(FB_MODEL_TEST_DATA) + "/nccl-tests/h200x2-nccl-tests-allreduce-nvlink.log";
  auto rd = fb::loadRunAny(log);
  REQUIRE(ncclRunsOf(rd).size() == 1);
  // The log prints no env; its INFO's "0 nvls channels" turns NVLS off (next case), and what the user gives wins.
  auto on = ncclRunsOf(rd, "nvls=1");
  CHECK_FALSE(on[0].nvlsOff);
  auto off = ncclRunsOf(rd, "nvls=0");
  CHECK(off[0].nvlsOff);
  // A fabricbench run keeps its environment in the first host's fingerprint.
  fb::RunData fbRun = rd;
  fbRun.runJson = {{"fingerprint", {{"hosts", {{{"fingerprint", {{"env", {{"NCCL_NVLS_ENABLE", "0"}}}}}}}}}}};
  CHECK(ncclRunsOf(fbRun)[0].nvlsOff);
  // With an NVLS rate above the ring's (2000 GB/s on 8 GPUs = 857 on 2), the run takes NVLS at large sizes;
  // off, never.
  NcclMachine prior = h100(1, 2);
  prior.nvlsGBps = 2000;
  auto onPts = ncclPredict(prior, on[0]);
  auto offPts = ncclPredict(prior, off[0]);
  int nvlsOn = 0, nvlsOff = 0;
  for (auto& p : onPts) nvlsOn += p.algo == NcclAlgo::kNvls || p.algo == NcclAlgo::kNvlsTree;
  for (auto& p : offPts) nvlsOff += p.algo == NcclAlgo::kNvls || p.algo == NcclAlgo::kNvlsTree;
  CHECK(nvlsOn > 0);
  CHECK(nvlsOff == 0);
  // and the calibration does not free nvlsGBps for it
  auto fit = ncclCalibrate(prior, off);
  CHECK(std::find(fit.freed.begin(), fit.freed.end(), "nvlsGBps") == fit.freed.end());
}

TEST_CASE("the INFO's '0 nvls channels' on nodes of 2+ GPUs is NVLS off, as NCCL_NVLS_ENABLE=0", "[nccl]") {
  // Our 2 x H200 log was made with NCCL_NVLS_ENABLE=0 and prints no env; each rank's INFO line says
  // "24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, ...".
  auto rd = fb::loadRunAny(std::string(FB_MODEL_TEST_DATA) + "/nccl-tests/h200x2-nccl-tests-allreduce-nvlink.log");
  CHECK(rd.runJson["nccl_tests"]["nvls_channels"] == 0);
  auto runs = ncclRunsOf(rd);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].nvlsOff);
  // Fitted from the Hopper prior (NVLS 480 GB/s on 8 GPUs, as the tool takes for an H200): no size is NVLS.
  // Before the INFO line was read, 64 MiB - 8 GiB were NVLS/Simple.
  NcclMachine prior;
  REQUIRE(prior.nvlsGBps > 0);
  auto fit = ncclCalibrate(prior, runs);
  CHECK(std::find(fit.freed.begin(), fit.freed.end(), "nvlsGBps") == fit.freed.end());
  auto pts = ncclPredict(fit.machine, runs[0]);
  REQUIRE(pts.size() == 31);
  for (const auto& p : pts) {
    INFO(p.bytes << " B: " << ncclAlgoInfo(p.algo).name);
    CHECK(p.algo == NcclAlgo::kRing);
  }
  // One GPU per node: NVLS never applies, and 0 nvls channels says nothing more (nvlsOff stays as given).
  fb::RunData twoNodes = rd;
  for (auto& s : twoNodes.rows) s.nNodes = 2;
  CHECK_FALSE(ncclRunsOf(twoNodes)[0].nvlsOff);
  // An INFO without the count (NCCL before 2.17) leaves NVLS to the machine.
  fb::RunData unlogged = rd;
  unlogged.runJson["nccl_tests"]["nvls_channels"] = nullptr;
  CHECK_FALSE(ncclRunsOf(unlogged)[0].nvlsOff);
}

TEST_CASE("nccl fit of our own 1 x H200 nccl-tests log (one rank: a device copy)", "[nccl]") {
  auto rd = fb::loadRunAny(std::string(FB_MODEL_TEST_DATA) + "/nccl-tests/h200x1-nccl-tests-allreduce-g1.log");
  auto runs = ncclRunsOf(rd);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].nodes == 1);
  CHECK(runs[0].gpusPerNode == 1);
  REQUIRE(runs[0].rows.size() == 28);  // 8 B .. 1 GiB, factor 2
  CHECK(runs[0].rows.back().timeUs == Approx(508.65));  // out of place
  CHECK(runs[0].rows.back().inPlaceUs == Approx(0.73));
  // one rank: only Local applies, busbw 0; defaults: launch 6 us, copy 3 us + S at 2000 GB/s:
  // 1e9 B: max(6, 3 + 1e9 / 2e6) = 503 us; 1 MB: max(6, 3 + 0.5) = 6 us
  NcclMachine one;
  one.gpusPerNode = 1;
  auto c = ncclChoose("allreduce", one, 1e9);
  CHECK(c.all.size() == 1);
  CHECK(c.best.algo == NcclAlgo::kLocal);
  CHECK(c.best.timeUs == Approx(503));
  CHECK(ncclChoose("allreduce", one, 1e6).best.timeUs == Approx(6));
  CHECK(c.best.busbwGBps == 0);
  CHECK_FALSE(ncclCost("allreduce", NcclAlgo::kLocal, NcclProto::kSimple, h100(1, 8), 1e9));
  auto fit = ncclCalibrate(NcclMachine{}, runs);
  auto pts = ncclPredict(fit.machine, runs[0]);
  REQUIRE(pts.size() == 28);
  int noisy = 0;
  for (auto& p : pts) noisy += p.noisy;
  CHECK(noisy == 0);  // in place does nothing: not noise
  // 1 GiB out of place: 508.65 us measured, 2111 GB/s algbw: the copy rate the fit finds
  CHECK(fit.machine.copyGBps == Approx(2111).epsilon(0.1));
  CHECK(std::fabs(pts.back().errPct) < 5);
  auto [med, mx] = ncclErrStats(pts, 1 << 20);
  INFO("median " << med << " max " << mx);
  CHECK(med < 10);
}

TEST_CASE("nccl: tuning.cc's network overhead a ring step and exposed network hops at one GPU a node", "[nccl]") {
  // Ring LL AllReduce on one node (1 x 8): 14 NVLink hops at LL's own 0.6 us + base 6.6 = 15 us; on two (2 x 8, in
  // "nccl ring" above) a step inside the node costs the network overhead instead, 1 us (Intel) for LL. Over PCIe
  // (1.0 us for LL, 5.7 for Simple) the overhead (1, x3 = 3) changes nothing: 2 x 8 Simple 8.4 + 28 x 5.7 + 2 x 14.
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL, h100(1, 8), 1e6)->latUs == Approx(15));
  auto pcie = h100(2, 8);
  pcie.nvlink = false;
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kSimple, pcie, 1e6)->latUs == Approx(8.4 + 28 * 5.7 + 28));
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL, pcie, 1e6)->latUs == Approx(6.6 + 28 * 1.0 + 2 * 2.7));
  // The Tree keeps its own hops (no overhead rule there): 2 x 8 Tree LL 6.8 + 2 x (7 x 0.6 + 1 x 5.0) = 25.2 us.
  CHECK(ncclCost("allreduce", NcclAlgo::kTree, NcclProto::kLL, h100(2, 8), 1e6)->latUs == Approx(25.2));
  // 4 x 1 Ring LL128 AllReduce, 6 network steps: from NCCL 2.23 each takes the Tree's LL128 network latency, 8.5 us:
  // 14 + 6 x 8.5 = 65 us; 2.22 the ring's 4.0: 14 + 24 = 38 us. LL: 6.6 + 6 x 5.0 = 36.6 (2.22: 6.6 + 6 x 2.7 = 22.8).
  auto m = h100(4, 1);
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL128, m, 1e6)->latUs == Approx(65));
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL, m, 1e6)->latUs == Approx(36.6));
  m.ncclVersion = 22203;
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL128, m, 1e6)->latUs == Approx(38));
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL, m, 1e6)->latUs == Approx(22.8));
}

TEST_CASE("nccl: intra-node hops between GPUs of one process (P2P/direct pointer) calibrated apart", "[nccl]") {
  // 1 x 8 Ring Simple AllReduce, 14 NVLink hops of 3.4 us: separate processes (P2P/CUMEM) x latIntraScale 1:
  // 8.4 + 14 x 3.4 = 56 us; one process (P2P/direct pointer) x latDirectScale 2: 8.4 + 14 x 3.4 x 2 = 103.6 us
  auto m = h100(1, 8);
  m.latDirectScale = 2;
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kSimple, m, 1e6)->latUs == Approx(56));
  m.directP2p = true;
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kSimple, m, 1e6)->latUs == Approx(103.6));
  // the network hops keep latNetScale: 2 x 8 Ring LL128, 28 NVLink hops x 1.9 x 2 + 2 x 4.0: 14 + 106.4 + 8 = 128.4
  auto m2 = h100(2, 8);
  m2.directP2p = true;
  m2.latDirectScale = 2;
  CHECK(ncclCost("allreduce", NcclAlgo::kRing, NcclProto::kLL128, m2, 1e6)->latUs == Approx(128.4));
  // from the logs: Snellius' one process -g 4 says "via P2P/direct pointer", its 2-node run (a process per
  // GPU) "via P2P/CUMEM"; without INFO lines, -g 2 in one thread (set D) is taken as one process, -g 1 not
  auto runOf = [](const std::string& f) {
    auto r = ncclRunsOf(fb::loadRunAny(std::string(FB_MODEL_TEST_DATA) + "/public-nccl-tests/" + f));
    REQUIRE(r.size() == 1);
    return r[0];
  };
  CHECK(runOf("h100-snellius-1n-g4-all_gather.log").directP2p);
  CHECK_FALSE(runOf("h100-snellius-2n-g4-all_gather.log").directP2p);
  CHECK(runOf("dgxh100-cnh-2x2.log").directP2p);
  CHECK_FALSE(runOf("h100-ib400-gjaion-2x8.log:coll=allreduce").directP2p);
}

TEST_CASE("nccl priors by the logs' GPU: NVLink ring rate, NVLS, PCIe", "[nccl]") {
  struct Want {
    const char* name;
    double ring, nvls;
    bool pcie;
  };
  // ring: NCCL's SMxx_NVLINK_BW x the GPU's NVLink links; NVLS only from Hopper on.
  const Want want[] = {{"NVIDIA A100-SXM4-40GB", 240, 0, false},      {"NVIDIA A100-SXM4-80GB", 240, 0, false},
                       {"NVIDIA A800-SXM4-80GB", 160, 0, false},      {"Tesla V100-SXM2-32GB", 120, 0, false},
                       {"NVIDIA H100 80GB HBM3", 365, 480, false},    {"NVIDIA H200", 365, 480, false},
                       {"NVIDIA H800", 164.8, 480.0 * 8 / 18, false}, {"NVIDIA B200", 721.8, 480 * 721.8 / 370.8, false},
                       {"NVIDIA A100 80GB PCIe", 0, 0, true},         {"NVIDIA L40S", 0, 0, true},
                       {"NVIDIA A10", 0, 0, true},                    {"NVIDIA GeForce RTX 4090", 0, 0, true},
                       {"NVIDIA H100 NVL", 0, 0, false},              {"NVIDIA H200 NVL", 0, 0, false},
                       {"NVIDIA GH200 480GB", 0, 0, false},           {"NVIDIA L4", 0, 0, true},
                       {"NVIDIA A10G", 0, 0, true},                   {"Tesla T4", 0, 0, true},
                       {"NVIDIA RTX A6000", 0, 0, true},              {"NVIDIA H100 PCIe", 0, 0, true},
                       {"NVIDIA GB200", 721.8, 480 * 721.8 / 370.8, false},
                       // AMD: Instinct over xGMI, Radeon a PCIe card (no xGMI)
                       {"AMD Instinct MI300X", 0, 0, false},          {"AMD Radeon AI PRO R9700", 0, 0, true},
                       {"AMD Radeon Instinct MI60", 0, 0, false},
                       // ROCm's generic name (gfx950 Instinct and gfx1201 Radeon cards alike): not claimed a PCIe card
                       {"AMD Radeon Graphics", 0, 0, false}};
  int wrong = 0;
  for (const auto& w : want) {
    auto p = ncclGpuPrior(w.name);
    INFO(w.name);
    REQUIRE(p.has_value());
    const bool ok = p->ringGBps == Approx(w.ring) && p->nvlsGBps == Approx(w.nvls) && p->pcie == w.pcie && !p->source.empty();
    CHECK(ok);
    wrong += !ok;
  }
  CHECK(wrong == 0);
  CHECK(ncclGpuPrior("AMD Radeon Graphics")->family.find("unknown class") != std::string::npos);
  CHECK_FALSE(ncclGpuPrior("Some Accelerator 9000").has_value());
  CHECK_FALSE(ncclGpuPrior("").has_value());
}

TEST_CASE("nccl fit: a size over twice as slow as a larger one is an outlier, left out of the loss only", "[nccl]") {
  // The log's own anomaly (ROCm/rccl issue 1490's 4 x 8 AllGather held 2-8 MiB at ~70 ms, 16 MiB at 1 ms).
  NcclRun r;
  r.label = "x";
  r.coll = "allreduce";
  r.nodes = 2;
  r.gpusPerNode = 8;
  r.rows = {{1 << 20, 100}, {2 << 20, 70000}, {4 << 20, 200}, {8 << 20, 390}, {16 << 20, 700}};
  auto pts = ncclPredict(h100(2, 8), r);
  REQUIRE(pts.size() == 5);
  // 100 < 2 x 200; 70000 > 2 x 200; 200 < 2 x 390; 390 < 2 x 700
  CHECK_FALSE(pts[0].outlier);
  CHECK(pts[1].outlier);
  CHECK_FALSE(pts[2].outlier);
  CHECK_FALSE(pts[3].outlier);
  CHECK_FALSE(pts[4].outlier);
  CHECK(pts[1].counts(1 << 20));  // the bound still counts it
  // One too-fast larger row makes no outliers of the sizes below it: each is compared with every larger size.
  NcclRun fast = r;
  fast.rows = {{1 << 20, 100}, {2 << 20, 180}, {4 << 20, 330}, {8 << 20, 20}, {16 << 20, 1200}};
  for (const auto& p : ncclPredict(h100(2, 8), fast)) CHECK_FALSE(p.outlier);
  // The fit without the outlier's pull: the same as a fit of the run without that row.
  NcclRun clean = r;
  clean.rows.erase(clean.rows.begin() + 1);
  NcclFitOptions fo;
  fo.minBytes = 1 << 20;
  auto a = ncclCalibrate(h100(2, 8), {r}, fo), b = ncclCalibrate(h100(2, 8), {clean}, fo);
  REQUIRE(a.freed == b.freed);
  CHECK(a.machine.latNetScale == Approx(b.machine.latNetScale));
  CHECK(a.machine.effLL128 == Approx(b.machine.effLL128));
}


// NCCL's algorithms and protocols as a cost model (tuning.cc's structure); the runs and calibration are in
// nccl_fit.cc. See nccl.h.
#include "model/nccl.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <regex>

#include <fmt/format.h>

#include "collectives/spec.h"
#include "core/text.h"
#include "report/nccl_tests_lines.h"

namespace fb::model {
namespace {

int log2i(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return n >= 1 ? k : 0;
}

// The smallest power of two at or above n (1 for n <= 1): NCCL rounds its p2p channel counts so (paths.cc).
int pow2Up(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

// Hopper per-channel maxima by node count, 1 / 2 / more (tuning.cc perChMaxRingLL128Bws, perChMaxTreeLL128Bws,
// perChMaxTreeBws; the same rows from 2.18 to 2.29).
constexpr double kPerChRingLL128 = 36.7, kPerChTreeLL128[3] = {36.7, 36.7, 29.0}, kPerChTree[3] = {38.7, 41.4, 36.0};
// tuning.cc getNetOverhead, us a ring step: 1 on Intel and other CPUs (2 on AMD, whose CPU no log names).
constexpr double kNetOverheadUs = 1;
int nodeIndex(int N) { return N <= 2 ? std::max(N, 1) - 1 : 2; }

// The most double-binary-tree edges at one node over both trees (each edge carries S/2 each way).
double treeEdges(int N) { return N <= 1 ? 0 : N == 2 ? 2 : N == 3 ? 3 : 4; }

}  // namespace

const std::vector<NcclAlgoInfo>& ncclAlgos() {
  // tuning.cc (2.2x) latencies: base [LL, LL128, Simple], then per hop over NVLink, PCI, network.
  static const NcclLat ring{{6.6, 14.0, 8.4}, {0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}};
  static const NcclLat pat{{8, 8, 8}, {0, 0, 4}, {0, 0, 4}, {0, 0, 14}};  // tuning.cc 2.23+
  static const NcclLat tree{{6.8, 14.0, 8.4}, {0.6, 1.25, 4.0}, {1.0, 1.9, 4.0}, {5.0, 8.5, 14.0}};
  static const NcclLat nvls{{0, 0, 0}, {0, 0, 25}, {0, 0, 0}, {0, 0, 18}};
  static const NcclLat nvlsTree{{0, 0, 0}, {0, 0, 25}, {0, 0, 0}, {0, 0, 14}};
  static const NcclLat cnDirect{{0, 0, 0}, {0, 0, 3.7}, {0, 0, 3.7}, {0, 0, 31}};
  static const NcclLat cnChain{{0, 0, 0}, {0, 0, 2.8}, {0, 0, 2.8}, {0, 0, 30}};
  static const std::vector<NcclAlgoInfo> t = {
      {NcclAlgo::kRing, "Ring", {"ring"}, {"allreduce", "allgather", "reducescatter", "broadcast", "reduce"},
       false, false, false, false, false,
       "a ring per channel through every rank; AllReduce 2(n-1) steps of S/n, AllGather/ReduceScatter n-1", false, ring},
      {NcclAlgo::kTree, "Tree", {"tree"}, {"allreduce"}, true, false, false, false, false,
       "chain inside the node, double binary tree between nodes: reduce up, broadcast down, S/2 per tree", false, tree},
      {NcclAlgo::kNvls, "NVLS", {"nvls"}, {"allreduce"}, false, true, true, false, false,
       "NVSwitch multicast and in-switch reduction inside one node", true, nvls},
      {NcclAlgo::kNvlsTree, "NVLSTree", {"nvlstree", "nvls_tree"}, {"allreduce"}, true, false, true, false, false,
       "NVLS inside each node, a tree between nodes", true, nvlsTree},
      {NcclAlgo::kCollNetDirect, "CollNetDirect", {"collnetdirect", "collnet_direct", "collnet", "sharp"},
       {"allreduce"}, true, false, false, true, false, "in-network reduction (SHARP): each node sends and receives S once",
       true, cnDirect},
      {NcclAlgo::kCollNetChain, "CollNetChain", {"collnetchain", "collnet_chain"}, {"allreduce"}, true, false, false,
       true, false, "a chain inside the node into the in-network reduction", true, cnChain},
      {NcclAlgo::kPat, "PAT", {"pat"}, {"allgather", "reducescatter"}, true, false, false, false, true,
       "parallel aggregated trees, one rank per node (NCCL >= 2.23): log2(n) steps", true, pat},
      {NcclAlgo::kP2p, "P2P", {"p2p"}, {"alltoall", "sendrecv", "p2pring"}, false, false, false, false, false,
       "point-to-point sends; per node the off-node bytes over its NICs", true, ring},
      {NcclAlgo::kLocal, "Local", {"local"},
       {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "sendrecv", "p2pring"}, false, true,
       false, false, false, "one rank: out of place a device copy of S, in place nothing", true, ring, true},
  };
  return t;
}

const NcclAlgoInfo& ncclAlgoInfo(NcclAlgo a) {
  for (const auto& i : ncclAlgos())
    if (i.id == a) return i;
  return ncclAlgos().front();
}

NcclAlgo parseNcclAlgo(const std::string& s) {
  std::string l = text::lower(s);
  for (const auto& i : ncclAlgos())
    for (const auto& al : i.aliases)
      if (l == al) return i.id;
  std::string names;
  for (const auto& i : ncclAlgos()) names += (names.empty() ? "" : ", ") + i.name;
  throw InputError(fmt::format("unknown NCCL algorithm '{}' ({})", s, names));
}

NcclProto parseNcclProto(const std::string& s) {
  std::string l = text::lower(s);
  if (l == "ll") return NcclProto::kLL;
  if (l == "ll128") return NcclProto::kLL128;
  if (l == "simple") return NcclProto::kSimple;
  throw InputError(fmt::format("unknown NCCL protocol '{}' (LL, LL128, Simple)", s));
}

std::string ncclProtoName(NcclProto p) { return p == NcclProto::kLL ? "LL" : p == NcclProto::kLL128 ? "LL128" : "Simple"; }

double ncclBusFactor(const std::string& coll, int n) {
  if (coll == "reduce") return n > 1 ? 1 : 0;  // nccl-tests' reduce_perf (no descriptor here)
  auto k = fb::parseCollKind(coll);          // sendrecv is p2pring's alias
  if (!k) throw InputError(fmt::format("collective '{}': no bus factor known", coll));
  return fb::busBwFactor(*k, std::max(1, n));  // the descriptors' (n-1)/n factors give 0 at one rank
}

const std::vector<NcclGpuFamily>& ncclGpuFamilies() {
  // NVLink ring rates are NCCL's own per-link figures (src/graph/topo.h SMxx_NVLINK_BW) times the GPU's links
  // (its datasheet), as the Hopper default 365 sits beside NCCL's 18 x 20.6. The last figure, the ring's bound,
  // is the links' signalling rate one way (datasheets: 25 GB/s a link for NVLink 2-4, 50 for NVLink 5). NVLS needs NVSwitch multicast,
  // which CUDA offers from Hopper on (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, read by NCCL's nvls.cc).
  static const char* kNoNvls = "no NVLS: NVSwitch multicast (NVLink SHARP) came with Hopper";
  static const std::vector<NcclGpuFamily> table = {
      // Cards without NVLink first: "A100 80GB PCIe" is a PCIe card, not an SXM A100.
      {R"(pcie|\bL40S?\b|\bL4\b|\bA10G?\b|\bA30\b|\bA40\b|\bRTX\b|\bT4\b)",
       {"PCIe card (no NVLink between GPUs)", 0, 0, true,
        std::string(kNoNvls) + "; PCIe hop latencies; the node's ring rate stays at the default (give --ring-gbps)"}},
      {R"(\bA100\b)",
       {"A100 SXM (Ampere, 12 NVLink 3 links)", 12 * 20.0, 0, false,
        "ring 12 x 20 GB/s (NCCL src/graph/topo.h SM80_NVLINK_BW; A100 datasheet: 12 NVLink 3 links); " +
            std::string(kNoNvls), 12 * 25.0}},
      {R"(\bA800\b)",
       {"A800 SXM (Ampere, 8 NVLink 3 links)", 8 * 20.0, 0, false,
        "ring 8 x 20 GB/s (SM80_NVLINK_BW; A800: 400 GB/s NVLink, 8 links; ~160 measured, NVIDIA/nccl issue 412); " + std::string(kNoNvls), 8 * 25.0}},
      {R"(\bV100\b)",
       {"V100 SXM (Volta, 6 NVLink 2 links)", 6 * 20.0, 0, false,
        "ring 6 x 20 GB/s (SM70_NVLINK_BW; V100 datasheet: 6 NVLink 2 links); " + std::string(kNoNvls), 6 * 25.0}},
      {R"(\bH800\b)",
       {"H800 SXM (Hopper, 8 NVLink 4 links)", 8 * 20.6, 480.0 * 8 / 18, false,
        "ring 8 x 20.6 GB/s (SM90_NVLINK_BW; H800: 400 GB/s NVLink, 8 links); NVLS the H100 default x 8/18 links", 8 * 25.0}},
      {R"(\b(H100|H200) NVL\b|\bGH200\b)",
       {"Hopper without NVSwitch (H100/H200 NVL: NVLink bridges; GH200: one GPU or direct links)", 0, 0, false,
        "no NVLS: no NVSwitch to multicast through (give --nvls-gbps for a GH200 NVL32); the node's ring rate stays at "
        "the default (give --ring-gbps)"}},
      {R"(\b(H100|H200|H20)\b)",
       {"Hopper (18 NVLink 4 links)", 365, 480, false,
        "the Hopper defaults: ring 365 (NVIDIA/nccl issue 1455), NVLS 480 (nccl-tests issue 212)", 18 * 25.0}},
      // ROCm's name for a GPU it has no product name for, Instinct parts and Radeon cards alike (gfx950 and gfx1201
      // both print it): the class is unknown, so neither row's hop latencies are claimed for it.
      {R"(\bAMD Radeon Graphics\b)",
       {"AMD GPU of unknown class ('AMD Radeon Graphics' is ROCm's generic name, printed for Instinct and Radeon "
        "parts alike)", 0, 0, false,
        "no NVLS: RCCL has no NVLink SHARP; taken as Instinct over xGMI (give --pcie for a PCIe card); the node's "
        "ring rate stays at the default (give --ring-gbps, or fit a 1 x G run)"}},
      {R"(\bRadeon\b(?!\s+Instinct))",  // "Radeon Instinct MI50/MI60" are Instinct GPUs with Infinity Fabric links
       {"AMD Radeon (PCIe card, no xGMI links)", 0, 0, true,
        "no NVLS: RCCL has no NVLink SHARP; PCIe hop latencies; the node's ring rate stays at the default (give "
        "--ring-gbps, or fit a 1 x G run)"}},
      {nccltests::kAmdGpuPattern,  // after Radeon's row: the AMD GPUs left are Instinct
       {"AMD Instinct (RCCL over xGMI/Infinity Fabric)", 0, 0, false,
        "no NVLS: RCCL has no NVLink SHARP (NVIDIA's NVSwitch multicast); the node's ring rate stays at the default "
        "(give --ring-gbps, or fit a 1 x G run)"}},
      {R"(\b(GB[23]00|B[123]00)\b)",
       {"Blackwell (18 NVLink 5 links)", 18 * 40.1, 480.0 * 18 * 40.1 / 370.8, false,
        "ring 18 x 40.1 GB/s (SM100_NVLINK_BW; 721.8 as NCCL prints on B200, NVIDIA/nccl issue 1807); NVLS the "
        "H100 default x 721.8 / 370.8 (scaled by NCCL's NVLink rates: no measurement of it here)", 18 * 50.0}},
  };
  return table;
}

std::optional<NcclWarpRate> ncclP2pWarpPrior(const std::string& gpuName) {
  // scripts/instruments/warp_copy.cu (reduceCopy's loop: 16-byte loads, unroll 8) on the GPU host, 2 CTAs of 4
  // warps (the network peer's send workers in a 2 x 1 AllToAll's batch): GB/s a warp. Only the cards measured.
  static const std::vector<std::pair<std::string, NcclWarpRate>> table = {
      {R"(\bH100 80GB HBM3\b)",
       {4.465, "4.465 GB/s a warp, measured on an H100 80GB HBM3 (2 CTAs x 4 warps, 2026-12-07; 4.39 at 5, 4.12 at 9)"}},
      {R"(\bH200\b(?! NVL))",
       {4.31, "4.31 GB/s a warp, measured on an H200 (2 CTAs x 4 warps, 2026-12-06; 4.26 at 5, 4.02 at 9)"}},
  };
  for (const auto& [pattern, rate] : table)
    if (std::regex_search(gpuName, std::regex(pattern, std::regex::icase))) return rate;
  return std::nullopt;
}

std::optional<NcclGpuPrior> ncclGpuPrior(const std::string& gpuName) {
  for (const auto& e : ncclGpuFamilies())
    if (std::regex_search(gpuName, std::regex(e.pattern, std::regex::icase))) return e.prior;
  return std::nullopt;
}

double ncclNvlsBusbw(const NcclMachine& m) {
  auto s = [](double G) { return 2 * (G - 1) / (G + 1); };  // busbw / B with algbw B G / (G + 1)
  return m.gpusPerNode < 2 ? 0 : m.nvlsGBps * s(m.gpusPerNode) / s(8);
}

int ncclP2pCommChannels(const NcclMachine& m) {
  // A known coll channel count gives the comm's p2p channels: its power of two up (paths.cc
  // ncclTopoComputeP2pChannels; the INFO lines: 24 coll -> 32 p2p on Snellius and our H200s, 16 -> 16, 8 -> 8).
  return m.channels > 0 ? pow2Up(m.channels) : std::max(1, m.p2pChannels);
}

int ncclP2pSendChannels(const NcclMachine& m, double bytes) {
  const int P = ncclP2pCommChannels(m);
  const int n = std::max(1, m.ranks()), perPeer = m.nvlink ? P : std::min(P, 2);
  const double step = m.nvlink ? 512 * 1024 : 128 * 1024, minPart = step / 8, maxPart = step * 32;
  int nMin = perPeer;
  while (nMin * n > P && nMin > 1) nMin /= 2;
  int ch = static_cast<int>(std::min<double>(nMin, std::max(1.0, std::ceil(bytes / minPart))));
  double part = std::max(minPart, std::ceil(bytes / ch));
  while (part > maxPart && ch <= perPeer / 2) {
    ch *= 2;
    part = std::ceil(bytes / ch);
  }
  return ch;
}

int ncclNetP2pChannels(const NcclMachine& m) {
  return m.channels > 0 ? ncclP2pCommChannels(m) : pow2Up(2 * static_cast<int>(std::ceil(m.nics())));
}

int ncclNetPeerChannels(const NcclMachine& m) {
  const int P = ncclNetP2pChannels(m), n = std::max(1, m.ranks());
  int k = std::min(2, P);
  if (m.nodes < 2 || (m.ncclVersion > 0 && m.ncclVersion < 22000)) return k;  // NCCL_NCHANNELS_PER_NET_PEER 2
  if (m.ncclVersion > 0 && m.ncclVersion < 22900) {
    while (k * n > 4 * P && k > 1) k /= 2;  // 2.20-2.28: ranks x channels against 4 x the comm's p2p channels
  } else {
    while (k * ((n + 7) / 8) > P && k > 1) k /= 2;  // 2.29 on (unknown: the newest): a batch's 8 peers at a time
  }
  return k;
}

double ncclP2pWarpBusbw(const std::string& coll, const NcclMachine& m, double bytes) {
  const int N = m.nodes, G = m.gpusPerNode, n = m.ranks();
  if (N < 2 || !(m.p2pWarpGBps > 0) || !(bytes > 0)) return 0;
  const bool a2a = coll == "alltoall";
  // The comm's p2p channels and a network peer's (ncclNetPeerChannels), fewer for a small op (enqueue.cc
  // addP2pToPlan: parts of 64-128 KiB, the network chunk 128 KiB).
  const int P = ncclNetP2pChannels(m), perPeer = ncclNetPeerChannels(m);
  const int logP = log2i(P);
  int nMin;
  for (nMin = perPeer; nMin * n > P && nMin > 1;) nMin /= 2;
  const double step = 128 * 1024, opBytes = a2a ? bytes / n : bytes;
  int c = static_cast<int>(std::min<double>(nMin, std::max(1.0, std::ceil(opBytes / (step / 2)))));
  while (std::max(step / 2, std::ceil(opBytes / c)) > step && c <= perPeer / 2) c *= 2;
  // Rounds (init.cc ncclP2pSchedule: round 0 is the self copy, groups of gcd(8, G) ranks) and their first channel
  // (channel.h ncclP2pChannelBaseForRound, bits reversed); a batch takes the rounds of one group of 8 on a channel.
  const int gs = std::gcd(8, G), rounds = a2a ? n : 1;
  std::map<std::pair<int, int>, std::vector<bool>> batch;  // (channel, round / 8) -> its works, true = self copy
  for (int r = 0; r < rounds; ++r) {
    const int rr = a2a ? r : 1, b = rr / gs * ((gs + 7) / 8) + rr % gs / 8;
    int base = 0;
    for (int i = 0; i < logP; ++i) base |= ((b >> i) & 1) << (logP - 1 - i);
    if (a2a && r == 0 && m.inPlace) continue;  // in place NCCL skips the send to self: no self copy
    for (int q = 0; q < c; ++q) batch[{(base + q) & (P - 1), rr / 8}].push_back(a2a && r == 0);
  }
  // Each batch's works split 20 warps (sendrecv.h): nWarps / k a work, recv (w - 1) / 2 (w / 2 up to 4), send
  // one more above 4; the self copy runs on all of its work's, a send of 3 warps or more spares one (prims_simple.h
  // nworkers). A channel runs its batches in turn; the busiest channel sets the time.
  std::map<int, double> chUs;
  for (const auto& [key, works] : batch) {
    const int k = static_cast<int>(works.size()), w = 20 / k, recv = w <= 4 ? w / 2 : (w - 1) / 2,
              send = w <= 4 ? recv : recv + 1;
    double slowest = 0;
    for (bool copy : works) {
      const int warps = copy ? send + recv : std::min(send - (send >= 3 ? 1 : 0), recv);
      slowest = std::max(slowest, opBytes / c / (std::max(1, warps) * m.p2pWarpGBps * 1e3));
    }
    chUs[key.first] += slowest;
  }
  double worst = 0;
  for (const auto& [ch, us] : chUs) worst = std::max(worst, us);
  return worst > 0 ? bytes * ncclBusFactor(coll, n) / (worst * 1e3) : 0;
}

bool ncclApplies(NcclAlgo a, const std::string& coll, const NcclMachine& m) {
  const auto& i = ncclAlgoInfo(a);
  if (std::find(i.colls.begin(), i.colls.end(), coll) == i.colls.end()) return false;
  if (i.oneRank != (m.ranks() == 1)) return false;
  if (i.multiNode && m.nodes < 2) return false;
  if (i.singleNode && m.nodes != 1) return false;
  if (i.needsNvls && (m.nvlsGBps <= 0 || m.gpusPerNode < 2)) return false;
  if (i.needsCollNet && !m.collNet) return false;
  if (i.onePerNode && m.gpusPerNode != 1) return false;
  if (a == NcclAlgo::kPat && m.ncclVersion > 0 && m.ncclVersion < 22300) return false;  // PAT came in NCCL 2.23
  return true;
}

// tuning.cc's treeCorrectionFactor (the same table from NCCL 2.18 to 2.29): trees fall below the model
// at medium sizes; a static factor per protocol and power of two of size/64 B (64 B .. 256 MiB), 1 above.
static double treeCorrection(NcclProto p, double S) {
  static const double k[3][23] = {
      {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
  if (S < 64) return 1.0;  // log2i(0): no correction
  const int logSize = static_cast<int>(std::floor(std::log2(S / 64)));
  return logSize < 23 ? k[static_cast<int>(p)][logSize] : 1.0;
}

std::optional<NcclCost> ncclCost(const std::string& coll, NcclAlgo a, NcclProto p, const NcclMachine& m, double S) {
  if (!ncclApplies(a, coll, m)) return std::nullopt;
  const NcclAlgoInfo& info = ncclAlgoInfo(a);
  if (info.simpleOnly && p != NcclProto::kSimple) return std::nullopt;
  const int N = m.nodes, G = m.gpusPerNode, n = m.ranks();
  // Collective channels per NIC: a known count (NCCL_MIN_CTAS, the INFO's "coll channels") over the NICs, else
  // NCCL's default on these nodes, 2 per NIC (16 channels over 8 NICs, 8 over 4, per the public INFO lines).
  const double R = m.nics(), nic = m.nicRate(m.channels > 0 ? m.channels / R : 2), f = ncclBusFactor(coll, n);
  const int pi = static_cast<int>(p);
  NcclLat L = info.lat;
  // NCCL 2.19-2.22 (tuning.cc of those releases): Tree Simple at 28 us a hop over NVLink, PCI and the network.
  if (a == NcclAlgo::kTree && m.ncclVersion >= 21900 && m.ncclVersion < 22300) L.nvl[2] = L.pci[2] = L.net[2] = 28;
  // tuning.cc: a multi-node ring's intra-node step costs at least the network overhead (getNetOverhead, x3 for
  // Simple); from 2.23, with one GPU a node every network hop takes the Tree's latency ("with ppn=1 latencies are
  // fully exposed").
  double intraHop = m.nvlink ? L.nvl[pi] : L.pci[pi];
  if (a == NcclAlgo::kRing && N > 1) intraHop = std::max(intraHop, kNetOverheadUs * (p == NcclProto::kSimple ? 3 : 1));
  const bool exposed = G == 1 && (m.ncclVersion == 0 || m.ncclVersion >= 22300);
  const double hi = intraHop * (m.directP2p ? m.latDirectScale : m.latIntraScale),
               he = (exposed ? ncclAlgoInfo(NcclAlgo::kTree).lat.net[pi] : L.net[pi]) * m.latNetScale;
  const bool ar = coll == "allreduce";
  double bw = 0, lat = 0;
  switch (a) {
    case NcclAlgo::kRing: {
      bw = N == 1 ? m.ringIntraGBps : std::min(m.ringIntraGBps, R * nic);
      int steps = ar ? 2 * (n - 1) : n - 1, inter = N > 1 ? (ar ? 2 * (N - 1) : N - 1) : 0;
      lat = L.base[pi] + (steps - inter) * hi + inter * he;
      break;
    }
    case NcclAlgo::kTree:
      bw = std::min(m.ringIntraGBps, R * nic * f * 2 / treeEdges(N));
      lat = L.base[pi] + 2 * ((G - 1) * hi + log2i(N) * he);
      break;
    case NcclAlgo::kNvls:
      bw = ncclNvlsBusbw(m);
      lat = hi;
      break;
    case NcclAlgo::kNvlsTree:
      bw = std::min(m.nvlsGBps, R * nic * f * 2 / treeEdges(N));
      lat = 2 * (hi + log2i(N) * he);
      break;
    case NcclAlgo::kCollNetDirect:
    case NcclAlgo::kCollNetChain:
      bw = std::min(m.nvlsGBps > 0 ? m.nvlsGBps : m.ringIntraGBps, R * nic * f);
      // tuning.cc: Direct 2 (min(1, G - 1) intra hops + 0.4 us a local rank of arity serialisation) + the
      // network hop; Chain 2 (G - 1) intra hops (up and down the node's chain) + the network hop; base 0.
      lat = a == NcclAlgo::kCollNetDirect ? 2 * (std::min(1, G - 1) * hi + (G - 1) * 0.4) + he : 2 * (G - 1) * hi + he;
      break;
    case NcclAlgo::kPat:
      // tuning.cc (2.23+): 8 us + log2(nodes) network hops / 3.5 + 2.8 us per rank ("still a linear part");
      // busBw x 0.85 in 2.23, x 0.75 from 2.24.
      bw = std::min(m.ringIntraGBps, R * nic) * (m.ncclVersion >= 22300 && m.ncclVersion < 22400 ? 0.85 : 0.75);
      lat = L.base[pi] + log2i(N) * he / 3.5 + n * 2.8;
      break;
    case NcclAlgo::kP2p: {
      // k channels to each remote peer (ncclNetPeerChannels: 2, halved as ranks grow from NCCL 2.20): AllToAll's
      // n - G remote peers per GPU put k (n - G) G / R channels on a NIC, SendRecv's one peer k.
      const double k = ncclNetPeerChannels(m);
      const double pNic = m.nicRate(coll == "alltoall" ? k * (n - G) * G / R : k);
      if (N == 1) {
        // One node: the channels a send runs on (AllToAll: every peer's S/n together, at most the comm's), each at
        // p2pChGBps, up to the node's link rate.
        const double ch = coll == "alltoall" ? std::min<double>(ncclP2pCommChannels(m), (n - 1.0) * ncclP2pSendChannels(m, S / n))
                                             : ncclP2pSendChannels(m, S);
        bw = std::min(coll == "alltoall" ? m.a2aIntra() : m.ringIntraGBps, ch * m.p2pChGBps);
      } else if (coll == "alltoall") {
        bw = std::min(m.ringIntraGBps, R * pNic * (n - 1) / (G * double(n - G)));
      } else {
        bw = std::min(m.ringIntraGBps, pNic * std::max(1.0, R / G));
      }
      // Across nodes the CTAs' warps, split among a batch's works, can bind before the NIC: a 2 x 1 AllToAll's
      // self copy shares each CTA with the network peer, whose send and recv keep 4 warps each (ncclP2pWarpBusbw).
      if (const double wb = N > 1 ? ncclP2pWarpBusbw(coll, m, S) : 0; wb > 0) bw = std::min(bw, wb);
      lat = L.base[pi] + (N > 1 ? he : hi);
      break;
    }
    case NcclAlgo::kLocal:
      bw = m.copyGBps;
      lat = m.copyLatUs;
      break;
  }
  if (a == NcclAlgo::kTree && ar) bw *= 0.92;  // tuning.cc: Tree AllReduce busBw x .92, before the protocols
  if (p == NcclProto::kLL) {
    // tuning.cc: Ring LL = busBw x 0.5 since 2.21 (x 1/4 for AllReduce or multi-node, 1/3 otherwise, before).
    const bool oldLL = m.ncclVersion > 0 && m.ncclVersion < 22100;
    const double ringLL = oldLL ? (N > 1 || ar || coll == "reduce" ? 0.25 : 1.0 / 3) : 0.5;
    bw = bw * (a == NcclAlgo::kRing ? ringLL : 1 / 3.8) * m.effLL;
    // tuning.cc's llMaxBws: one node by GPU (Hopper 141 GB/s from 2.21, 87.7 before), more by CPU (Intel x86: 39
    // on 2 nodes, 20.4 beyond).
    bw = std::min(bw, N == 1 ? (oldLL ? 87.7 : 141.0) : N == 2 ? 39.0 : 20.4);
  }
  if (p == NcclProto::kLL128) {
    double k = a == NcclAlgo::kRing ? (G < 2 ? 0.7 : 0.92) : (N == 1 ? 7.0 / 9.0 : 120.0 / 128.0);
    bw *= k * (a == NcclAlgo::kTree ? m.effTreeLL128 : m.effLL128);
    if (m.channels > 0)
      bw = std::min(bw, m.channels * (a == NcclAlgo::kRing ? kPerChRingLL128 : kPerChTreeLL128[nodeIndex(N)]));
  }
  if (a == NcclAlgo::kTree && p == NcclProto::kSimple && m.channels > 0) bw = std::min(bw, m.channels * kPerChTree[nodeIndex(N)]);
  if (a == NcclAlgo::kTree) bw *= treeCorrection(p, S);
  if (!(bw > 0)) return std::nullopt;
  NcclCost c;
  c.algo = a;
  c.proto = p;
  c.latUs = lat;
  c.busbwGBps = bw;
  c.timeUs = a == NcclAlgo::kLocal ? std::max(m.launchUs, lat + S / (bw * 1e3)) : lat + (f > 0 ? S * f / (bw * 1e3) : 0);
  if (a == NcclAlgo::kLocal) c.busbwGBps = 0;  // nothing crosses a link
  return c;
}

NcclChoice ncclChoose(const std::string& coll, const NcclMachine& m, double S, const NcclForce& force) {
  NcclChoice ch;
  for (const auto& i : ncclAlgos()) {
    if (force.algo && *force.algo != i.id) continue;
    for (NcclProto p : {NcclProto::kLL, NcclProto::kLL128, NcclProto::kSimple}) {
      if (force.proto && *force.proto != p) continue;
      if (auto c = ncclCost(coll, i.id, p, m, S)) ch.all.push_back(*c);
    }
  }
  if (ch.all.empty())
    throw InputError(fmt::format("no NCCL algorithm{}{} applies to {} on {} node(s) x {} GPU(s)",
                                 force.algo ? " " + ncclAlgoInfo(*force.algo).name : std::string(),
                                 force.proto ? " with protocol " + ncclProtoName(*force.proto) : std::string(), coll,
                                 m.nodes, m.gpusPerNode));
  std::sort(ch.all.begin(), ch.all.end(), [](const NcclCost& a, const NcclCost& b) { return a.timeUs < b.timeUs; });
  ch.best = ch.all.front();
  return ch;
}

}  // namespace fb::model

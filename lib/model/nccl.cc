// NCCL's algorithms and protocols as a cost model, and its calibration. See nccl.h.
#include "model/nccl.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "collectives/spec.h"
#include "core/text.h"

namespace fb::model {
namespace {

int log2i(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return n >= 1 ? k : 0;
}

// Hopper per-channel maxima by node count, 1 / 2 / more (tuning.cc perChMaxRingLL128Bws, perChMaxTreeLL128Bws,
// perChMaxTreeBws; the same rows from 2.18 to 2.29).
constexpr double kPerChRingLL128 = 36.7, kPerChTreeLL128[3] = {36.7, 36.7, 29.0}, kPerChTree[3] = {38.7, 41.4, 36.0};
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
  const double hi = (m.nvlink ? L.nvl[pi] : L.pci[pi]) * (m.directP2p ? m.latDirectScale : m.latIntraScale),
               he = L.net[pi] * m.latNetScale;
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
      bw = m.nvlsGBps;
      lat = hi;
      break;
    case NcclAlgo::kNvlsTree:
      bw = std::min(m.nvlsGBps, R * nic * f * 2 / treeEdges(N));
      lat = 2 * (hi + log2i(N) * he);
      break;
    case NcclAlgo::kCollNetDirect:
    case NcclAlgo::kCollNetChain:
      bw = std::min(m.nvlsGBps > 0 ? m.nvlsGBps : m.ringIntraGBps, R * nic * f);
      lat = hi + he;
      break;
    case NcclAlgo::kPat:
      // tuning.cc (2.23+): 8 us + log2(nodes) network hops / 3.5 + 2.8 us per rank ("still a linear part");
      // busBw x 0.85 in 2.23, x 0.75 from 2.24.
      bw = std::min(m.ringIntraGBps, R * nic) * (m.ncclVersion >= 22300 && m.ncclVersion < 22400 ? 0.85 : 0.75);
      lat = L.base[pi] + log2i(N) * he / 3.5 + n * 2.8;
      break;
    case NcclAlgo::kP2p: {
      // 2 channels to each remote peer (src/graph/paths.cc: NCCL_NCHANNELS_PER_NET_PEER 2 in 2.18-2.28; 2.29 opens
      // up to 4, ceil(GPU-NIC GB/s / 14), which set F's 2.29.2 SendRecv rate contradicts: doc/model.md): AllToAll's
      // n - G remote peers per GPU put 2 (n - G) G / R channels on a NIC, SendRecv's one peer 2.
      const double pNic = m.nicRate(coll == "alltoall" ? 2.0 * (n - G) * G / R : 2.0);
      if (coll == "alltoall") bw = N == 1 ? m.ringIntraGBps : std::min(m.ringIntraGBps, R * pNic * (n - 1) / (G * double(n - G)));
      else bw = N == 1 ? m.ringIntraGBps : std::min(m.ringIntraGBps, pNic * std::max(1.0, R / G));
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
    throw InputError(fmt::format("no NCCL algorithm{} applies to {} on {} node(s) x {} GPU(s)",
                                 force.algo ? " " + ncclAlgoInfo(*force.algo).name : std::string(), coll, m.nodes,
                                 m.gpusPerNode));
  std::sort(ch.all.begin(), ch.all.end(), [](const NcclCost& a, const NcclCost& b) { return a.timeUs < b.timeUs; });
  ch.best = ch.all.front();
  return ch;
}

// ---- runs ----------------------------------------------------------------------------------

namespace {
void applyGiven(NcclRun& r, const std::string& key, const std::string& val) {
  std::string k = text::lower(key);
  if (k == "algo" || k == "nccl_algo") r.force.algo = parseNcclAlgo(val);
  else if (k == "proto" || k == "nccl_proto") r.force.proto = parseNcclProto(val);
  else if (k == "nccl" || k == "nccl_version") {
    // "2.18.3" -> 21803
    int a = 0, b = 0, c = 0;
    if (std::sscanf(val.c_str(), "%d.%d.%d", &a, &b, &c) < 2 || a < 2 || b < 0 || c < 0)
      throw InputError(fmt::format("{}={}: expected an NCCL version such as 2.18.3", key, val));
    r.ncclVersion = a * 10000 + b * 100 + c;
  } else if (k == "channels" || k == "nccl_min_ctas" || k == "nccl_min_nchannels") {
    try {
      r.channels = std::stoi(val);
    } catch (...) {
      r.channels = -1;
    }
    if (r.channels < 1) throw InputError(fmt::format("{}={}: needs a channel count >= 1", key, val));
  }
}
}  // namespace

std::vector<NcclRun> ncclRunsOf(const RunData& rd, const std::string& given) {
  std::map<std::string, NcclRun> byColl;
  std::vector<std::string> order;
  for (const auto& s : rd.rows) {
    if (s.wrong > 0 || s.bytes == 0 || !(s.timeUs > 0)) continue;
    auto& r = byColl[s.coll];
    if (r.coll.empty()) {
      r.coll = s.coll;
      r.label = rd.label + ": " + s.coll;
      r.nodes = std::max(1, s.nNodes);
      r.gpusPerNode = std::max(1, s.nRanks / r.nodes);
      order.push_back(s.coll);
    }
    auto it = std::find_if(r.rows.begin(), r.rows.end(), [&](const NcclRun::Row& x) { return x.bytes == s.bytes; });
    if (it == r.rows.end()) {
      r.rows.push_back({static_cast<double>(s.bytes), 0, 0});
      it = r.rows.end() - 1;
    }
    (s.inPlace ? it->inPlaceUs : it->timeUs) = s.timeUs;
  }
  std::vector<NcclRun> out;
  for (auto& c : order) {
    NcclRun r = byColl[c];
    for (auto& row : r.rows)
      if (!(row.timeUs > 0)) std::swap(row.timeUs, row.inPlaceUs);  // only in-place measured
    std::sort(r.rows.begin(), r.rows.end(), [](auto& a, auto& b) { return a.bytes < b.bytes; });
    // What the run itself says it forced (the importer keeps NCCL_* settings under nccl_tests.env).
    if (rd.runJson.is_object() && rd.runJson.contains("nccl_tests")) {
      const auto& nt = rd.runJson["nccl_tests"];
      if (nt.contains("env") && nt["env"].is_object())
        for (auto& [k, v] : nt["env"].items())
          if (v.is_string()) applyGiven(r, k, v.get<std::string>());
      if (nt.contains("channels") && nt["channels"].is_number_integer() && r.channels == 0)
        r.channels = nt["channels"].get<int>();
      // Same-process GPUs: the INFO's "via P2P/direct pointer"; without transports, nccl-tests' -g N (one thread).
      bool anyTransport = false, direct = false;
      if (nt.contains("transports") && nt["transports"].is_array())
        for (const auto& t : nt["transports"])
          if (t.is_string()) {
            anyTransport = true;
            direct |= t.get<std::string>() == "P2P/direct";
          }
      const int nGpus = nt.contains("ngpus") && nt["ngpus"].is_number_integer() ? nt["ngpus"].get<int>() : 1;
      r.directP2p = r.gpusPerNode > 1 && (anyTransport ? direct : nGpus > 1);
      if (nt.contains("nccl_version") && nt["nccl_version"].is_string())
        applyGiven(r, "nccl", nt["nccl_version"].get<std::string>());
    }
    std::size_t pos = 0;
    while (pos < given.size()) {
      auto e = given.find(',', pos);
      std::string kv = given.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
      pos = e == std::string::npos ? given.size() : e + 1;
      auto eq = kv.find('=');
      if (eq == std::string::npos) throw InputError(fmt::format("'{}': expected KEY=VALUE (algo=ring, channels=24)", kv));
      applyGiven(r, kv.substr(0, eq), kv.substr(eq + 1));
    }
    out.push_back(r);
  }
  return out;
}

// ---- calibration -----------------------------------------------------------------------------

std::vector<NcclFitPoint> ncclPredict(const NcclMachine& base, const NcclRun& r) {
  NcclMachine m = base;
  m.nodes = r.nodes;
  m.gpusPerNode = r.gpusPerNode;
  if (r.channels > 0) m.channels = r.channels;
  m.ncclVersion = r.ncclVersion;
  m.directP2p = r.directP2p;
  std::vector<NcclFitPoint> pts;
  for (const auto& row : r.rows) {
    auto ch = ncclChoose(r.coll, m, row.bytes, r.force);
    NcclFitPoint p;
    p.run = r.label;
    p.bytes = row.bytes;
    p.measuredUs = row.timeUs;
    p.modelUs = ch.best.timeUs;
    p.errPct = (p.modelUs - p.measuredUs) / p.measuredUs * 100;
    p.algo = ch.best.algo;
    p.proto = ch.best.proto;
    // One rank: in place does nothing, out of place copies; their difference is no noise.
    p.noisy = m.ranks() > 1 && row.inPlaceUs > 0 && std::fabs(row.inPlaceUs - row.timeUs) / std::min(row.inPlaceUs, row.timeUs) > 0.2;
    pts.push_back(p);
  }
  return pts;
}

std::pair<double, double> ncclErrStats(const std::vector<NcclFitPoint>& pts, double minBytes) {
  std::vector<double> e;
  for (const auto& p : pts)
    if (p.bytes >= minBytes && !p.noisy) e.push_back(std::fabs(p.errPct));
  if (e.empty()) return {0, 0};
  std::sort(e.begin(), e.end());
  double med = e.size() % 2 ? e[e.size() / 2] : 0.5 * (e[e.size() / 2 - 1] + e[e.size() / 2]);
  return {med, e.back()};
}

namespace {
struct Param {
  const char* name;
  double NcclMachine::*field;
  double lo, hi;
  bool prior;  // pulled towards the prior value
};

// Nelder-Mead on f over x (log-space parameters), a few restarts from the best point.
std::vector<double> nelderMead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x0) {
  const std::size_t n = x0.size();
  for (int restart = 0; restart < 3; ++restart) {
    std::vector<std::vector<double>> p(n + 1, x0);
    for (std::size_t i = 0; i < n; ++i) p[i + 1][i] += 0.3;
    std::vector<double> v(n + 1);
    for (std::size_t i = 0; i <= n; ++i) v[i] = f(p[i]);
    for (int it = 0; it < 150 * static_cast<int>(n); ++it) {
      std::vector<std::size_t> o(n + 1);
      for (std::size_t i = 0; i <= n; ++i) o[i] = i;
      std::sort(o.begin(), o.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
      auto P = p;
      auto V = v;
      for (std::size_t i = 0; i <= n; ++i) {
        p[i] = P[o[i]];
        v[i] = V[o[i]];
      }
      std::vector<double> c(n, 0);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) c[j] += p[i][j] / n;
      auto along = [&](double t) {
        std::vector<double> x(n);
        for (std::size_t j = 0; j < n; ++j) x[j] = c[j] + t * (p[n][j] - c[j]);
        return x;
      };
      auto xr = along(-1);
      double fr = f(xr);
      if (fr < v[0]) {
        auto xe = along(-2);
        double fe = f(xe);
        if (fe < fr) p[n] = xe, v[n] = fe;
        else p[n] = xr, v[n] = fr;
      } else if (fr < v[n - 1]) {
        p[n] = xr, v[n] = fr;
      } else {
        auto xc = along(0.5);
        double fc = f(xc);
        if (fc < v[n]) {
          p[n] = xc, v[n] = fc;
        } else {
          for (std::size_t i = 1; i <= n; ++i) {
            for (std::size_t j = 0; j < n; ++j) p[i][j] = p[0][j] + 0.5 * (p[i][j] - p[0][j]);
            v[i] = f(p[i]);
          }
        }
      }
    }
    std::size_t b = std::min_element(v.begin(), v.end()) - v.begin();
    x0 = p[b];
  }
  return x0;
}

// A few sweeps of a log-spaced grid search per parameter inside its bounds. The loss is flat where a
// min() of links caps a bandwidth (a NIC rate above the node's ring), so Nelder-Mead alone stalls there.
std::vector<double> coordinateSweep(const std::function<double(const std::vector<double>&)>& f,
                                    std::vector<double> x, const std::vector<Param>& ps) {
  double best = f(x);
  for (int sweep = 0; sweep < 3; ++sweep)
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double lo = std::log(ps[i].lo), hi = std::log(ps[i].hi);
      const int steps = 60;
      for (int k = 0; k <= steps; ++k) {
        auto y = x;
        y[i] = lo + (hi - lo) * k / steps;
        double v = f(y);
        if (v < best) best = v, x = y;
      }
    }
  return x;
}
}  // namespace

NcclFit ncclCalibrate(const NcclMachine& priorIn, const std::vector<NcclRun>& runs, const NcclFitOptions& opt) {
  if (runs.empty()) throw InputError("calibration needs at least one measured run");
  // The node's ring rate comes from the node's own runs: with single- and multi-node runs, the
  // single-node ones are fitted first and their ring rate is kept, since a multi-node Ring run
  // measures min(node ring, NICs) and cannot say which of the two binds.
  NcclMachine prior = priorIn;
  std::vector<NcclRun> singles;
  for (const auto& r : runs)
    if (r.nodes == 1 && r.gpusPerNode > 1) singles.push_back(r);
  const bool twoStage = !singles.empty() && singles.size() < runs.size();
  if (twoStage) prior.ringIntraGBps = ncclCalibrate(priorIn, singles, opt).machine.ringIntraGBps;
  bool single = false, multi = false, allreduce = false, nicSeen = false, oneRank = false, direct = false,
       separate = false;
  for (const auto& r : runs) {
    oneRank |= r.nodes * r.gpusPerNode == 1;
    direct |= r.directP2p;
    separate |= !r.directP2p && r.gpusPerNode > 1;
    single |= r.nodes == 1 && r.gpusPerNode > 1;
    multi |= r.nodes > 1;
    allreduce |= r.coll == "allreduce";
    // The NICs' rate shows only where NVLS cannot stand in for them: a run forced off NVLS/NVLSTree,
    // one GPU per node, a collective NVLS does not run, or a machine without NVLS. A 2-node default
    // AllReduce on NVSwitch nodes runs NVLSTree, capped by the node's NVLS rate, not the NICs.
    const bool nvlsPossible = r.coll == "allreduce" && r.gpusPerNode > 1 && prior.nvlsGBps > 0 &&
                              (!r.force.algo || *r.force.algo == NcclAlgo::kNvls || *r.force.algo == NcclAlgo::kNvlsTree);
    nicSeen |= r.nodes > 1 && !nvlsPossible;
  }
  // LL and LL128 efficiencies at most 1: tuning.cc's factors are the protocols' payload shares.
  std::vector<Param> ps;
  if (separate || !direct) ps.push_back({"latIntraScale", &NcclMachine::latIntraScale, 0.2, 10, true});
  ps.insert(ps.end(), {{"effLL", &NcclMachine::effLL, 0.1, 1.0, false},
                       {"effLL128", &NcclMachine::effLL128, 0.1, 1.0, false},
                       {"effTreeLL128", &NcclMachine::effTreeLL128, 0.1, 1.0, false}});
  if (direct) ps.push_back({"latDirectScale", &NcclMachine::latDirectScale, 0.2, 10, true});
  if (multi) ps.push_back({"latNetScale", &NcclMachine::latNetScale, 0.2, 10, true});
  if (nicSeen) ps.push_back({"nicGBps", &NcclMachine::nicGBps, 0.5, 100, true});
  if (single && !twoStage) ps.push_back({"ringIntraGBps", &NcclMachine::ringIntraGBps, 10, 1000, true});
  if (oneRank) ps.push_back({"launchUs", &NcclMachine::launchUs, 0.5, 200, false});
  if (oneRank) ps.push_back({"copyLatUs", &NcclMachine::copyLatUs, 0.05, 200, false});
  if (oneRank) ps.push_back({"copyGBps", &NcclMachine::copyGBps, 10, 20000, true});
  if (allreduce && prior.nvlsGBps > 0) ps.push_back({"nvlsGBps", &NcclMachine::nvlsGBps, 10, 1200, true});
  auto machineAt = [&](const std::vector<double>& x) {
    NcclMachine m = prior;
    for (std::size_t i = 0; i < ps.size(); ++i) m.*(ps[i].field) = std::exp(x[i]);
    return m;
  };
  auto loss = [&](const std::vector<double>& x) {
    NcclMachine m = machineAt(x);
    double s = 0;
    for (std::size_t i = 0; i < ps.size(); ++i) {
      double v = m.*(ps[i].field);
      if (v < ps[i].lo) s += 100 * std::pow(std::log(ps[i].lo / v), 2);
      if (v > ps[i].hi) s += 100 * std::pow(std::log(v / ps[i].hi), 2);
      if (ps[i].prior) s += opt.priorWeight * std::pow(std::log(v / (prior.*(ps[i].field))), 2);
    }
    for (const auto& r : runs)
      for (const auto& p : ncclPredict(m, r))
        if (p.bytes >= opt.minBytes && !p.noisy) s += std::pow(std::log(p.modelUs / p.measuredUs), 2);
    return s;
  };
  std::vector<double> x0;
  for (auto& p : ps) x0.push_back(std::log(prior.*(p.field)));
  auto x = nelderMead(loss, coordinateSweep(loss, x0, ps));
  NcclFit fit;
  fit.machine = machineAt(x);
  fit.machine.nodes = runs.front().nodes;
  fit.machine.gpusPerNode = runs.front().gpusPerNode;
  for (auto& p : ps) fit.freed.push_back(p.name);
  if (twoStage) fit.freed.push_back("ringIntraGBps (on the single-node runs)");
  for (const auto& r : runs) {
    auto pts = ncclPredict(fit.machine, r);
    fit.points.insert(fit.points.end(), pts.begin(), pts.end());
  }
  auto [med, mx] = ncclErrStats(fit.points, opt.minBytes);
  fit.medianAbsErrPct = med;
  fit.maxAbsErrPct = mx;
  return fit;
}

}  // namespace fb::model

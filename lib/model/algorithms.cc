// The model's algorithms, one row each (name, spellings, collectives, shapes, phases). See model.h
// for the formulas; every other part of the model reads this table.
#include <algorithm>
#include <functional>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "collectives/host_algorithms.h"
#include "core/text.h"
#include "model/model.h"

namespace fb::model {
namespace {

using fb::CollKind;

bool isPow2(int n) { return n > 0 && (n & (n - 1)) == 0; }
int floorLog2(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return n >= 1 ? k : 0;
}
int ceilLog2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

Phase hop(double count, double chunk, const Shape& sh, double interScale) {
  Phase p;
  p.count = count;
  p.chunk = chunk;
  p.intra = sh.perNode > 1;
  p.inter = sh.nodes > 1;
  p.interScale = interScale;
  return p;
}
// The non-power-of-two fold: S into the partner before, S out of it after (opposite directions).
Phase foldHops(double S, const Shape& sh) {
  Phase p = hop(2, S, sh, 1);
  p.dirShare = 0.5;
  return p;
}
// R parallel rings over rails (at most one per rank).
double ringScale(const Shape& sh) { return 1.0 / std::min<double>(sh.nics(), sh.perNode); }

// ---- phases, one function per algorithm ----------------------------------------------------------

std::vector<Phase> ringPhases(CollKind k, const Shape& sh, double S) {
  const int n = sh.ranks(), N = sh.nodes;
  if (k == CollKind::kP2PRing) {
    Phase p = hop(1, S, sh, ringScale(sh));
    p.interShare = 1.0;
    return {p};
  }
  if (k == CollKind::kBroadcast) {
    // A pipelined chain from the root: P pieces of the host's piece size, P + n - 2 steps of S/P.
    const double P = std::max(1.0, std::ceil(S / static_cast<double>(fb::kHostPieceBytes)));
    Phase p = hop(P + n - 2, S / P, sh, ringScale(sh));
    p.interShare = static_cast<double>(N - 1) / (n - 1);
    return {p};
  }
  Phase p = hop((k == CollKind::kAllReduce ? 2.0 : 1.0) * (n - 1), S / n, sh, ringScale(sh));
  p.interShare = static_cast<double>(N - 1) / (n - 1);
  return {p};
}

std::vector<Phase> treePhases(CollKind, const Shape& sh, double S) {
  // chain inside the node, double binary tree between nodes; algbw = busbw x 0.5
  const int N = sh.nodes, G = sh.perNode;
  double steps = 2.0 * ((G - 1) + ceilLog2(N));
  Phase p = hop(steps, 0, sh, 1.0 / std::min<double>(sh.nics(), 1.0 * G));
  // bytes: 2 S over the slowest link in total, spread as a per-hop chunk
  p.chunk = steps > 0 ? 2.0 * S / steps : 0;
  p.interShare = steps > 0 ? 2.0 * ceilLog2(N) / steps : 0;
  return {p};
}

std::vector<Phase> hierPhases(CollKind k, const Shape& sh, double S) {
  const int N = sh.nodes, G = sh.perNode;
  if (k == CollKind::kP2PRing) return {hop(1, S, sh, ringScale(sh))};
  Phase intra;
  intra.intra = true;
  intra.count = G - 1;
  intra.chunk = S / G;
  Phase inter;
  inter.inter = true;
  inter.chunk = S / (static_cast<double>(G) * N);
  inter.interScale = G / sh.nics();  // G rails share R NICs
  inter.count = (k == CollKind::kAllReduce ? 2.0 : 1.0) * (N - 1);
  if (k == CollKind::kAllReduce) return {intra, inter, intra};  // RS inside, AR per rail, AG inside
  return {inter, intra};
}

// A hop of a partner-exchange algorithm on N nodes of G ranks placed in blocks (ranks bG..bG+G-1 on
// node b): every rank i trades with partner(i) at once. A node's R NICs carry the chunks of all its
// ranks whose partner is elsewhere (the busiest node sets the step), so the hypercube algorithms
// pay G/R where a ring pays 1; a hop whose partners all sit on the same node is intra only.
Phase exchangeHop(double count, double chunk, const Shape& sh, const std::function<int(int)>& partner) {
  const int n = sh.ranks(), G = sh.perNode;
  std::vector<int> crossing(sh.nodes, 0);
  bool anyIntra = false;
  for (int i = 0; i < n; ++i) {
    const int j = partner(i);
    if (j < 0 || j >= n || j == i) continue;
    if (j / G == i / G)
      anyIntra = true;
    else
      ++crossing[i / G];
  }
  const int most = *std::max_element(crossing.begin(), crossing.end());
  Phase p = hop(count, chunk, sh, std::max(1.0, most / sh.nics()));
  p.intra = anyIntra;
  p.inter = most > 0;
  return p;
}

std::vector<Phase> recDoublingPhases(CollKind k, const Shape& sh, double S) {
  const int n = sh.ranks(), lg = floorLog2(n);
  std::vector<Phase> v;
  // mask 1, 2, 4...: AllReduce trades the whole buffer, AllGather mask blocks of S/n
  for (int mask = 1; mask < (1 << lg); mask <<= 1)
    v.push_back(exchangeHop(1, k == CollKind::kAllReduce ? S : S * mask / n, sh, [mask](int i) { return i ^ mask; }));
  if (k == CollKind::kAllReduce && !isPow2(n)) v.push_back(foldHops(S, sh));
  return v;
}

std::vector<Phase> rabenseifnerPhases(CollKind, const Shape& sh, double S) {
  const int n = sh.ranks(), lg = floorLog2(n), p = 1 << lg;
  std::vector<Phase> v;
  // recursive halving (mask p/2 down), then recursive doubling (mask 1 up): mask blocks of S/p
  for (int mask = p / 2; mask >= 1; mask >>= 1)
    v.push_back(exchangeHop(1, S * mask / p, sh, [mask](int i) { return i ^ mask; }));
  for (int mask = 1; mask < p; mask <<= 1)
    v.push_back(exchangeHop(1, S * mask / p, sh, [mask](int i) { return i ^ mask; }));
  if (p != n) v.push_back(foldHops(S, sh));
  return v;
}

std::vector<Phase> recHalvingPhases(CollKind, const Shape& sh, double S) {
  const int n = sh.ranks(), lg = floorLog2(n), p = 1 << lg;
  std::vector<Phase> v;
  if (p != n) v.push_back(hop(1, S, sh, 1));
  for (int mask = p / 2; mask >= 1; mask >>= 1)
    v.push_back(exchangeHop(1, S * mask / p, sh, [mask](int i) { return i ^ mask; }));
  if (p != n) v.push_back(hop(1, S / n, sh, 1));
  return v;
}

std::vector<Phase> bruckPhases(CollKind, const Shape& sh, double S) {
  const int n = sh.ranks();
  std::vector<Phase> v;
  // distance 1, 2, 4...: each rank sends min(d, n-d) blocks of S/n to rank i-d
  for (int d = 1; d < n; d <<= 1)
    v.push_back(exchangeHop(1, S * std::min(d, n - d) / n, sh, [d, n](int i) { return (i - d + n) % n; }));
  return v;
}

std::vector<Phase> oneShotPhases(CollKind, const Shape& sh, double S) { return {hop(1, (sh.ranks() - 1) * S, sh, 1)}; }

std::vector<Phase> directPhases(CollKind k, const Shape& sh, double S) {
  if (k == CollKind::kAllToAll) {
    // Pairwise: n-1 steps, each rank sends S/n to one peer; a node's G ranks share its R NICs.
    return {hop(sh.ranks() - 1, S / sh.ranks(), sh, std::max(1.0, sh.perNode / sh.nics()))};
  }
  return {hop(1, S, sh, 1)};
}

// ---- shape rules ----------------------------------------------------------------------------------

const char* hierUnfit(CollKind, const Shape& sh) {
  return sh.nodes > 1 && sh.perNode > 1 ? nullptr
                                        : "hierarchical needs more than one node and more than one rank per node";
}
const char* recDoublingUnfit(CollKind k, const Shape& sh) {
  return k == CollKind::kAllGather && !isPow2(sh.ranks())
             ? "recursive-doubling AllGather needs a power-of-two rank count (Bruck otherwise)"
             : nullptr;
}

constexpr CollKind AR = CollKind::kAllReduce, AG = CollKind::kAllGather, RS = CollKind::kReduceScatter,
                   P2P = CollKind::kP2PRing, A2A = CollKind::kAllToAll, BC = CollKind::kBroadcast;

bool has(const std::vector<CollKind>& v, CollKind k) { return std::find(v.begin(), v.end(), k) != v.end(); }

CollKind collOf(const std::string& coll) {
  auto k = fb::parseCollKind(coll);
  if (!k) {
    std::string known;
    for (auto kind : fb::allCollKinds()) known += (known.empty() ? "" : ", ") + std::string(fb::collName(kind));
    throw InputError(fmt::format("collective '{}': the model knows {}", coll, known));
  }
  return *k;
}

}  // namespace

const std::vector<AlgoDescriptor>& algoTable() {
  // Order: the ring first (the default for every collective it implements), then by kind.
  static const std::vector<AlgoDescriptor> t = {
      {Algo::kRing, "ring", {}, {AR, AG, RS, P2P, BC}, nullptr, {AR, AG, RS, P2P, BC}, {AR, AG, RS, P2P, BC},
       ringPhases,
       "AllReduce 2(n-1) hops of S/n, AllGather/ReduceScatter n-1, P2P one hop of S, Broadcast a pipelined chain "
       "(P + n - 2 hops of S/P, P pieces of 1 MiB)"},
      {Algo::kTree, "tree", {}, {AR}, nullptr, {AR}, {AR}, treePhases,
       "chain inside the node, double binary tree between nodes: 2((G-1) + ceil(log2 N)) hops carrying 2 S"},
      {Algo::kHier, "hier", {"hierarchical"}, {AR, AG, RS, P2P}, hierUnfit, {AR, AG, RS}, {}, hierPhases,
       "ring inside the node (G-1 hops of S/G), ring per rail between nodes (S/(G N), G rails over R NICs)"},
      {Algo::kRecDoubling, "recursive-doubling", {"recursive doubling", "rd"}, {AR, AG}, recDoublingUnfit, {}, {AR, AG},
       recDoublingPhases, "AllReduce log2(n) hops of S; AllGather hops of S/n, 2S/n, ... (power-of-two n)"},
      {Algo::kRabenseifner, "rabenseifner", {}, {AR}, nullptr, {}, {AR}, rabenseifnerPhases,
       "recursive halving then doubling: hops of S/2 .. S/n twice"},
      {Algo::kRecHalving, "recursive-halving", {"recursive halving", "rh"}, {RS}, nullptr, {}, {RS}, recHalvingPhases,
       "hops of S/2 .. S/n"},
      {Algo::kBruck, "bruck", {}, {AG}, nullptr, {}, {AG}, bruckPhases, "ceil(log2 n) hops carrying (n-1)/n S"},
      {Algo::kOneShot, "one-shot", {"oneshot"}, {AR}, nullptr, {}, {}, oneShotPhases,
       "one hop of (n-1) S: every rank pushes its buffer to each peer"},
      {Algo::kDirect, "direct", {"pairwise"}, {P2P, A2A}, nullptr, {A2A}, {A2A}, directPhases,
       "P2P one hop of S; AllToAll pairwise, n-1 hops of S/n (a node's ranks share its NICs)"},
  };
  return t;
}

const AlgoDescriptor& describeAlgo(Algo a) {
  for (const auto& d : algoTable())
    if (d.id == a) return d;
  return algoTable().front();
}

std::string algoName(Algo a) { return std::string(describeAlgo(a).name); }

Algo parseAlgo(const std::string& s) {
  const std::string l = text::lower(s);
  std::string names;
  for (const auto& d : algoTable()) {
    if (l == d.name) return d.id;
    for (auto al : d.aliases)
      if (l == al) return d.id;
    names += (names.empty() ? "" : ", ") + std::string(d.name);
  }
  throw InputError(fmt::format("unknown algorithm '{}' ({})", s, names));
}

std::optional<Algo> algoOfRow(const Sample& s) {
  // The typed id the suite writes (lib/collectives: hostModelAlgo, cudaModelAlgo): parsed exactly.
  for (const auto& [k, v] : s.extra) {
    if (k != kModelAlgoKey) continue;
    try {
      return parseAlgo(v);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{} {}/{} [{}] row of {} B: {}: {}", s.coll, s.impl, s.path, s.inPlace ? "in" : "out",
                                   s.bytes, kModelAlgoKey, e.what()));
    }
  }
  // Fallback, only for rows without it (files written before it, other tools' rows, NCCL's "algo"):
  // the longest name or alias the free text starts with.
  for (const auto& [k, v] : s.extra) {
    if (k != "algorithm" && k != "algo" && k != "host_algo") continue;
    const std::string t = text::lower(v);
    std::optional<Algo> best;
    std::size_t bestLen = 0;
    for (const auto& d : algoTable()) {
      std::vector<std::string_view> spellings{d.name};
      spellings.insert(spellings.end(), d.aliases.begin(), d.aliases.end());
      for (auto sp : spellings) {
        const bool word = t.size() == sp.size() || t[sp.size()] == ' ' || t[sp.size()] == '(';
        if (sp.size() > bestLen && t.size() >= sp.size() && t.compare(0, sp.size(), sp) == 0 && word) {
          best = d.id;
          bestLen = sp.size();
        }
      }
    }
    if (best) return best;
  }
  return std::nullopt;
}

const char* foldUnfit(Algo a, const Shape& sh) {
  // The fold (lib/collectives/host_algorithms.h) pairs ranks 2i, 2i+1 (one node) and renumbers the survivors; the
  // phases keep the original numbering (exchangeHop), so on N x G they put the fold on the network and the
  // survivors' exchanges (partners on other nodes) inside the node.
  const bool folds = a == Algo::kRecDoubling || a == Algo::kRabenseifner || a == Algo::kRecHalving;
  return folds && sh.nodes > 1 && sh.perNode > 1 && !isPow2(sh.ranks())
             ? "the phases do not follow the fold's renumbering of ranks"
             : nullptr;
}

Algo defaultAlgo(const std::string& coll) {
  const CollKind k = collOf(coll);
  for (const auto& d : algoTable())
    if (has(d.colls, k)) return d.id;
  throw InputError(fmt::format("collective '{}': no algorithm of the model implements it", coll));
}

std::vector<Phase> phases(const std::string& coll, Algo algo, const Shape& sh, double S) {
  const int n = sh.ranks();
  if (n < 1 || sh.nodes < 1 || sh.perNode < 1) throw InputError("the shape needs at least 1 node and 1 rank per node");
  const CollKind k = collOf(coll);
  if (n == 1) return {};  // nothing to move
  const auto& d = describeAlgo(algo);
  auto refuse = [&](const std::string& why) {
    return InputError(fmt::format("algorithm {} does not apply to {} on {} node(s) x {} rank(s): {}", d.name, coll,
                                  sh.nodes, sh.perNode, why));
  };
  if (!has(d.colls, k)) {
    std::string cs;
    for (auto c : d.colls) cs += (cs.empty() ? "" : ", ") + std::string(fb::collName(c));
    throw refuse(fmt::format("{} implements {}", d.name, cs));
  }
  if (d.unfit)
    if (const char* why = d.unfit(k, sh)) throw refuse(why);
  return d.phases(k, sh, S);
}

namespace {
std::vector<Algo> rowsFor(const std::string& coll, const Shape& sh, std::vector<CollKind> AlgoDescriptor::*list) {
  const CollKind k = collOf(coll);
  std::vector<Algo> out;
  for (const auto& d : algoTable())
    if (has(d.*list, k) && has(d.colls, k) && !(d.unfit && d.unfit(k, sh))) out.push_back(d.id);
  return out;
}
}  // namespace

std::vector<Algo> candidateAlgos(const std::string& coll, const Shape& sh) {
  return rowsFor(coll, sh, &AlgoDescriptor::projected);
}
std::vector<Algo> hostFormulas(const std::string& coll, const Shape& sh) {
  return rowsFor(coll, sh, &AlgoDescriptor::hostFormula);
}

}  // namespace fb::model

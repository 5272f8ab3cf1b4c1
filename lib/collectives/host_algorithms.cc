// Host collective algorithms: which one runs (FB_HOST_ALGO, the default switch points, the ranker),
// the placement, the scratch, and the dispatch to host_algorithms_flat.cc and _hier.cc (see
// host_algorithms.h).
#include "collectives/host_algorithms.h"
#include "collectives/host_algorithms_parts.h"

#include <bit>
#include <cstdlib>
#include <optional>
#include <utility>

#include "core/error.h"
#include "core/units.h"

namespace fb {
namespace {

// ---- choice ----

// A forced choice; for kHier, innerSet says whether the name fixed the inner algorithm.
struct Forced {
  HostChoice c;
  bool innerSet = false;
};
struct Override {
  std::optional<Forced> all;  // a plain name
  std::optional<Forced> per[4];
};

std::optional<HostAlgo> parseFlat(std::string_view n) {
  if (n == "ring") return HostAlgo::kRing;
  if (n == "rd" || n == "recursive-doubling") return HostAlgo::kRecursiveDoubling;
  if (n == "rabenseifner" || n == "rab") return HostAlgo::kRabenseifner;
  if (n == "bruck") return HostAlgo::kBruck;
  if (n == "rh" || n == "recursive-halving") return HostAlgo::kRecursiveHalving;
  return std::nullopt;
}
std::optional<Forced> parseAlgo(std::string_view n) {
  if (n == "hier" || n == "hierarchical") return Forced{{HostAlgo::kHier, HostAlgo::kRing}, false};
  if (n.starts_with("hier-")) {
    auto inner = parseFlat(n.substr(5));
    if (!inner || (*inner != HostAlgo::kRing && *inner != HostAlgo::kRecursiveDoubling &&
                   *inner != HostAlgo::kRabenseifner))
      return std::nullopt;
    return Forced{{HostAlgo::kHier, *inner}, true};
  }
  if (auto a = parseFlat(n)) return Forced{{*a, HostAlgo::kRing}, false};
  return std::nullopt;
}

bool implementsFlat(HostAlgo a, CollKind k) {
  switch (a) {
    case HostAlgo::kRing: return true;
    case HostAlgo::kRecursiveDoubling:
    case HostAlgo::kRabenseifner: return k == CollKind::kAllReduce;
    case HostAlgo::kBruck: return k == CollKind::kAllGather;
    case HostAlgo::kRecursiveHalving: return k == CollKind::kReduceScatter;
    case HostAlgo::kHier: return k == CollKind::kAllReduce || k == CollKind::kAllGather || k == CollKind::kReduceScatter;
  }
  return false;
}
// The leaders' inner algorithm: ring for every collective, rd and Rabenseifner for AllReduce.
bool implements(const HostChoice& c, CollKind k) {
  if (!implementsFlat(c.algo, k)) return false;
  return c.algo != HostAlgo::kHier || c.inner == HostAlgo::kRing || k == CollKind::kAllReduce;
}

std::size_t parsePiece() { return sizeFromEnv("FB_HOST_PIECE", kHostPieceBytes, 4u << 10, 64u << 20, "256K"); }

Override parseOverride() {
  Override o;
  const char* e = std::getenv("FB_HOST_ALGO");
  if (!e || !*e) return o;
  std::string text = e;
  auto bad = [&](const std::string& why) {
    throw ConfigError("FB_HOST_ALGO='" + text + "': " + why +
                      " (names: ring, rd, rabenseifner, bruck, rh, hier, hier-ring, hier-rd, hier-rabenseifner;"
                      " e.g. 'ring' or 'allreduce=rd,allgather=ring')");
  };
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) bad("empty item");
    std::size_t eq = item.find('=');
    if (eq == std::string::npos) {
      auto a = parseAlgo(item);
      if (!a) bad("unknown algorithm '" + item + "'");
      o.all = a;
    } else {
      auto k = parseCollKind(item.substr(0, eq));
      auto a = parseAlgo(item.substr(eq + 1));
      if (!k) bad("unknown collective '" + item.substr(0, eq) + "'");
      if (!a) bad("unknown algorithm '" + item.substr(eq + 1) + "'");
      if (!implements(a->c, *k))
        bad(hostChoiceName(a->c) + " does not implement " + std::string(collName(*k)));
      o.per[static_cast<int>(*k)] = a;
    }
    if (end == text.size()) break;
  }
  return o;
}

// Default switch points (S = the row's size in bytes): where each algorithm was fastest against
// the MPI reference on loopback TCP, np 2-4 (benchmarks/host_vs_mpi.sh with FB_HOST_ALGO; the
// figures are in the history of this file's commits):
//  * allreduce: recursive doubling up to 64 KiB, Rabenseifner up to 512 KiB, then the ring (the
//    non-power-of-two fold moves the whole vector twice more).
//  * allgather: Bruck below 256 KiB, and up to 8 MiB from 4 ranks; the ring above.
//  * reducescatter: recursive halving up to 512 KiB (2 MiB at a power-of-two count from 4 ranks,
//    no fold), the ring above.
HostAlgo defaultAlgo(CollKind k, std::size_t bytes, int n) {
  constexpr std::size_t KiB = 1024;
  switch (k) {
    case CollKind::kAllReduce:
      if (bytes <= 64 * KiB) return HostAlgo::kRecursiveDoubling;
      if (bytes <= 512 * KiB) return HostAlgo::kRabenseifner;
      return HostAlgo::kRing;
    case CollKind::kAllGather:
      return bytes < 256 * KiB || (n >= 4 && bytes <= 8192 * KiB) ? HostAlgo::kBruck : HostAlgo::kRing;
    case CollKind::kReduceScatter: {
      const bool noFold = n >= 4 && std::has_single_bit(static_cast<unsigned>(n));
      return bytes <= (noFold ? 2048 : 512) * KiB ? HostAlgo::kRecursiveHalving : HostAlgo::kRing;
    }
    case CollKind::kP2PRing: return HostAlgo::kRing;
  }
  return HostAlgo::kRing;
}

}  // namespace

std::string_view hostAlgoName(HostAlgo a) {
  switch (a) {
    case HostAlgo::kRing: return "ring";
    case HostAlgo::kRecursiveDoubling: return "recursive-doubling";
    case HostAlgo::kRabenseifner: return "rabenseifner";
    case HostAlgo::kBruck: return "bruck";
    case HostAlgo::kRecursiveHalving: return "recursive-halving";
    case HostAlgo::kHier: return "hierarchical";
  }
  return "?";
}

std::string hostChoiceName(const HostChoice& c) {
  if (c.algo != HostAlgo::kHier) return std::string(hostAlgoName(c.algo));
  return "hierarchical (" + std::string(hostAlgoName(c.inner)) + ")";
}

std::string_view hostModelAlgo(const HostChoice& c) {
  // Spelled out (not hostAlgoName) so a change of the human name leaves the typed id alone.
  switch (c.algo) {
    case HostAlgo::kRing: return "ring";
    case HostAlgo::kRecursiveDoubling: return "recursive-doubling";
    case HostAlgo::kRabenseifner: return "rabenseifner";
    case HostAlgo::kBruck: return "bruck";
    case HostAlgo::kRecursiveHalving: return "recursive-halving";
    case HostAlgo::kHier: return "hier";
  }
  return "?";
}

int HostPlacement::nodes() const {
  int m = 0;
  for (int v : nodeOf) m = std::max(m, v + 1);
  return std::max(m, 1);
}
std::vector<std::vector<int>> HostPlacement::members() const {
  std::vector<std::vector<int>> m(static_cast<std::size_t>(nodes()));
  for (int r = 0; r < nRanks; ++r) m[nodeOf.empty() ? 0 : static_cast<std::size_t>(nodeOf[r])].push_back(r);
  std::erase_if(m, [](const std::vector<int>& v) { return v.empty(); });
  return m;
}
int HostPlacement::maxPerNode() const {
  std::size_t g = 1;
  for (auto& v : members()) g = std::max(g, v.size());
  return static_cast<int>(g);
}
int HostPlacement::maxRingCrossings() const {
  if (nodeOf.empty()) return 0;
  std::vector<int> c(static_cast<std::size_t>(nodes()), 0);
  for (int r = 0; r < nRanks; ++r)
    if (nodeOf[r] != nodeOf[(r + 1) % nRanks]) ++c[nodeOf[r]];
  return *std::max_element(c.begin(), c.end());
}

std::vector<HostChoice> hostCandidates(CollKind k, const HostPlacement& p) {
  std::vector<HostChoice> v;
  for (HostAlgo a : {HostAlgo::kRing, HostAlgo::kRecursiveDoubling, HostAlgo::kRabenseifner, HostAlgo::kBruck,
                     HostAlgo::kRecursiveHalving})
    if (implementsFlat(a, k)) v.push_back({a, HostAlgo::kRing});
  if (p.nodes() > 1 && implementsFlat(HostAlgo::kHier, k)) {
    v.push_back({HostAlgo::kHier, HostAlgo::kRing});
    if (k == CollKind::kAllReduce) {
      v.push_back({HostAlgo::kHier, HostAlgo::kRecursiveDoubling});
      v.push_back({HostAlgo::kHier, HostAlgo::kRabenseifner});
    }
  }
  return v;
}

void validateHostAlgoEnv() {
  parseOverride();
  parsePiece();
}

std::size_t hostPieceBytes() {
  static const std::size_t piece = parsePiece();
  return piece;
}

HostAlgo chooseHostAlgo(CollKind k, std::size_t bytes, int n) {
  Override o = parseOverride();
  auto flat = [](const std::optional<Forced>& f) { return f && f->c.algo != HostAlgo::kHier; };
  if (flat(o.per[static_cast<int>(k)])) return o.per[static_cast<int>(k)]->c.algo;
  if (flat(o.all) && implements(o.all->c, k)) return o.all->c.algo;
  return defaultAlgo(k, bytes, n);
}

HostChoice chooseHostAlgo(CollKind k, std::size_t bytes, const HostPlacement& p, const HostRanker* ranker) {
  if (k == CollKind::kP2PRing) return {};
  Override o = parseOverride();
  std::optional<Forced> f = o.per[static_cast<int>(k)];
  if (!f && o.all && implements(o.all->c, k)) f = o.all;
  // hier without an inner name: the ranker's best hierarchical schedule, else the ring.
  if (f && f->c.algo == HostAlgo::kHier && !f->innerSet && ranker && k == CollKind::kAllReduce) {
    if (auto c = (*ranker)(k, bytes, p); c && c->algo == HostAlgo::kHier) return *c;
  }
  if (f) return f->c;
  const bool oneNode = p.nodes() <= 1;
  if (oneNode) return {defaultAlgo(k, bytes, p.nRanks), HostAlgo::kRing};
  if (ranker)
    if (auto c = (*ranker)(k, bytes, p)) return *c;
  if (p.maxPerNode() > 1) return {HostAlgo::kHier, HostAlgo::kRing};
  return {defaultAlgo(k, bytes, p.nRanks), HostAlgo::kRing};
}

HostScratch hostAlgoScratch(const HostChoice& c, const CollShape& s, const HostPlacement& p) {
  const std::size_t elt = dtypeSize(s.dtype);
  switch (c.algo) {
    case HostAlgo::kRecursiveDoubling:
    case HostAlgo::kRabenseifner: return {s.recvCount * elt, 0};
    case HostAlgo::kRecursiveHalving: return {s.sendCount * elt, s.sendCount * elt};
    case HostAlgo::kHier:
      switch (s.kind) {
        case CollKind::kAllReduce: return {s.recvCount * elt, 0};
        case CollKind::kReduceScatter: return {s.sendCount * elt, s.sendCount * elt};
        default: return {};
      }
    case HostAlgo::kRing:
    case HostAlgo::kBruck: return {};
  }
  (void)p;
  return {};
}

void runHostAlgo(const HostChoice& c, const HostOp& op) {
  using namespace hostalgo;
  if (c.algo == HostAlgo::kHier) return hierarchical(c.inner, op);
  switch (c.algo) {
    case HostAlgo::kRecursiveDoubling: return allReduceRecursiveDoubling(op);
    case HostAlgo::kRabenseifner: return allReduceRabenseifner(op);
    case HostAlgo::kBruck: return allGatherBruck(op);
    case HostAlgo::kRecursiveHalving: return reduceScatterRecursiveHalving(op);
    case HostAlgo::kRing:
    case HostAlgo::kHier: break;
  }
  FB_THROW(Error, "runHostAlgo: ", hostAlgoName(c.algo), " is run by the ring collective itself");
}

}  // namespace fb

// The host algorithm choice by the model (host_choice.h).
#include "model/host_choice.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/error.h"

namespace fb::model {
namespace {

Link constantLink(double gbps, double alphaUs, const std::string& source) {
  Link l;
  l.source = source;
  Segment s;
  s.lo = 0;
  s.hi = std::numeric_limits<std::size_t>::max();
  s.alphaUs = alphaUs;
  s.betaUsPerByte = 1e-3 / gbps;
  l.segs.push_back(s);
  return l;
}

Algo modelAlgo(fb::HostAlgo a) {
  switch (a) {
    case fb::HostAlgo::kRing: return Algo::kRing;
    case fb::HostAlgo::kRecursiveDoubling: return Algo::kRecDoubling;
    case fb::HostAlgo::kRabenseifner: return Algo::kRabenseifner;
    case fb::HostAlgo::kBruck: return Algo::kBruck;
    case fb::HostAlgo::kRecursiveHalving: return Algo::kRecHalving;
    case fb::HostAlgo::kHier: return Algo::kHier;
  }
  return Algo::kRing;
}

double hopUs(const Link& l, double bytes, double chunk) {
  const Segment& s = l.segmentFor(bytes);
  return s.alphaUs + chunk * s.betaUsPerByte;
}

// "GBPS:ALPHA" into gbps/alpha (an empty field keeps the default).
void parseLink(const std::string& all, const std::string& v, double& gbps, double& alpha) {
  auto bad = [&] {
    throw ConfigError("FB_HOST_LINKS='" + all + "': '" + v + "' is not GBPS:ALPHA_US (e.g. inter=0.125:60)");
  };
  std::size_t c = v.find(':');
  std::string g = v.substr(0, c), a = c == std::string::npos ? "" : v.substr(c + 1);
  try {
    std::size_t used = 0;
    if (!g.empty()) {
      gbps = std::stod(g, &used);
      if (used != g.size() || !(gbps > 0)) bad();
    }
    if (!a.empty()) {
      alpha = std::stod(a, &used);
      if (used != a.size() || !(alpha >= 0)) bad();
    }
  } catch (const std::logic_error&) {
    bad();
  }
}

}  // namespace

HostLinks hostLinks(double interGBps) {
  double eg = interGBps > 0 ? interGBps : 1.25, ea = 50, ig = 3.0, ia = 15;
  std::string eSrc = interGBps > 0 ? "transport's nominal rate" : "default 10 GbE", iSrc = "default loopback TCP";
  if (const char* e = std::getenv("FB_HOST_LINKS"); e && *e) {
    std::string all = e, item;
    for (std::size_t pos = 0; pos <= all.size();) {
      std::size_t end = all.find(',', pos);
      if (end == std::string::npos) end = all.size();
      item = all.substr(pos, end - pos);
      pos = end + 1;
      if (item.starts_with("inter=")) {
        parseLink(all, item.substr(6), eg, ea);
        eSrc = "FB_HOST_LINKS";
      } else if (item.starts_with("intra=")) {
        parseLink(all, item.substr(6), ig, ia);
        iSrc = "FB_HOST_LINKS";
      } else {
        throw ConfigError("FB_HOST_LINKS='" + all + "': item '" + item + "' is not inter=... or intra=...");
      }
    }
  }
  HostLinks l;
  l.inter = constantLink(eg, ea, eSrc);
  l.intra = constantLink(ig, ia, iSrc);
  return l;
}

void validateHostLinksEnv() { hostLinks(1); }

double hostTime(fb::CollKind k, const fb::HostChoice& c, double S, const fb::HostPlacement& p, const HostLinks& l) {
  const std::string coll(fb::collName(k));
  const int N = p.nodes(), G = p.maxPerNode(), n = p.nRanks;
  if (n <= 1) return 0;
  const double R = std::max(1.0, l.nicsPerNode);
  if (c.algo != fb::HostAlgo::kHier) {
    Shape sh{N, G, R};
    // Bytes on a node's NICs per hop, as a multiple of the chunk (see host_choice.h).
    const double cross = c.algo == fb::HostAlgo::kRing ? std::max(1, p.maxRingCrossings()) / R : G / R;
    // The phases place ranks in blocks; a job's placement may be interleaved or uneven, so every
    // hop of the exchange algorithms is taken to cross from all G ranks of a node (an upper bound).
    const bool exchange = c.algo != fb::HostAlgo::kRing;
    double t = 0;
    for (const Phase& ph : phases(coll, modelAlgo(c.algo), sh, S)) {
      double step = 0;
      if (ph.intra || (exchange && G > 1)) step = std::max(step, hopUs(l.intra, S, ph.chunk));
      if (ph.inter || (exchange && N > 1))
        step = std::max(step, hopUs(l.inter, S, ph.chunk * std::max(ph.interScale, cross)));
      t += ph.count * step;
    }
    return t;
  }
  // Hierarchical: into the leader, between leaders (N x 1), out of the leader.
  const double g = G - 1;
  double pre = 0, post = 0;
  switch (k) {
    case fb::CollKind::kAllReduce: pre = g * hopUs(l.intra, S, S); post = g > 0 ? hopUs(l.intra, S, g * S) : 0; break;
    case fb::CollKind::kAllGather: pre = g > 0 ? hopUs(l.intra, S, g * S / n) : 0; post = g > 0 ? hopUs(l.intra, S, g * S) : 0; break;
    case fb::CollKind::kReduceScatter: pre = g * hopUs(l.intra, S, S); post = g > 0 ? hopUs(l.intra, S, g * S / n) : 0; break;
    default: throw InputError("hierarchical: no schedule for " + coll);
  }
  double inner = 0;
  if (N > 1) {
    // The leaders' ring moves whole node blocks: with uneven nodes the largest one sets each hop.
    const double skew = c.inner == fb::HostAlgo::kRing && k != fb::CollKind::kAllReduce ? G * N / double(n) : 1.0;
    for (const Phase& ph : phases(coll, modelAlgo(c.inner), Shape{N, 1, 1}, S))
      inner += ph.count * hopUs(l.inter, S, ph.chunk * skew);
  }
  return pre + inner + post;
}

std::vector<std::pair<fb::HostChoice, double>> rankHostAlgos(fb::CollKind k, double bytes, const fb::HostPlacement& p,
                                                             const HostLinks& l) {
  std::vector<std::pair<fb::HostChoice, double>> v;
  for (const auto& c : fb::hostCandidates(k, p)) v.push_back({c, hostTime(k, c, bytes, p, l)});
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return v;
}

std::shared_ptr<const fb::HostRanker> hostRanker(HostLinks l) {
  return std::make_shared<const fb::HostRanker>(
      [l](fb::CollKind k, std::size_t bytes, const fb::HostPlacement& p) -> std::optional<fb::HostChoice> {
        if (p.nodes() <= 1 || k == fb::CollKind::kP2PRing) return std::nullopt;
        auto v = rankHostAlgos(k, static_cast<double>(bytes), p, l);
        if (v.empty()) return std::nullopt;
        return v.front().first;
      });
}

std::shared_ptr<const fb::HostRanker> hostRankerFor(fb::Transport& t, fb::Bootstrap& bs) {
  const double g = t.path().nominalGBps;
  const double slowest = bs.allReduceMax(g > 0 ? 1.0 / g : 1e30);  // seconds per GB
  return hostRanker(hostLinks(slowest < 1e29 ? 1.0 / slowest : -1));
}

}  // namespace fb::model

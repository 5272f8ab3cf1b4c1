// The host algorithm choice by the model (host_choice.h).
#include "model/host_choice.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"

namespace fb::model {
namespace {



double hopUs(const Link& l, double bytes, double chunk) {
  const Segment& s = l.segmentFor(bytes);
  return s.alphaUs + chunk * s.betaUsPerByte;
}

// An inter-node hop: at the link's own rate under a token bucket (the hop's bytes pass within it).
double interHopUs(const HostLinks& l, double bytes, double chunk) {
  if (l.interLineGBps <= 0) return hopUs(l.inter, bytes, chunk);
  return l.inter.segmentFor(bytes).alphaUs + chunk * 1e-3 / l.interLineGBps;
}
// Under a token bucket, the operation's bytes through one NIC at the sustained (shaped) rate.
double bucketFloorUs(const HostLinks& l, double bytes, double nicBytes) {
  return l.interLineGBps > 0 ? nicBytes * l.inter.segmentFor(bytes).betaUsPerByte : 0;
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

HostLinks hostLinks(double interGBps, double lineGBps, StepLatency measured) {
  double eg = interGBps > 0 ? interGBps : 1.25, ea = 50, ig = 3.0, ia = 15;
  std::string eSrc = interGBps > 0 ? "transport's nominal rate" : "default 10 GbE", iSrc = "default loopback TCP";
  double line = interGBps > 0 && lineGBps > interGBps ? lineGBps : -1;
  if (line > 0) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), " (token bucket on a %g GB/s link)", line);
    eSrc += buf;
  }
  if (measured.interUs > 0) {
    ea = measured.interUs;
    eSrc += ", latency measured";
  }
  if (measured.intraUs > 0) {
    ia = measured.intraUs;
    iSrc += ", latency measured";
  }
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
        line = -1;
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
  l.interLineGBps = line;
  return l;
}

void validateHostLinksEnv() { hostLinks(1); }

namespace {
// {time, hop sum}: the hop sum alone (no token-bucket floor) breaks ties in the ranking.
std::pair<double, double> hostTimes(fb::CollKind k, const fb::HostChoice& c, double S, const fb::HostPlacement& p,
                                    const HostLinks& l) {
  const std::string coll(fb::collName(k));
  const int N = p.nodes(), G = p.maxPerNode(), n = p.nRanks;
  if (n <= 1) return {0, 0};
  const double R = std::max(1.0, l.nicsPerNode);
  if (c.algo != fb::HostAlgo::kHier) {
    Shape sh{N, G, R};
    // Bytes on a node's NICs per hop, as a multiple of the chunk (see host_choice.h).
    const double cross = c.algo == fb::HostAlgo::kRing ? std::max(1, p.maxRingCrossings()) / R : G / R;
    // The phases place ranks in blocks; a job's placement may be interleaved or uneven, so every
    // hop of the exchange algorithms is taken to cross from all G ranks of a node (an upper bound).
    const bool exchange = c.algo != fb::HostAlgo::kRing;
    double t = 0, nicBytes = 0;
    for (const Phase& ph : phases(coll, modelAlgo(c.algo), sh, S)) {
      double step = 0;
      if (ph.intra || (exchange && G > 1)) step = std::max(step, hopUs(l.intra, S, ph.chunk));
      if (ph.inter || (exchange && N > 1)) {
        const double b = ph.chunk * std::max(ph.interScale, cross);
        step = std::max(step, interHopUs(l, S, b));
        nicBytes += ph.count * b * ph.dirShare;
      }
      t += ph.count * step;
    }
    return {std::max(t, bucketFloorUs(l, S, nicBytes)), t};
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
  double inner = 0, nicBytes = 0;
  if (N > 1) {
    // The leaders' ring moves whole node blocks: with uneven nodes the largest one sets each hop.
    const double skew = c.inner == fb::HostAlgo::kRing && k != fb::CollKind::kAllReduce ? G * N / double(n) : 1.0;
    for (const Phase& ph : phases(coll, modelAlgo(c.inner), Shape{N, 1, 1}, S)) {
      inner += ph.count * interHopUs(l, S, ph.chunk * skew);
      nicBytes += ph.count * ph.chunk * skew * ph.dirShare;
    }
  }
  // The bucket refills while the leaders wait on their node's ranks: the floor is on the whole.
  return {std::max(pre + inner + post, bucketFloorUs(l, S, nicBytes)), pre + inner + post};
}
}  // namespace

double hostTime(fb::CollKind k, const fb::HostChoice& c, double S, const fb::HostPlacement& p, const HostLinks& l) {
  return hostTimes(k, c, S, p, l).first;
}

std::vector<std::pair<fb::HostChoice, double>> rankHostAlgos(fb::CollKind k, double bytes, const fb::HostPlacement& p,
                                                             const HostLinks& l) {
  // Equal times (both at the bucket's floor): the shorter hop sum first, then the candidates' order.
  struct Ranked {
    fb::HostChoice c;
    std::pair<double, double> times;  // {time, hop sum}
  };
  std::vector<Ranked> w;
  for (const auto& c : fb::hostCandidates(k, p)) w.push_back({c, hostTimes(k, c, bytes, p, l)});
  std::stable_sort(w.begin(), w.end(), [](const Ranked& a, const Ranked& b) { return a.times < b.times; });
  std::vector<std::pair<fb::HostChoice, double>> v;
  for (const auto& e : w) v.push_back({e.c, e.times.first});
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

StepLatency stepLatency(fb::Transport& t, fb::Bootstrap& bs) {
  const int n = t.size(), me = t.rank();
  fb::HostPlacement p{t.nodeOf(), n};
  StepLatency out;
  if (p.nodeOf.empty() || p.nodes() <= 1) return out;
  const auto members = p.members();
  std::vector<int> node(static_cast<std::size_t>(n)), local(static_cast<std::size_t>(n));
  for (std::size_t a = 0; a < members.size(); ++a)
    for (std::size_t i = 0; i < members[a].size(); ++i) {
      node[static_cast<std::size_t>(members[a][i])] = static_cast<int>(a);
      local[static_cast<std::size_t>(members[a][i])] = static_cast<int>(i);
    }
  // Each rank's peer in one pattern (-1: none); a rank receives from every rank whose peer it is.
  auto measure = [&](auto peerOf) {
    std::vector<int> from;
    for (int s = 0; s < n; ++s)
      if (s != me && peerOf(s) == me) from.push_back(s);
    const int to = peerOf(me);
    std::vector<std::uint64_t> buf(1 + from.size());
    t.registerMemory(buf.data(), buf.size() * sizeof(std::uint64_t));
    auto exchange = [&] {
      const auto dl = fb::Deadline::in(std::chrono::seconds(30));
      std::vector<fb::Request> reqs;
      for (std::size_t i = 0; i < from.size(); ++i) reqs.push_back(t.irecv(from[i], &buf[1 + i], sizeof(std::uint64_t)));
      if (to >= 0 && to != me) reqs.push_back(t.isend(to, &buf[0], sizeof(std::uint64_t)));
      for (auto& r : reqs) t.wait(r, dl);
    };
    for (int i = 0; i < 3; ++i) exchange();
    double best = 1e30;
    for (int run = 0; run < 3; ++run) {
      bs.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 10; ++i) exchange();
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 10;
      best = std::min(best, bs.allReduceMax(us));
    }
    t.deregisterMemory(buf.data());
    return best;
  };
  const auto& m = members;
  out.interUs = measure([&](int r) {
    const auto& next = m[(static_cast<std::size_t>(node[r]) + 1) % m.size()];
    return next[static_cast<std::size_t>(local[r]) % next.size()];
  });
  if (p.maxPerNode() > 1)
    out.intraUs = measure([&](int r) {
      const auto& mine = m[static_cast<std::size_t>(node[r])];
      return mine.size() > 1 ? mine[(static_cast<std::size_t>(local[r]) + 1) % mine.size()] : -1;
    });
  return out;
}

std::string describe(const HostLinks& l) {
  const Segment& e = l.inter.segs.at(0);
  const Segment& i = l.intra.segs.at(0);
  char buf[512];
  std::snprintf(buf, sizeof(buf), "inter %.4g GB/s, %.1f us (%s); intra %.4g GB/s, %.1f us (%s)", e.gbps(), e.alphaUs,
                l.inter.source.c_str(), i.gbps(), i.alphaUs, l.intra.source.c_str());
  return buf;
}

std::shared_ptr<const fb::HostRanker> hostRankerFor(fb::Transport& t, fb::Bootstrap& bs, HostLinks* used) {
  // The slowest rate any rank reports (every rank must choose alike); one unknown (<= 0) = unknown.
  auto slowest = [&bs](double gbps) {
    const double secPerGB = bs.allReduceMax(gbps > 0 ? 1.0 / gbps : 1e30);
    return secPerGB < 1e29 ? 1.0 / secPerGB : -1;
  };
  const auto path = t.path();
  // The line rate behind a token bucket counts only where every rank has one.
  HostLinks l = hostLinks(slowest(path.nominalGBps), slowest(path.lineGBps), stepLatency(t, bs));
  if (used) *used = l;
  return hostRanker(l);
}

}  // namespace fb::model

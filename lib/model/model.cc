// Algorithms as phases, the fit (Eigen), links, projection. See model.h for the formulas.
#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "core/impl_facts.h"

namespace fb::model {

StepsBytes linearCost(const std::vector<Phase>& ph, LinkClass cls) {
  StepsBytes r;
  for (auto& p : ph) {
    r.steps += p.count;
    double scale = (cls == LinkClass::kInter && p.inter) ? p.interScale : 1.0;
    r.bytes += p.count * p.chunk * scale;
  }
  return r;
}

// ---- time of a step ---------------------------------------------------------------------------

namespace {
// One phase's time on its links (si, se: the segments of the links it uses, nullptr for none), and
// the same time split into what the inter-node hop's alpha and beta multiply and the rest: time =
// rest + interSteps x alpha_e + interBytes x beta_e, the bounding link chosen as at these segments.
// timeOf sums `time`; the N x G fit solves the split for alpha_e and beta_e.
struct PhaseTerms {
  double time = 0, rest = 0, interSteps = 0, interBytes = 0;
};
PhaseTerms phaseTerms(const Phase& p, const Segment* si, const Segment* se, bool pipelined) {
  PhaseTerms r;
  if (si && se && pipelined) {
    double lat = (1 - p.interShare) * si->alphaUs + p.interShare * se->alphaUs;
    double bi = p.chunk * si->betaUsPerByte, be = p.chunk * p.interScale * se->betaUsPerByte;
    double bwt = std::max(bi, be);
    r.time = p.count * (lat + bwt);
    r.interSteps = p.count * p.interShare;
    r.rest = p.count * (1 - p.interShare) * si->alphaUs;
    if (be >= bi)
      r.interBytes = p.count * p.chunk * p.interScale;
    else
      r.rest += p.count * bi;
    return r;
  }
  const double ti = si ? si->alphaUs + p.chunk * si->betaUsPerByte : 0;
  const double te = se ? se->alphaUs + p.chunk * p.interScale * se->betaUsPerByte : 0;
  double step = 0;
  if (si) step = std::max(step, ti);
  if (se) step = std::max(step, te);
  r.time = p.count * step;
  if (se && te >= step) {
    r.interSteps = p.count;
    r.interBytes = p.count * p.chunk * p.interScale;
  } else {
    r.rest = r.time;
  }
  return r;
}
// The phases of one operation: each phase's terms summed in order.
PhaseTerms phasesTerms(const std::vector<Phase>& ph, const Segment* si, const Segment* se, bool pipelined) {
  PhaseTerms sum;
  for (auto& p : ph) {
    auto r = phaseTerms(p, p.intra ? si : nullptr, p.inter ? se : nullptr, pipelined);
    sum.time += r.time;
    sum.rest += r.rest;
    sum.interSteps += r.interSteps;
    sum.interBytes += r.interBytes;
  }
  return sum;
}
}  // namespace

// ---- fit -------------------------------------------------------------------------------------

namespace {
// The segment whose measured size range holds `bytes`, else the nearest one on a log scale (a size
// between two segments' measured sizes, such as 1048572 B on 3 ranks next to a segment from 1 MiB,
// belongs to the closer one; beyond the ends, the first or last).
const Segment& nearestSegment(const std::vector<Segment>& segs, double bytes) {
  const Segment* best = &segs.front();
  double bestD = std::numeric_limits<double>::infinity();
  for (auto& s : segs) {
    double lo = std::max<double>(1, static_cast<double>(s.lo)), hi = std::max<double>(lo, static_cast<double>(s.hi));
    double b = std::max(1.0, bytes);
    double d = b < lo ? std::log(lo / b) : (b > hi ? std::log(b / hi) : 0);
    if (d <= bestD) {
      bestD = d;
      best = &s;
    }
  }
  return *best;
}
}  // namespace

const Segment& HopFit::segmentFor(double bytes) const { return nearestSegment(segs, bytes); }
const Segment& Link::segmentFor(double bytes) const { return nearestSegment(segs, bytes); }

namespace {

struct Pt {
  std::size_t bytes;
  double t;
  double steps, bytesOnHop;
  Algo algo;
  // N x G: the time the fitted link does not scale (intra-node hops), the row's phases and the intra
  // link's segment for its size.
  double rest = 0;
  std::vector<Phase> ph;
  const Segment* si = nullptr;
};

// Weighted LS on relative error: minimise sum rho((steps a + bytes b - t) / t) with a, b >= 0, rho =
// Huber's loss (k = 1.345 robust scales), solved by iteratively reweighted least squares (Eigen QR):
// one disturbed size (a CPU-starved batch on a shared machine, a size half inside a shaper's burst)
// pulls the line less than with plain squares. rss = the Huber loss of the final residuals.
struct SegFit {
  double a = 0, b = 0, rss = 0;
  bool ok = false;
};
double huber(double r, double c) { return std::fabs(r) <= c ? 0.5 * r * r : c * (std::fabs(r) - 0.5 * c); }
constexpr double kHuberFloor = 1.345 * 0.02;  // residual scale floor: 2 % (timer/scheduling noise of one batch)
SegFit solveSegment(const std::vector<Pt>& p, std::size_t i0, std::size_t i1) {
  const Eigen::Index m = static_cast<Eigen::Index>(i1 - i0);
  Eigen::MatrixXd A(m, 2);
  Eigen::VectorXd y = Eigen::VectorXd::Ones(m);
  for (Eigen::Index r = 0; r < m; ++r) {
    const auto& q = p[i0 + r];
    A(r, 0) = q.steps / q.t;
    A(r, 1) = q.bytesOnHop / q.t;
    if (q.rest != 0) y(r) = (q.t - q.rest) / q.t;  // N x G: the intra-node part taken off
  }
  Eigen::VectorXd w = Eigen::VectorXd::Ones(m);
  SegFit f;
  const double c = kHuberFloor;
  double scale = c;
  for (int iter = 0; iter < 20; ++iter) {
    Eigen::MatrixXd Aw = w.asDiagonal() * A;
    Eigen::VectorXd yw = w.asDiagonal() * y;
    Eigen::Vector2d x = Aw.colPivHouseholderQr().solve(yw);
    double a = x(0), b = x(1);
    if (!(a >= 0) || !(b > 0)) {
      // Constrained: one of the two terms at zero; keep the better of the two one-term fits.
      double bestRss = std::numeric_limits<double>::infinity();
      for (int col = 0; col < 2; ++col) {
        Eigen::VectorXd cc = Aw.col(col);
        double den = cc.squaredNorm();
        if (den <= 0) continue;
        double v = cc.dot(yw) / den;
        if (v <= 0) continue;
        double rss = (cc * v - yw).squaredNorm();
        if (rss < bestRss) {
          bestRss = rss;
          a = col == 0 ? v : 0;
          b = col == 1 ? v : 0;
        }
      }
      if (!std::isfinite(bestRss)) return f;
    }
    f.a = a;
    f.b = b;
    Eigen::VectorXd r = A * Eigen::Vector2d(a, b) - y;
    // robust scale: 1.4826 x median |residual|, at least the floor
    std::vector<double> ar(m);
    for (Eigen::Index i = 0; i < m; ++i) ar[i] = std::fabs(r(i));
    std::nth_element(ar.begin(), ar.begin() + m / 2, ar.end());
    scale = std::max(c, 1.345 * 1.4826 * ar[m / 2]);
    Eigen::VectorXd nw(m);
    for (Eigen::Index i = 0; i < m; ++i) nw(i) = std::fabs(r(i)) <= scale ? 1.0 : std::sqrt(scale / std::fabs(r(i)));
    if ((nw - w).cwiseAbs().maxCoeff() < 1e-6) break;
    w = nw;
  }
  Eigen::VectorXd r = A * Eigen::Vector2d(f.a, f.b) - y;
  f.rss = 0;
  for (Eigen::Index i = 0; i < m; ++i) f.rss += huber(r(i), c);
  f.ok = std::isfinite(f.rss);
  return f;
}

// N x G: a point's terms at inter link (a, b), the bounding link of each step chosen by the model's
// own rule (phasesTerms, as timeOf).
void linearise(Pt& x, double a, double b, bool pipelined) {
  Segment se;
  se.alphaUs = a;
  se.betaUsPerByte = b;
  auto tt = phasesTerms(x.ph, x.si, &se, pipelined);
  x.steps = tt.interSteps;
  x.bytesOnHop = tt.interBytes;
  x.rest = tt.rest;
}
// N x G: the time is piecewise linear in (a, b) (a step costs its slower link, or pipelined the larger
// bandwidth term), so a segment is solved by active sets: from each start (the network bounding the
// steps of the sizes from the k-th on and the node those below it, or the reverse; k = 0..m), fit
// (a, b) linearly on the remainder, re-decide every step's bounding link at the fit, repeat until
// the choice repeats; the fit with the lowest loss on the model's own residuals is kept.
SegFit solveMixedSegment(const std::vector<Pt>& p, std::size_t i0, std::size_t i1, bool pipelined) {
  const std::size_t m = i1 - i0;
  SegFit best;
  best.rss = std::numeric_limits<double>::infinity();
  std::set<std::vector<double>> seen;  // active sets already fitted
  auto key = [](const std::vector<Pt>& q) {
    std::vector<double> k;
    for (auto& x : q) k.insert(k.end(), {x.rest, x.steps, x.bytesOnHop});
    return k;
  };
  for (std::size_t k = 0; k <= m; ++k)
    for (int reverse = 0; reverse < 2; ++reverse) {
      if (reverse && (k == 0 || k == m)) continue;  // the same starts as k = m and k = 0
      std::vector<Pt> q(p.begin() + static_cast<std::ptrdiff_t>(i0), p.begin() + static_cast<std::ptrdiff_t>(i1));
      for (std::size_t i = 0; i < m; ++i) {
        const bool net = (i >= k) != (reverse == 1);  // 1e30: the network bounds; 0: the node does
        linearise(q[i], net ? 1e30 : 0, net ? 1e30 : 0, pipelined);
      }
      for (int round = 0; round < 30 && seen.insert(key(q)).second; ++round) {
        SegFit f = solveSegment(q, 0, q.size());
        if (!f.ok) break;
        for (auto& x : q) linearise(x, f.a, f.b, pipelined);
        double loss = 0;
        for (auto& x : q) loss += huber((x.rest + x.steps * f.a + x.bytesOnHop * f.b - x.t) / x.t, kHuberFloor);
        if (loss < best.rss) {
          best = f;
          best.rss = loss;
        }
      }
    }
  best.ok = std::isfinite(best.rss);
  return best;
}

}  // namespace

HopFit fitSeries(const Series& s, const FitOptions& opt) {
  HopFit out;
  const bool mixed = s.nNodes > 1 && s.nRanks != s.nNodes;
  if (mixed && !opt.intra) {
    out.why = fmt::format("{} ranks on {} nodes mixes intra- and inter-node hops: give the intra-node link (--intra "
                          "SRC) to fit its inter-node hop, or fit an N x G NCCL run or nccl-tests log with "
                          "`fabricbench-model nccl fit RUN` (NCCL's algorithms, the per-NIC rate; `nccl project --fit "
                          "RUN --nodes LIST` projects it)",
                          s.nRanks, s.nNodes);
    return out;
  }
  if (mixed && s.nRanks % s.nNodes != 0) {
    out.why = fmt::format("{} ranks on {} nodes: not the same number on every node (the model's shapes are N x G)",
                          s.nRanks, s.nNodes);
    return out;
  }
  if (s.nRanks < 2) {
    out.why = "one rank: nothing crosses a link";
    return out;
  }
  Shape sh;
  sh.nodes = s.nNodes > 1 ? s.nNodes : 1;
  sh.perNode = s.nNodes > 1 ? 1 : s.nRanks;
  if (mixed) sh = Shape{s.nNodes, s.nRanks / s.nNodes, opt.nicsPerNode};
  const LinkClass cls = s.nNodes > 1 ? LinkClass::kInter : LinkClass::kIntra;
  // N x G: each step timed as the implementation times it (core/impl_facts.h), as validate does.
  const fb::ImplFacts* facts = fb::findImplFacts(s.impl);
  const bool pipelined = facts && facts->pipelined;
  std::vector<Pt> pts;
  int wrongRows = 0;
  std::map<std::string, int> leftOut;  // N x G: "algorithm on n ranks: why" -> rows
  for (const auto& r : s.rows) {
    if (r.wrong > 0) {
      ++wrongRows;
      continue;
    }
    if (r.bytes == 0 || !(r.timeUs > 0)) continue;
    Algo a = Algo::kRing;
    std::vector<Phase> ph;
    // An unknown typed id (model_algo) is a broken file, not an unfit series: its InputError goes up.
    const std::optional<Algo> named = opt.forceAlgo ? opt.forceAlgo : algoOfRow(r);
    try {
      a = named ? *named : defaultAlgo(s.coll);
      ph = phases(s.coll, a, sh, static_cast<double>(r.bytes));
    } catch (const InputError& e) {
      out.why = e.what();
      return out;
    }
    if (mixed) {
      if (const char* why = foldUnfit(a, sh)) {
        ++leftOut[fmt::format("{} on {} ranks: {}", algoName(a), sh.ranks(), why)];
        continue;
      }
      const Segment* si = &opt.intra->segmentFor(static_cast<double>(r.bytes));
      pts.push_back({r.bytes, r.timeUs, 0, 0, a, 0, std::move(ph), si});
      continue;
    }
    auto lc = linearCost(ph, cls);
    pts.push_back({r.bytes, r.timeUs, lc.steps, lc.bytes, a, 0, {}, nullptr});
  }
  std::string notes;  // N x G: what was fitted, and the rows left out
  if (mixed) {
    notes = fmt::format("inter-node hop of {} nodes x {} ranks, {} NIC(s) per node, steps {}, given the intra-node link "
                        "{}",
                        sh.nodes, sh.perNode, sh.nics(), pipelined ? "pipelined" : "step-synchronous",
                        opt.intra->source);
    for (auto& [why, n] : leftOut) notes += fmt::format("; {} row(s) left out: {}", n, why);
  }
  std::sort(pts.begin(), pts.end(), [](const Pt& a, const Pt& b) { return a.bytes < b.bytes; });
  if (static_cast<int>(pts.size()) < opt.minPoints) {
    out.why = fmt::format("too short to fit: {} usable sizes (need {}){}", pts.size(), opt.minPoints,
                          wrongRows ? fmt::format(", {} rows with wrong data left out", wrongRows) : "");
    if (mixed) out.why += "; " + notes;
    return out;
  }
  out.nxg = notes;
  const std::size_t m = pts.size();
  const int mps = opt.minPointsPerSegment;
  // Try every split into 1..maxSegments contiguous segments; keep the lowest BIC.
  struct Best {
    double bic = std::numeric_limits<double>::infinity();
    std::vector<std::size_t> cuts;  // segment starts, plus m
    std::vector<SegFit> fits;
  } best;
  std::vector<std::vector<SegFit>> cache(m + 1, std::vector<SegFit>(m + 1));
  std::vector<std::vector<bool>> done(m + 1, std::vector<bool>(m + 1, false));
  auto seg = [&](std::size_t a, std::size_t b) -> const SegFit& {
    if (!done[a][b]) {
      cache[a][b] = mixed ? solveMixedSegment(pts, a, b, pipelined) : solveSegment(pts, a, b);
      done[a][b] = true;
    }
    return cache[a][b];
  };
  auto consider = [&](const std::vector<std::size_t>& cuts) {
    double rss = 0;
    std::vector<SegFit> fits;
    for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
      const auto& f = seg(cuts[k], cuts[k + 1]);
      if (!f.ok) return;
      rss += f.rss;
      fits.push_back(f);
    }
    int k = static_cast<int>(cuts.size()) - 1;
    double params = 2.0 * k + (k - 1);
    double bic = m * std::log(std::max(2 * rss / m, 1e-12)) + params * std::log(static_cast<double>(m));
    if (bic < best.bic - 1e-9) best = {bic, cuts, fits};
  };
  consider({0, m});
  if (opt.maxSegments >= 2)
    for (std::size_t c1 = mps; c1 + mps <= m; ++c1) {
      consider({0, c1, m});
      if (opt.maxSegments >= 3)
        for (std::size_t c2 = c1 + mps; c2 + mps <= m; ++c2) consider({0, c1, c2, m});
    }
  if (best.fits.empty()) {
    out.why = "no fit with positive latency and bandwidth terms";
    if (mixed) out.why += "; " + notes;
    return out;
  }
  for (std::size_t k = 0; k + 1 < best.cuts.size(); ++k) {
    Segment sg;
    sg.lo = pts[best.cuts[k]].bytes;
    sg.hi = pts[best.cuts[k + 1] - 1].bytes;
    sg.alphaUs = best.fits[k].a;
    sg.betaUsPerByte = best.fits[k].b;
    sg.points = static_cast<int>(best.cuts[k + 1] - best.cuts[k]);
    out.segs.push_back(sg);
  }
  std::vector<double> errs;
  for (std::size_t i = 0; i < m; ++i) {
    int k = 0;
    while (k + 1 < static_cast<int>(out.segs.size()) && i >= best.cuts[k + 1]) ++k;
    const auto& sg = out.segs[k];
    FitPoint fp;
    fp.bytes = pts[i].bytes;
    fp.measuredUs = pts[i].t;
    if (mixed)  // the model's own time of the row at the fitted inter link
      fp.fittedUs = phasesTerms(pts[i].ph, pts[i].si, &sg, pipelined).time;
    else
      fp.fittedUs = pts[i].steps * sg.alphaUs + pts[i].bytesOnHop * sg.betaUsPerByte;
    fp.errPct = (fp.fittedUs - fp.measuredUs) / fp.measuredUs * 100;
    fp.segment = k;
    fp.algo = pts[i].algo;
    errs.push_back(std::fabs(fp.errPct));
    out.points.push_back(fp);
  }
  out.medianAbsErrPct = median(errs);
  out.maxAbsErrPct = *std::max_element(errs.begin(), errs.end());
  // Knee: size where the last segment's latency and bandwidth terms are equal (bisection in log size).
  {
    const auto& sg = out.segs.back();
    Algo a = opt.forceAlgo ? *opt.forceAlgo : defaultAlgo(s.coll);
    auto diff = [&](double S) {
      if (mixed) {  // the inter-node hop's own terms at S
        auto tt = phasesTerms(phases(s.coll, a, sh, S), &opt.intra->segmentFor(S), &sg, pipelined);
        return tt.interSteps * sg.alphaUs - tt.interBytes * sg.betaUsPerByte;
      }
      auto lc = linearCost(phases(s.coll, a, sh, S), cls);
      return lc.steps * sg.alphaUs - lc.bytes * sg.betaUsPerByte;
    };
    if (sg.alphaUs <= 0) {
      out.kneeBytes = 0;
    } else if (sg.betaUsPerByte <= 0) {
      out.kneeBytes = std::numeric_limits<double>::infinity();
    } else {
      double lo = 1, hi = 1e15;
      for (int it = 0; it < 200; ++it) {
        double mid = std::sqrt(lo * hi);
        (diff(mid) > 0 ? lo : hi) = mid;
      }
      out.kneeBytes = lo;
    }
  }
  out.usable = out.medianAbsErrPct <= opt.maxMedianErrPct;
  if (!out.usable)
    out.why = fmt::format("too noisy to fit: median |error| {:.1f}% > {:.0f}%{}", out.medianAbsErrPct,
                          opt.maxMedianErrPct,
                          // NCCL's own algorithms (Tree, NVLS, protocols) are not these phases
                          mixed && facts && facts->ncclAlgorithms
                              ? "; an N x G NCCL run is fitted with NCCL's algorithms by `fabricbench-model nccl fit RUN`"
                              : "");
  return out;
}

// ---- links -----------------------------------------------------------------------------------

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

Link linkFromFit(const HopFit& f, const std::string& source) {
  if (!f.usable) throw InputError(fmt::format("{}: not usable for a projection: {}", source, f.why));
  Link l;
  l.source = "measured: " + source;
  l.measured = true;
  l.segs = f.segs;
  if (!f.why.empty()) l.notes = f.why;
  if (!f.nxg.empty()) l.notes += (l.notes.empty() ? "" : "; ") + f.nxg;
  return l;
}

Link linkFromSpec(const Spec& s, double eff, double lat) {
  Link l;
  double e = eff >= 0 ? eff : s.efficiency;
  double a = lat >= 0 ? lat : s.latencyUs;
  if (!(e > 0 && e <= 1)) throw InputError(fmt::format("spec {}: efficiency {} must be in (0, 1]", s.name, e));
  if (!(a >= 0)) throw InputError(fmt::format("spec {}: latency {} us must be >= 0", s.name, a));
  l.source = fmt::format("spec: {} ({}, {:.2f} GB/s x efficiency {:.2f}{}, {:.1f} us per hop{})", s.name, s.rateText,
                         s.lineGbps, e, eff >= 0 ? " (given)" : " (default)", a, lat >= 0 ? " (given)" : " (default)");
  l.measured = false;
  Segment sg;
  sg.lo = 0;
  sg.hi = std::numeric_limits<std::size_t>::max();
  sg.alphaUs = a;
  sg.betaUsPerByte = 1e-3 / (s.lineGbps * e);
  l.segs.push_back(sg);
  if (eff < 0 || lat < 0)
    l.notes = fmt::format("{} defaults ({}): replace with a measurement", s.name, s.defaultsSource);
  return l;
}

// ---- projection ------------------------------------------------------------------------------

// nccl-tests' busbw / algbw, from the collective's descriptor (lib/collectives).
double busbwFactor(const std::string& coll, int n) {
  auto k = fb::parseCollKind(coll);
  if (!k) throw InputError(fmt::format("collective '{}': no bus factor known", coll));
  return fb::busBwFactor(*k, std::max(1, n));
}

double timeOf(const std::string& coll, Algo algo, const Shape& sh, double S, const Inputs& in) {
  auto ph = phases(coll, algo, sh, S);
  const Segment* si = nullptr;
  const Segment* se = nullptr;
  for (auto& p : ph) {
    if (p.intra && !(in.intraFree && !in.intra)) {
      if (!in.intra) throw InputError(fmt::format("{} ranks per node need an intra-node link (--intra)", sh.perNode));
      si = &in.intra->segmentFor(S);
    }
    if (p.inter) {
      if (!in.inter) throw InputError(fmt::format("{} nodes need an inter-node link (--inter)", sh.nodes));
      se = &in.inter->segmentFor(S);
    }
  }
  return phasesTerms(ph, si, se, in.pipelined).time;
}

Projection project(const std::string& coll, const Shape& sh, double S, const Inputs& in, std::optional<Algo> force) {
  if (sh.nodes < 1) throw InputError("N = 0 nodes: a projection needs at least 1 node");
  if (sh.perNode < 1) throw InputError("G = 0 ranks per node: a projection needs at least 1");
  if (!(S > 0)) throw InputError("size must be > 0 bytes");
  Projection pr;
  pr.coll = coll;
  pr.shape = sh;
  pr.bytes = S;
  std::vector<Algo> cands = force ? std::vector<Algo>{*force} : candidateAlgos(coll, sh);
  double best = std::numeric_limits<double>::infinity();
  for (Algo a : cands) {
    double t = timeOf(coll, a, sh, S, in);
    pr.candidates.push_back({a, t});
    if (t < best) {
      best = t;
      pr.algo = a;
    }
  }
  pr.timeUs = best;
  pr.algbwGBps = best > 0 ? S / (best * 1e3) : 0;
  pr.busbwGBps = pr.algbwGBps * busbwFactor(coll, sh.ranks());
  std::string inputs;
  if (sh.perNode > 1 && in.intra) inputs += "intra: " + in.intra->source;
  if (sh.nodes > 1 && in.inter) inputs += std::string(inputs.empty() ? "" : "; ") + "inter: " + in.inter->source;
  pr.inputs = inputs;
  return pr;
}

}  // namespace fb::model

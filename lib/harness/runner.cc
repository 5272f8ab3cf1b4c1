#include "harness/runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <span>

#include <fmt/format.h>

#include "bootstrap/agree.h"
#include "core/error.h"
#include "core/stats.h"
#include "core/timer_names.h"

namespace fb {

std::string_view timerName(Timer t) { return t == Timer::kNcclTests ? kTimerNcclTests : kTimerRank; }

std::string_view rankTimeName(RankTime r) {
  switch (r) {
    case RankTime::kRank0: return "rank0";
    case RankTime::kAvg: return "avg";
    case RankTime::kMin: return "min";
    case RankTime::kMax: return "max";
  }
  return "max";
}

namespace {

// Every rank's doubles (same length on every rank), indexed [rank][i].
std::vector<std::vector<double>> gatherDoubles(Bootstrap& bs, const std::vector<double>& mine) {
  auto all = bs.allGather(std::as_bytes(std::span<const double>(mine.data(), mine.size())));
  std::vector<std::vector<double>> out;
  for (const auto& b : all) {
    std::vector<double> v(b.size() / sizeof(double));
    if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(double));
    out.push_back(std::move(v));
  }
  return out;
}

double combine(Bootstrap& bs, double mine, RankTime how) {
  auto all = gatherDoubles(bs, {mine});
  double acc = all.at(0).at(0);
  for (std::size_t r = 1; r < all.size(); ++r) {
    double v = all[r].at(0);
    switch (how) {
      case RankTime::kRank0: break;
      case RankTime::kAvg: acc += v; break;
      case RankTime::kMin: acc = std::min(acc, v); break;
      case RankTime::kMax: acc = std::max(acc, v); break;
    }
  }
  if (how == RankTime::kAvg) acc /= static_cast<double>(all.size());
  return acc;
}

}  // namespace

std::chrono::milliseconds batchBudget(int ops, std::size_t bytes, double lastRate) {
  double rate = lastRate > 0 ? lastRate / kDeadlineSlack : kFloorRateBytesPerS;
  double s = static_cast<double>(std::max(ops, 0)) * static_cast<double>(bytes) / rate;
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::min(s, 1e7) * 1000.0));
}

Sample Runner::run(Collective& coll, const CollShape& shape) {
  using Clock = std::chrono::steady_clock;
  agree(bs_, coll.impl() + " prepare", [&] { coll.prepare(shape); });
  // Each batch: --timeout plus what `ops` operations of this size need at a slow but healthy rate.
  double lastRate = lastRate_.count(&coll) ? lastRate_[&coll] : 0;
  std::chrono::milliseconds budget{0};
  int budgetOps = 0;
  auto deadline = [&](int ops) {
    budget = batchBudget(ops, shape.bytes, lastRate);
    budgetOps = ops;
    return Deadline::in(cfg_.timeout + budget);
  };
  // A time-out names the flag that sets it, and what the deadline was made of.
  auto timed = [&](auto&& fn) {
    try {
      return fn();
    } catch (const TimeoutError& e) {
      throw TimeoutError(fmt::format("{} [deadline {:.0f} s = --timeout {} s + {:.0f} s for {} x {} B; raise --timeout "
                                     "(-T) if the link is slow but healthy]",
                                     e.what(), (cfg_.timeout + budget).count() / 1000.0, cfg_.timeout.count() / 1000,
                                     budget.count() / 1000.0, budgetOps, shape.bytes));
    }
  };
  if (cfg_.warmupIters > 0) timed([&] { return coll.runBatch(cfg_.warmupIters, deadline(cfg_.warmupIters)); });

  // R timed batches; each one's per-operation time combined over ranks.
  const int maxRepeat = cfg_.repeat > 0 ? cfg_.repeat : kAutoRepeat;
  const double iters = std::max(cfg_.iters, 1);
  std::vector<double> perOp;  // seconds per operation, one per batch
  double spent = 0;
  for (int rep = 0; rep < maxRepeat; ++rep) {
    bs_.barrier();
    auto t0 = Clock::now();
    double own = timed([&] { return coll.runBatch(cfg_.iters, deadline(cfg_.iters)); });
    double host = std::chrono::duration<double>(Clock::now() - t0).count();
    double mine = (cfg_.timer == Timer::kNcclTests ? host : own) / iters;
    perOp.push_back(combine(bs_, mine, cfg_.rankTime));
    if (cfg_.repeat == 0) {
      // Auto: stop once this size's batches took the budget (the same verdict on every rank).
      spent += bs_.allReduceMax(host);
      if (spent * 1000.0 >= static_cast<double>(kAutoRepeatBudget.count())) break;
    }
  }

  // --per-op: every operation of one more batch timed on its own; op i's time is the slowest
  // rank's op i (each rank times its own ops).
  double p50 = -1, p99 = -1;
  std::vector<double> ops;
  if (cfg_.perOp) {
    bs_.barrier();
    auto mine = timed([&] { return coll.runPerOp(cfg_.iters, deadline(cfg_.iters)); });
    auto all = gatherDoubles(bs_, mine);
    ops.assign(mine.size(), 0.0);
    for (const auto& r : all)
      for (std::size_t i = 0; i < ops.size() && i < r.size(); ++i) ops[i] = std::max(ops[i], r[i]);
    if (!ops.empty()) {
      p50 = stats::upperMedian(ops) * 1e6;  // nccl-tests' -I p50: for 40 operations the 21st fastest
      p99 = stats::percentile(ops, 99) * 1e6;
    }
  }

  try {
    coll.afterTiming();  // a note on the row; a failure there must not leave this rank out of the check
  } catch (const std::exception&) {
  }
  std::int64_t wrong = -1;
  if (cfg_.checkRounds > 0) {
    std::int64_t local = 0;
    for (int round = 0; round < cfg_.checkRounds; ++round) {
      if (round == 0 && cfg_.corrupt && cfg_.corrupt->first == bs_.rank())
        coll.corruptNextCheck(cfg_.corrupt->second);
      local += timed([&] { return coll.check(round + 2, deadline(1)); });
    }
    wrong = bs_.allReduceSum(local);
  }

  Sample s;
  s.coll = rowName(shape);  // "allreduce", "allreduce(prod)", "broadcast(root=2)"
  s.impl = coll.impl();
  PathInfo p = coll.path();
  s.path = p.label;
  s.extra = p.details;
  s.dtype = std::string(dtypeName(shape.dtype));
  s.inPlace = shape.inPlace;
  s.bytes = shape.bytes;
  s.count = shape.paramCount;
  s.nRanks = shape.nRanks;
  s.iters = cfg_.iters;
  s.timer = rowTimerName(timerName(cfg_.timer), s.impl);  // rank-events, rank-clock or nccl-tests
  s.rankTime = std::string(rankTimeName(cfg_.rankTime));
  s.repeats = static_cast<int>(perOp.size());
  s.timeUs = stats::median(perOp) * 1e6;  // an even count takes the mean of the two middle batches
  for (double t : perOp) s.batchUs.push_back(t * 1e6);
  for (double t : ops) s.perOpUs.push_back(t * 1e6);
  s.timeUsMin = *std::min_element(perOp.begin(), perOp.end()) * 1e6;
  s.timeUsMax = *std::max_element(perOp.begin(), perOp.end()) * 1e6;
  if (s.bytes > 0 && s.timeUsMax > 0) lastRate_[&coll] = static_cast<double>(s.bytes) / (s.timeUsMax * 1e-6);
  s.p50Us = p50;
  s.p99Us = p99;
  double sec = s.timeUs * 1e-6;
  s.algBwGBps = sec > 0 ? static_cast<double>(s.bytes) / sec / 1e9 : 0;
  // One rank crosses no link: busbw 0 for every collective (broadcast's and the P2P ring's factor
  // of 1 would otherwise call a local copy a link's bandwidth).
  s.busBwGBps = shape.nRanks > 1 ? s.algBwGBps * busBwFactor(shape.kind, shape.nRanks) : 0.0;
  s.wrong = wrong;
  // The nominal rate is the slowest rank's (a link is as fast as its slower end); unknown on any
  // rank = unknown.
  const double nominal = p.nominalGBps;
  double slowest = std::numeric_limits<double>::infinity();
  for (const auto& r : gatherDoubles(bs_, {nominal > 0 ? nominal : -1.0})) slowest = std::min(slowest, r.at(0));
  if (slowest > 0 && std::isfinite(slowest) && shape.nRanks > 1) s.pctNominal = 100.0 * s.busBwGBps / slowest;
  return s;
}

}  // namespace fb

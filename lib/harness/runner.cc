#include "harness/runner.h"

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "core/error.h"

namespace fb {

void agreeOrThrow(Bootstrap& bs, const std::string& what, const std::function<void()>& fn) {
  std::exception_ptr err;
  std::string msg;
  char kind = 'E';  // E error, U unavailable (skip), C bad input (exit 2)
  try {
    fn();
  } catch (const UnavailableError& e) {
    err = std::current_exception();
    msg = e.what();
    kind = 'U';
  } catch (const ConfigError& e) {
    err = std::current_exception();
    msg = e.what();
    kind = 'C';
  } catch (const std::exception& e) {
    err = std::current_exception();
    msg = e.what();
  }
  // Everyone learns who failed and why (the first failing rank's message).
  std::string mine = err ? std::string(1, kind) + msg : std::string();
  auto all = bs.allGatherStrings(mine);
  if (err) std::rethrow_exception(err);
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (all[r].empty()) continue;
    std::string text = what + ": rank " + std::to_string(r) + " failed: " + all[r].substr(1);
    if (all[r][0] == 'U') throw UnavailableError(text);
    if (all[r][0] == 'C') throw ConfigError(all[r].substr(1));
    throw Error(text);
  }
}

std::chrono::milliseconds batchBudget(int ops, std::size_t bytes, double lastRate) {
  double rate = lastRate > 0 ? lastRate / kDeadlineSlack : kFloorRateBytesPerS;
  double s = static_cast<double>(std::max(ops, 0)) * static_cast<double>(bytes) / rate;
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::min(s, 1e7) * 1000.0));
}

Sample Runner::run(Collective& coll, const CollShape& shape) {
  agreeOrThrow(bs_, "prepare", [&] { coll.prepare(shape); });
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
  bs_.barrier();
  double mine = timed([&] { return coll.runBatch(cfg_.iters, deadline(cfg_.iters)); });
  double slowest = bs_.allReduceMax(mine);

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
  if (shape.bytes > 0 && slowest > 0 && cfg_.iters > 0)
    lastRate_[&coll] = static_cast<double>(shape.bytes) / (slowest / cfg_.iters);

  Sample s;
  s.coll = std::string(collName(shape.kind));
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
  s.timeUs = cfg_.iters > 0 ? slowest / cfg_.iters * 1e6 : 0;
  double sec = s.timeUs * 1e-6;
  s.algBwGBps = sec > 0 ? static_cast<double>(s.bytes) / sec / 1e9 : 0;
  s.busBwGBps = s.algBwGBps * busBwFactor(shape.kind, shape.nRanks);
  s.wrong = wrong;
  for (auto& [k, v] : p.details) {
    if (k == "nominal_GBps") {
      double nominal = std::stod(v);
      if (nominal > 0) s.pctNominal = 100.0 * s.busBwGBps / nominal;
    }
  }
  return s;
}

}  // namespace fb

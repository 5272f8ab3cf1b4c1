#include "harness/runner.h"

#include <exception>

#include "bootstrap/agree.h"
#include "core/error.h"

namespace fb {

Sample Runner::run(Collective& coll, const CollShape& shape) {
  agree(bs_, coll.impl() + " prepare", [&] { coll.prepare(shape); });
  auto deadline = [&] { return Deadline::in(cfg_.timeout); };
  if (cfg_.warmupIters > 0) coll.runBatch(cfg_.warmupIters, deadline());
  bs_.barrier();
  double mine = coll.runBatch(cfg_.iters, deadline());
  double slowest = bs_.allReduceMax(mine);

  std::int64_t wrong = -1;
  if (cfg_.checkRounds > 0) {
    std::int64_t local = 0;
    for (int round = 0; round < cfg_.checkRounds; ++round) {
      if (round == 0 && cfg_.corrupt && cfg_.corrupt->first == bs_.rank())
        coll.corruptNextCheck(cfg_.corrupt->second);
      local += coll.check(round + 2, deadline());
    }
    wrong = bs_.allReduceSum(local);
  }

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

#include "app/plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "app/gbench_flags.h"
#include "core/error.h"
#include "core/units.h"

namespace fb {

std::vector<Point> planPoints(const Options& o, const Backend& be, int nRanks, const std::set<std::string>& done) {
  std::vector<Point> points;
  auto sizes = sizeSweep(o.minBytes, o.maxBytes, o.stepFactor, o.stepBytes);
  for (CollKind k : o.colls) {
    const CollDescriptor& d = describe(k);
    const std::vector<ReduceOp> ops = d.reduces ? o.ops : std::vector<ReduceOp>{ReduceOp::kSum};
    for (ReduceOp op : ops)
    for (DataType dt : o.dtypes) {
      for (bool inPlace : o.placements) {
        if (inPlace && !d.hasInPlace) continue;
        std::vector<std::size_t> byteList = sizes;
        if (!o.counts.empty()) {
          byteList.clear();
          for (std::size_t c : o.counts)
            byteList.push_back(c * dtypeSize(dt) * (d.splitPerRank ? static_cast<std::size_t>(nRanks) : 1));
        }
        for (std::size_t bytes : byteList) {
          std::string name = fmt::format("{}/{}/{}", d.name, be.label(), bytes);
          if (dt != DataType::kFloat32) name += fmt::format("/{}", dtypeName(dt));
          if (inPlace) name += "/inplace";
          if (op != ReduceOp::kSum) name += fmt::format("/{}", opName(op));
          if (d.needsRoot && o.root != 0) name += fmt::format("/root{}", o.root);
          if (!benchmarkSelected(o.gb, name)) continue;
          if (done.count(rowKey(d.name, be.entry->name, dtypeName(dt), inPlace, bytes))) continue;
          points.push_back({name, CollRequest{k, dt, inPlace, op, d.needsRoot ? o.root : 0}, bytes});
        }
      }
    }
  }
  return points;
}

bool RunPlan::empty() const {
  return std::all_of(points.begin(), points.end(), [](const auto& p) { return p.empty(); });
}

std::vector<PlannedRow> RunPlan::rows() const {
  std::vector<PlannedRow> out;
  for (std::size_t b = 0; b < backends.size(); ++b)
    for (auto& pt : points[b]) out.push_back({backends[b].label() + "/" + std::string(collName(pt.req.kind)), pt.bytes});
  return out;
}

RunPlan makePlan(const std::vector<Backend>& backends, const Options& o, int nRanks, const std::set<std::string>& done) {
  RunPlan plan;
  plan.backends = backends;
  for (auto& be : plan.backends) plan.points.push_back(planPoints(o, be, nRanks, done));
  // A filter that selects nothing: say what the names are (the same on every rank).
  if (plan.empty()) {
    Options all = o;
    all.gb.filter.clear();
    std::vector<std::string> names;
    for (auto& be : plan.backends)
      for (auto& pt : planPoints(all, be, nRanks, done)) names.push_back(pt.name);
    plan.filterNote = filterHint(o.gb, names);
  }
  return plan;
}

RunPlan makePlan(Bootstrap& bs, const Options& o, const std::set<std::string>& done) {
  std::vector<Backend> backends;
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, std::string>> skipped;
  for (const auto& t : o.transports) {
    const BackendEntry* e = findBackend(t);
    if (!e) continue;  // validated by parseOptions
    if (!e->built) {
      notes.push_back("skipped " + e->name + ": " + e->notBuilt);
      skipped.emplace_back(e->name, e->notBuilt);
      continue;
    }
    try {
      for (const auto& v : e->variants(bs, o)) backends.push_back({e, v});
    } catch (const UnavailableError& err) {
      notes.push_back("skipped " + e->name + ": " + err.what());
      skipped.emplace_back(e->name, err.what());
    }
  }
  RunPlan plan = makePlan(backends, o, bs.size(), done);
  plan.notes = std::move(notes);
  plan.skipped = std::move(skipped);
  return plan;
}

}  // namespace fb

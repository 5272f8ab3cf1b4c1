// The run plan: the backends asked for (backend table entries and their variants, e.g. NCCL's
// paths) x collective descriptors x reduction operators x dtypes x placements x sizes, in run
// order. Every rank builds the same plan; a point is one row (one Google Benchmark benchmark)
// named <coll>/<impl>[:<path>]/<bytes>[/<dtype>][/inplace][/<op>][/root<r>].
#pragma once
#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "app/backends.h"
#include "app/options.h"
#include "app/progress.h"
#include "app/run_recorder.h"  // rowKey
#include "bootstrap/bootstrap.h"
#include "collectives/collective.h"

namespace fb {

// One backend variant that produces rows, e.g. {"tcp"}, {"nccl", "nvlink"}.
struct Backend {
  const BackendEntry* entry;
  std::string path;  // "" when the implementation has one path
  std::string label() const { return path.empty() ? entry->name : entry->name + ":" + path; }
};

// One benchmark (= one row).
struct Point {
  std::string name;
  CollRequest req;
  std::size_t bytes;
};

// The points of one backend, in run order, that pass --benchmark_filter (so a backend none of
// whose benchmarks would run is never opened) and, with --resume, are not measured yet (`done`
// holds their rowKey()s).
std::vector<Point> planPoints(const Options& o, const Backend& be, int nRanks, const std::set<std::string>& done);

struct RunPlan {
  std::vector<Backend> backends;
  std::vector<std::vector<Point>> points;  // per backend
  std::vector<std::string> notes;          // "skipped <backend>: why"
  std::vector<std::pair<std::string, std::string>> skipped;  // backend, why
  std::string filterNote;                  // a --benchmark_filter that selects nothing: the names there are
  bool empty() const;
  std::vector<PlannedRow> rows() const;     // for the progress line: "<label>/<coll>", bytes
};

// The backends asked for, in order, from the backend table, and their points. Nothing is opened;
// variants (NCCL's paths for --path=auto) are asked for on every rank at the same point.
// `variants` defaults to each entry's own (tests pass one without a Bootstrap).
RunPlan makePlan(Bootstrap& bs, const Options& o, const std::set<std::string>& done);
RunPlan makePlan(const std::vector<Backend>& backends, const Options& o, int nRanks, const std::set<std::string>& done);

}  // namespace fb

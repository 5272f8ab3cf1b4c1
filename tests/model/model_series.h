// A measured series built by hand for the model's tests: rows of (bytes, time us), none wrong, each naming
// `algo` in its "algorithm" text when given.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "report/series.h"

inline fb::Series testSeries(const std::string& coll, int ranks, int nodes,
                             const std::vector<std::pair<std::size_t, double>>& pts, const std::string& impl = "tcp",
                             const std::string& algo = "") {
  fb::Series s;
  s.coll = coll;
  s.impl = impl;
  s.path = "test";
  s.dtype = "float32";
  s.nRanks = ranks;
  s.nNodes = nodes;
  for (auto& [b, t] : pts) {
    fb::Sample r;
    r.coll = coll;
    r.impl = impl;
    r.bytes = b;
    r.timeUs = t;
    r.wrong = 0;
    r.nRanks = ranks;
    r.nNodes = nodes;
    if (!algo.empty()) r.extra = {{"algorithm", algo}};
    s.rows.push_back(r);
  }
  return s;
}

// The statistics behind the summaries of report.md and the report tool (summary.h). A "series"
// is one curve: the rows of one run with the same collective, dtype, implementation, path and
// placement, sorted by size.
//
// Definitions (also printed in every report):
//   plateau busbw = the median busbw over the series' rows whose size is >= 1/4 of the largest
//                   size measured in that series (with a x2 sweep: the top three sizes).
//   floor time    = the smallest time_us over the series' rows with 0 < size <= 8 KiB.
//   Rows with wrong > 0 are left out of both (their numbers are not valid) and flagged; rows of
//   one rank (no link crossed) have no plateau.
//   Never a mean over all sizes: small sizes are latency-bound, large ones bandwidth-bound.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/sample.h"
#include "core/stats.h"

namespace fb {

constexpr std::size_t kFloorMaxBytes = 8192;        // small-message floor: sizes in (0, 8 KiB]
constexpr double kPlateauFraction = 0.25;           // plateau: sizes >= max/4

struct Series {
  std::string run;     // run label ("" inside a single-run report)
  std::string coll, impl, path, dtype;
  bool inPlace = false;
  int nRanks = 0, nNodes = 0;
  std::vector<Sample> rows;  // sorted by bytes; one row per size (the last one given wins)
  // "impl/path [out]", prefixed by "run: " when run is not empty.
  std::string label() const;
  std::string implPath() const { return impl + "/" + path; }
};

// Groups rows into series, keeping the order in which each series first appears.
std::vector<Series> groupSeries(const std::vector<Sample>& rows, const std::string& run = "");

// NaN when the series has no valid row in range.
double plateauBusBw(const std::vector<Sample>& rows);

// Fair plateaus. A ratio of two plateaus is taken over the sizes both series measured: `rows`
// restricted to the sizes `other` has a valid row at.
std::vector<Sample> rowsAtCommonSizes(const std::vector<Sample>& rows, const std::vector<Sample>& other);
// A plateau taken where the curve still rises is not one: "" when the busbw of the largest size
// is within kPlateauRise of the size before it, else "not a plateau: the sweep stops at 64 MiB
// (busbw +12% from 32 MiB)".
constexpr double kPlateauRise = 0.05;
std::string plateauWarning(const std::vector<Sample>& rows);
// The nominal rate the rows were held against (GB/s; from busbw and pct_nominal), and its basis
// ("eth0: 10000 Mb/s (sysfs link speed)", "same host (loopback path), no nominal rate"); -1 / ""
// when the rows carry none.
double nominalGBps(const std::vector<Sample>& rows);
std::string nominalBasis(const std::vector<Sample>& rows);
double smallMessageFloorUs(const std::vector<Sample>& rows);
// Median of a list (core/stats.h: mean of the two middle values for an even count; NaN when empty).
using stats::median;

// How `pattern` names the series (--baseline, --price): 1 its full label ("impl/path [out]", with
// "run: " in front across runs), 2 "impl/path" or "run:impl/path", 3 the path or the impl, 4 any
// part of the label (so "socket" picks the NET/Socket series); 0 = not at all. The most exact
// level that matches anything decides.
int seriesMatchLevel(const Series& s, const std::string& pattern);
bool seriesMatches(const Series& s, const std::string& pattern);
// The distinct paths ("run:impl/path", placements merged) the pattern names at its most exact
// level: none = no match, more than one = ambiguous (the report tool refuses it, listing these).
std::vector<std::string> patternCandidates(const std::vector<Series>& all, const std::string& pattern);

// A row whose numbers count: wrong = 0, or -1 (not checked).
inline bool validRow(const Sample& s) { return s.wrong <= 0; }
// False for a collective row measured by one rank: no link is crossed, its busbw is 0 for every
// collective ("no link"), and it stays out of plateaus, plateau ratios, per-size busbw ratios and
// the console headline (rows of old files that gave broadcast or the P2P ring a busbw included).
// fabricbench-peer's rows (one process, copies between GPUs or to the host: peer_copy_*,
// host_copy, ...) are not collectives and keep theirs.
inline bool crossesLink(const Sample& s) {
  if (s.nRanks > 1) return true;
  const std::string base = s.coll.substr(0, s.coll.find('('));  // "allreduce(prod)", "broadcast(root=2)"
  for (const char* c : {"allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "p2pring"})
    if (base == c) return false;
  return true;
}

}  // namespace fb

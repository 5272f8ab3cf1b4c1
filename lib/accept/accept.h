// fabricbench --accept: the pure parts of acceptance (no communication here, so the tests can
// drive them with synthetic matrices): the all-pairs schedule, the verdict over a pair matrix,
// the expectation file, sha256 for the evidence file. lib/app/accept_command.cc measures.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace fb::accept {

// ---------------------------------------------------------------------------------------------
// Schedule: the circle method. n units -> n-1 rounds (n even) or n rounds (n odd, one unit sits
// out each round: the bye) of disjoint pairs; every unordered pair exactly once.
using Pair = std::pair<int, int>;  // first < second
std::vector<std::vector<Pair>> circleSchedule(int n);
// Disjoint batches of the given pairs (greedy), for retests: no unit is in two pairs of a batch.
std::vector<std::vector<Pair>> disjointBatches(const std::vector<Pair>& pairs);

// ---------------------------------------------------------------------------------------------
// Thresholds and expectations.
struct Thresholds {
  double lineRateFloor = 0.90;    // --accept-floor: pair bandwidth >= floor x the line rate, where known
  double bestBwFraction = 0.93;   // ClusterKit: a pair below 93 % of the best pair's bandwidth is slow
  double bestLatFactor = 2.1;     // ClusterKit: a pair above 2.1 x the best pair's latency is slow
  double madK = 3.0;              // MAD outlier: farther than k x 1.4826 x MAD from the median ...
  double madMinEffect = 0.25;     // ... and bandwidth at least 25 % below the median (a MAD near 0 flags nothing),
  double madMinEffectLat = 0.50;  // latency at least 50 % above it
  // Latency needs both: a MAD outlier AND above bestLatFactor x the best pairs (see slowPairs).
  // Stalls: a round trip of the latency test at least max(stallMinUs, stallFloorFactor x the pair's
  // own shortest round trip) long waited for a retransmission (Linux's tail loss probe fires no
  // sooner than 10 ms, its RTO no sooner than 200 ms) or a descheduled rank. A pair stalls too often
  // when it has >= stallMinCount stalls, its stall fraction farther than madK x 1.4826 x MAD above
  // the pairs' median fraction and >= stallFactor x that median: packet loss on that path.
  double stallMinUs = 10000;
  double stallFloorFactor = 10;
  int stallMinCount = 5;
  double stallFactor = 3.0;
  double nodeFraction = 0.75;     // a unit with >= 75 % (and >= 2) of its pairs slow is a node fault
  double fabricFraction = 0.5;    // more than half of all pairs slow: a fabric-wide spread, no one node or link
};

// --expect FILE (schema fabricbench-expect/1):
//   {"schema": "fabricbench-expect/1",
//    "pairs": [{"path": "tcp", "bytes": 16777216, "min_GBps": 9.0},
//              {"path": "tcp", "bytes": 8, "max_latency_us": 40}],
//    "collectives": [{"impl": "tcp", "collective": "allreduce", "bytes": 1048576,
//                     "min_busbw_GBps": 1.0, "max_latency_us": 900}]}
struct PairExpect {
  std::string path;
  std::size_t bytes = 0;
  std::optional<double> minGBps, maxLatUs;
};
struct CollExpect {
  std::string impl, collective;
  std::size_t bytes = 0;
  std::optional<double> minBusBwGBps, maxLatUs;
};
struct Expectations {
  std::vector<PairExpect> pairs;
  std::vector<CollExpect> collectives;
  std::string source;  // file name
};
// Throws ConfigError naming the file and the problem (the caller exits 2). knownPaths: the
// pair paths this build can measure (an unknown path is bad input).
Expectations parseExpectations(const std::string& text, const std::string& source,
                               const std::vector<std::string>& knownPaths);
Expectations readExpectations(const std::string& file, const std::vector<std::string>& knownPaths);
// "Accept this as the baseline": an expectation file from a run folder's acceptance.json (and
// collectives/table.csv when present): minimum = margin x measured median, maximum latency =
// measured median / margin.
nlohmann::json baselineFromRun(const std::string& runDir, double margin);

// ---------------------------------------------------------------------------------------------
// One path's pair matrix, and the verdict over it.
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
struct PairMatrix {
  std::string path;                    // "tcp", "mpi", "verbs"
  int n = 0;
  std::vector<double> bw;              // n x n, GB/s per direction (symmetric), NaN = not measured
  // n x n, us, NaN = not measured: the latency floor, the shortest half round trip of every
  // repetition of the pair (first round and retests). Host scheduling only adds to a round trip,
  // so the floor is the path's; the median is kept beside it for the report.
  std::vector<double> lat;
  std::vector<double> lineRate;        // n x n, GB/s nominal, NaN/negative = unknown
  std::vector<double> latMedian;       // n x n, us: median half round trip (reported, not judged)
  // n x n: the latency test's round trips that stalled (countStalls) and the round trips measured,
  // NaN = not measured; of several measurements (retests) the one with the smaller stall fraction.
  std::vector<double> stalls, trips;
  std::size_t bwBytes = 0, latBytes = 0;
  explicit PairMatrix(int units = 0)
      : n(units), bw(std::size_t(units) * units, kNaN), lat(std::size_t(units) * units, kNaN),
        lineRate(std::size_t(units) * units, kNaN), latMedian(std::size_t(units) * units, kNaN),
        stalls(std::size_t(units) * units, kNaN), trips(std::size_t(units) * units, kNaN) {}
  double& at(std::vector<double>& v, int a, int b) { return v[std::size_t(a) * n + b]; }
  double get(const std::vector<double>& v, int a, int b) const { return v[std::size_t(a) * n + b]; }
  void set(int a, int b, double bwv, double latv, double rate) {
    at(bw, a, b) = at(bw, b, a) = bwv;
    at(lat, a, b) = at(lat, b, a) = latv;
    at(lineRate, a, b) = at(lineRate, b, a) = rate;
  }
  void setStalls(int a, int b, double stalled, double measured) {
    at(stalls, a, b) = at(stalls, b, a) = stalled;
    at(trips, a, b) = at(trips, b, a) = measured;
  }
  // stalls / trips of the pair, NaN when not measured
  double stallFraction(int a, int b) const {
    double s = get(stalls, a, b), t = get(trips, a, b);
    return std::isfinite(s) && std::isfinite(t) && t > 0 ? s / t : kNaN;
  }
};

// Round trips (us) of one pair's latency test that stalled: at least max(t.stallMinUs,
// t.stallFloorFactor x the shortest of them).
int countStalls(const std::vector<double>& roundTripsUs, const Thresholds& t);

struct Stats {
  double median = kNaN, mad = kNaN, best = kNaN;
  // The reference of the ClusterKit rules: the 90th percentile pair (10th for latency), not the
  // single best, so that one lucky pair does not make every other pair slow.
  double ref = kNaN;
  int count = 0;
};
Stats statsOf(std::vector<double> v, bool higherIsBetter);

struct PairFlag {
  Pair pair;
  std::vector<std::string> why;  // relative reasons (ClusterKit rules, MAD)
  bool stalled = false;          // one of them is the stall rule (packet loss)
};
struct ThresholdFail {
  std::string row;  // "tcp 16777216 B node-a <-> node-b: 4.1 GB/s < 90 % of line rate 12.5 GB/s"
};
struct Suspect {
  std::string kind;               // "node" | "link" | "pair" (2 units: node or link cannot be told apart)
                                  // | "fabric" (most pairs slow: no node or link stands out)
  std::vector<int> units;         // 1 (node) or 2 (link, pair)
  std::string path;
  std::vector<std::string> why;   // measured evidence
  std::vector<std::string> cause; // joined: doctor differences, counters, link facts (filled by the caller)
  bool stalled = false;           // a pair of it flagged by the stall rule: retransmissions are evidence
};
struct PathVerdict {
  std::string path;
  Stats bw, lat;
  Stats stall;  // the pairs' stall fractions (higherIsBetter = false)
  std::vector<PairFlag> slow;          // pairs slow by the relative rules
  std::vector<ThresholdFail> failures; // absolute thresholds (line-rate floor, --expect)
  std::vector<Suspect> suspects;
};

// Pairs slow by the relative rules (against the best pair and the median/MAD) — what a retest
// re-measures.
std::vector<PairFlag> slowPairs(const PairMatrix& m, const Thresholds& t);
// What a retest round re-measures: the slow pairs, and the pairs below an absolute threshold (the
// line-rate floor, an --expect minimum or maximum latency), so that one dip does not fail a pair.
std::vector<Pair> retestPairs(const PairMatrix& m, const Thresholds& t, const Expectations& e);
// The whole verdict on one path. names[i]: unit i's name for the texts.
PathVerdict judgePath(const PairMatrix& m, const Thresholds& t, const Expectations& e,
                      const std::vector<std::string>& names);

// ---------------------------------------------------------------------------------------------
// CPU contention, the evidence of a busy node (a CPU hog): counters of this process and node,
// in ms, for the before/after deltas of the pair test.
//   "cpu run-queue wait ms (rank)": this process's threads' time runnable but not running
//     (/proc/self/task/*/schedstat, 2nd field): another process had the CPU; "cpu on-CPU ms
//     (rank)": their time running (1st field);
//   "cpu pressure some ms (node)": /proc/pressure/cpu "some" total (PSI, where the kernel has it).
inline const std::string kRankWait = "cpu run-queue wait ms (rank)", kRankRun = "cpu on-CPU ms (rank)";
std::map<std::string, long long> cpuContentionCounters();
// Whether one unit's counter delta over the pair test explains a slow unit, judged against the
// median unit (a counter rising alike everywhere explains nothing): the line of evidence, or "".
// seconds: the pair test's wall time.
std::string counterCause(const std::string& key, double delta, const std::vector<double>& allUnits, double seconds);
// Evidence beside a pair that stalls (packet loss): a unit's TCP retransmissions over the pair test
// when above the median unit's, as a line; "" otherwise or for another counter. Weaker than
// counterCause's bar (far above the median, +100): a shaped link retransmits too, so the count
// alone names nothing; it backs a stall verdict.
std::string retransEvidence(const std::string& key, double delta, const std::vector<double>& allUnits);
// Busy nodes: units whose rank waited for a CPU far beyond the median unit (in time and as a share
// of its runnable time), or whose node CPU pressure rose far above the median's; with that line. A node fault by itself, slow pairs or not: its ranks delay every collective.
// deltas[u]: unit u's counter deltas over the pair test.
std::vector<std::pair<int, std::string>> busyUnits(const std::vector<std::map<std::string, double>>& deltas, double seconds);

// ---------------------------------------------------------------------------------------------
std::string sha256Hex(const std::string& data);
std::string sha256File(const std::string& path);  // "" when unreadable

// Exit codes of the command: 0 accepted, 1 a threshold or suspect fails, 2 bad input, 4 partial.
int combineExit(int a, int b);

}  // namespace fb::accept

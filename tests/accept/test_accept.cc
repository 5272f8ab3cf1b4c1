// lib/accept: the circle schedule and retest batches, the CPU and counter causes, the expectation
// file and baseline, sha256, exit codes; and the doctor's --require on recorded fixture machines.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include "accept/accept.h"
#include "core/error.h"
#include "doctor/doctor.h"
#include "topology/machine.h"

using namespace fb::accept;

TEST_CASE("circle schedule: every pair exactly once, rounds disjoint, n=2..64") {
  for (int n = 2; n <= 64; ++n) {
    auto rounds = circleSchedule(n);
    INFO("n = " << n);
    REQUIRE(static_cast<int>(rounds.size()) == (n % 2 == 0 ? n - 1 : n));
    std::set<Pair> seen;
    for (const auto& r : rounds) {
      std::set<int> busy;
      REQUIRE(static_cast<int>(r.size()) == n / 2);  // n/2 pairs, odd n: one bye
      for (const auto& p : r) {
        REQUIRE(p.first < p.second);
        REQUIRE(p.first >= 0);
        REQUIRE(p.second < n);
        REQUIRE(busy.insert(p.first).second);  // disjoint within the round
        REQUIRE(busy.insert(p.second).second);
        REQUIRE(seen.insert(p).second);        // never twice
      }
    }
    REQUIRE(static_cast<int>(seen.size()) == n * (n - 1) / 2);  // every pair
  }
  REQUIRE(circleSchedule(1).empty());
  REQUIRE(circleSchedule(0).empty());
}

TEST_CASE("disjoint batches of retest pairs") {
  std::vector<Pair> ps = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {4, 5}};
  auto b = disjointBatches(ps);
  std::set<Pair> all;
  for (const auto& batch : b) {
    std::set<int> busy;
    for (const auto& p : batch) {
      REQUIRE(busy.insert(p.first).second);
      REQUIRE(busy.insert(p.second).second);
      all.insert(p);
    }
  }
  REQUIRE(all.size() == ps.size());
  REQUIRE(b.size() == 3);  // unit 0 is in three pairs
}

TEST_CASE("busy node: a rank waiting for a CPU far beyond the median unit") {
  const std::string w = kRankWait, r = kRankRun;
  // 10 s pair test; the others waited ~1 s per ~0.5 s on a CPU (shared cores), unit 3 waited 4 s
  // per 0.5 s: 30 % of the test more, 8 ms per ms against 2
  std::vector<double> waits = {1000, 1100, 900, 4000, 1050, 950}, runs = {500, 550, 450, 500, 520, 480};
  std::vector<std::map<std::string, double>> d(6);
  for (int u = 0; u < 6; ++u) d[u] = {{w, waits[u]}, {r, runs[u]}};
  auto b = busyUnits(d, 10.0);
  REQUIRE(b.size() == 1);
  REQUIRE(b[0].first == 3);
  REQUIRE(b[0].second.find("waited for a CPU 40 % of the 10.0 s pair test (median unit 10 %), 8 ms per ms it ran (median unit 2)") !=
          std::string::npos);
  // 1.9 s: 9 % of the test beyond the median (under 10 %): not busy; nor 2x a tiny median by 0.1 s
  d[3][w] = 1900;
  REQUIRE(busyUnits(d, 10.0).empty());
  for (auto& x : d) x[w] = 50;
  d[3][w] = 100;
  REQUIRE(busyUnits(d, 10.0).empty());
  // rank 0 waiting 3 s more because it ran 3x as long (the same wait per ms on a CPU): not busy
  for (int u = 0; u < 6; ++u) d[u] = {{w, waits[u]}, {r, runs[u]}};
  d[3] = {{w, 1000}, {r, 500}};
  d[0] = {{w, 4000}, {r, 1900}};
  REQUIRE(busyUnits(d, 10.0).empty());
  // the rank counters alone give no counter line (busyUnits judges them together)
  REQUIRE(counterCause(w, 4000, {1000, 4000, 900}, 10.0).empty());
  // node-wide PSI counts the same way; other counters never make a unit busy
  std::vector<std::map<std::string, double>> e = {{{"cpu pressure some ms (node)", 0}, {"eth0 rx_errors", 0}},
                                                  {{"cpu pressure some ms (node)", 3000}, {"eth0 rx_errors", 0}},
                                                  {{"cpu pressure some ms (node)", 10}, {"eth0 rx_errors", 900}}};
  auto be = busyUnits(e, 5.0);
  REQUIRE(be.size() == 1);
  REQUIRE(be[0].first == 1);
  // the counter lines: retransmissions only far above the median, error counters above it
  REQUIRE(counterCause("tcp RetransSegs", 100, {0, 10, 100, 20}, 5.0).empty());  // median 15: needs > 115
  REQUIRE(!counterCause("tcp RetransSegs", 400, {0, 10, 400, 20}, 5.0).empty());
  REQUIRE(!counterCause("eth0 rx_errors", 3, {0, 0, 3}, 5.0).empty());
  REQUIRE(counterCause("eth0 rx_errors", 0, {0, 0, 3}, 5.0).empty());
}

TEST_CASE("cpu contention counters of this process") {
  auto c = cpuContentionCounters();
  REQUIRE(c.count("cpu run-queue wait ms (rank)") == 1);  // /proc/self/task/*/schedstat
  REQUIRE(c["cpu run-queue wait ms (rank)"] >= 0);
  REQUIRE(c.count(kRankRun) == 1);
  REQUIRE(c[kRankRun] >= 0);
}

TEST_CASE("expectation file: good and malformed") {
  const std::vector<std::string> paths = {"tcp", "mpi", "verbs", "nccl"};
  auto e = parseExpectations(R"({"schema": "fabricbench-expect/1",
     "pairs": [{"path": "tcp", "bytes": 16777216, "min_GBps": 9.5}, {"path": "mpi", "bytes": 8, "max_latency_us": 40}],
     "collectives": [{"impl": "tcp", "collective": "allreduce", "bytes": 1048576, "min_busbw_GBps": 1.0}]})",
                             "x.json", paths);
  REQUIRE(e.pairs.size() == 2);
  REQUIRE(*e.pairs[0].minGBps == 9.5);
  REQUIRE(!e.pairs[0].maxLatUs);
  REQUIRE(*e.pairs[1].maxLatUs == 40);
  REQUIRE(e.collectives.size() == 1);
  REQUIRE(e.collectives[0].collective == "allreduce");
  const char* bad[] = {
      "",                                                                     // not JSON
      "[1,2]",                                                                // not an object
      R"({"pairs": []})",                                                     // no schema
      R"({"schema": "fabricbench-expect/2", "pairs": [{"path":"tcp","bytes":8,"min_GBps":1}]})",
      R"({"schema": "fabricbench-expect/1"})",                               // nothing expected
      R"({"schema": "fabricbench-expect/1", "pairs": [{"path":"ib","bytes":8,"min_GBps":1}]})",   // unknown path
      R"({"schema": "fabricbench-expect/1", "pairs": [{"path":"tcp","bytes":-8,"min_GBps":1}]})",
      R"({"schema": "fabricbench-expect/1", "pairs": [{"path":"tcp","bytes":8}]})",              // no limit
      R"({"schema": "fabricbench-expect/1", "pairs": [{"path":"tcp","bytes":8,"min_GBps":"fast"}]})",
      R"({"schema": "fabricbench-expect/1", "pairs": [{"path":"tcp","bytes":8,"min_GBps":0}]})",
      R"({"schema": "fabricbench-expect/1", "pairs": [{"path":"tcp","bytes":8,"min_GBps":1,"typo":2}]})",
      R"({"schema": "fabricbench-expect/1", "pairs": {"path":"tcp"}})",
      R"({"schema": "fabricbench-expect/1", "collectives": [{"impl":"tcp","bytes":8,"min_busbw_GBps":1}]})",
      R"({"schema": "fabricbench-expect/1", "extra": 1, "pairs": [{"path":"tcp","bytes":8,"min_GBps":1}]})",
  };
  for (const char* b : bad) {
    INFO(b);
    REQUIRE_THROWS_AS(parseExpectations(b, "bad.json", paths), fb::ConfigError);
  }
  REQUIRE_THROWS_AS(readExpectations("/nonexistent/expect.json", paths), fb::ConfigError);
}

TEST_CASE("baseline from a run folder round-trips through the parser") {
  namespace fs = std::filesystem;
  fs::path d = fs::temp_directory_path() / ("fb_accept_baseline_" + std::to_string(::getpid()));
  fs::create_directories(d);
  {
    std::ofstream out(d / "acceptance.json");
    out << R"({"paths": [{"path": "tcp", "skipped": "", "bw_bytes": 1048576, "lat_bytes": 8,
               "bw": {"median": 4.0}, "lat": {"median": 20.0}},
              {"path": "verbs", "skipped": "no RDMA device"}]})";
  }
  auto j = baselineFromRun(d.string(), 0.9);
  auto e = parseExpectations(j.dump(), "baseline", {"tcp", "mpi", "verbs", "nccl"});
  REQUIRE(e.pairs.size() == 2);
  REQUIRE(*e.pairs[0].minGBps == Approx(3.6));
  REQUIRE(e.pairs[0].bytes == 1048576);
  REQUIRE(*e.pairs[1].maxLatUs == Approx(20.0 / 0.9));
  REQUIRE_THROWS_AS(baselineFromRun((d / "none").string(), 0.9), fb::ConfigError);
  REQUIRE_THROWS_AS(baselineFromRun(d.string(), 1.5), fb::ConfigError);
  fs::remove_all(d);
}

TEST_CASE("sha256 known answers") {
  REQUIRE(sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  REQUIRE(sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  REQUIRE(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  REQUIRE(sha256Hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("exit codes combine: bad input > fail > partial > ok") {
  REQUIRE(combineExit(0, 0) == 0);
  REQUIRE(combineExit(0, 4) == 4);
  REQUIRE(combineExit(4, 1) == 1);
  REQUIRE(combineExit(1, 2) == 2);
  REQUIRE(combineExit(2, 4) == 2);
}

// --doctor --require on recorded machines (tests/data/doctor, see tests/doctor/make_fixtures.py).
TEST_CASE("doctor --require: a node lacking the device fails the row") {
  using namespace fb::doctor;
  auto fixture = [](const std::string& n) { return Machine(std::string(FB_DOCTOR_DATA) + "/" + n); };
  auto verdictOf = [](const NodeReport& r, const std::string& id) {
    for (const auto& f : r.findings)
      if (f.id == id) return f;
    FAIL("no finding " << id);
    return Finding{};
  };
  Hooks h;
  auto noGpu = checkNode(fixture("roce_ok"), h, "roce_ok", {"gpu", "rdma"});
  REQUIRE(verdictOf(noGpu, "require.gpu").verdict == Verdict::kFail);
  REQUIRE(verdictOf(noGpu, "require.gpu").evidence.find("no GPU") != std::string::npos);
  REQUIRE(verdictOf(noGpu, "require.rdma").verdict == Verdict::kPass);
  auto down = checkNode(fixture("ib_down"), h, "ib_down", {"rdma"});
  REQUIRE(verdictOf(down, "require.rdma").verdict == Verdict::kFail);
  REQUIRE(verdictOf(down, "require.rdma").evidence.find("no active RDMA port") != std::string::npos);
  auto gpus = checkNode(fixture("h200x2"), h, "h200x2", {"gpu", "nccl"});
  REQUIRE(verdictOf(gpus, "require.gpu").verdict == Verdict::kPass);
  REQUIRE(verdictOf(gpus, "require.nccl").verdict == Verdict::kFail);  // no NCCL version in the hooks
  h.versions["nccl"] = "2.21.5";
  auto withNccl = checkNode(fixture("h200x2"), h, "h200x2", {"nccl"});
  REQUIRE(verdictOf(withNccl, "require.nccl").verdict == Verdict::kPass);
  auto rep = aggregate({noGpu, gpus});
  REQUIRE(rep.exitCode() == 1);
  bool named = false;
  for (const auto& r : rep.rows)
    if (r.id == "require.gpu" && r.verdict == Verdict::kFail) named = r.nodes == std::vector<std::string>{"roce_ok"};
  REQUIRE(named);
}

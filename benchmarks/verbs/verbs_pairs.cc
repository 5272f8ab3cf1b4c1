// fabricbench-verbs' measurements: rank pairs, the bw and lat loops, the run folder.
#include "verbs_pairs.h"
#include "rc_pair.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/core.h>
#include <iostream>
#include <numeric>
#include <set>
#include <vector>

#include "bootstrap/mpi_bootstrap.h"
#include "bootstrap/thread_bootstrap.h"
#include "core/error.h"
#include "core/sample.h"
#include "core/stats.h"
#include "core/units.h"
#include "report/fingerprint.h"
#include "app/run_recorder.h"
#include "report/run_folder.h"
#include "transport/verbs/discovery.h"
#include "transport/verbs/verbs.h"
#include "bootstrap/socket_pair_bootstrap.h"


#include <optional>

#include "bootstrap/agree.h"

namespace fb::verbs {
namespace {

// stats::percentile (nearest rank, q in 0..100); 0 where no sample came back, as the table prints.
double percentile(const std::vector<double>& v, double q) { return v.empty() ? 0 : stats::percentile(v, q); }

}  // namespace

// The settings, checked on this rank alone: ConfigError (exit 2) or UnavailableError (77).
Selection validate(const Args& a, int ranks, std::vector<std::size_t>& sizes) {
  if (a.test != "bw" && a.test != "lat" && a.test != "both")
    throw ConfigError("--test must be bw, lat or both, not '" + a.test + "'");
  if (ranks < 2 || ranks % 2)
    throw ConfigError("fabricbench-verbs needs an even number of ranks (pairs), got " + std::to_string(ranks));
  if (a.txDepth < 1 || a.txDepth > 8192) throw ConfigError("--tx-depth must be 1..8192");
  if (a.iters < 0 || a.iters > 100000000) throw ConfigError("-n must be 1..1e8");
  if (a.timer != "steady" && a.timer != "tsc") throw ConfigError("--timer must be steady or tsc, not '" + a.timer + "'");
#ifndef FB_VERBS_HAVE_TSC
  if (a.timer == "tsc") throw ConfigError("--timer tsc: this CPU architecture has no time-stamp counter here");
#endif
  if (a.port < 1 || a.port > 65535) throw ConfigError("--port must be 1..65535");
  if (a.timeoutS < 1) throw ConfigError("--timeout must be at least 1 s");
  sizes.clear();
  for (const auto& s : a.sizes) sizes.push_back(parseSize(s));
  for (auto s : sizes)
    if (s == 0 || s > (std::size_t(1) << 30)) throw ConfigError("sizes must be 1 B .. 1 GiB");
  return select(discoverDevices(), a.t);
}

// One row of the result folder: a pair's WRITE bandwidth or latency at one size.
Sample pairRow(const std::string& test, const std::string& path, std::size_t bytes, int iters, int ranks, int nodes,
               std::int64_t wrong, int first) {
  Sample s;
  s.coll = test;  // "write_bw", "write_lat"
  s.impl = "verbs";
  s.path = path;
  s.dtype = "uint8";
  s.bytes = bytes;
  s.count = bytes;
  s.nRanks = ranks;
  s.nNodes = nodes;
  s.iters = iters;
  s.timer = "steady";
  s.rankTime = "rank0";
  s.wrong = wrong;
  s.extra = {{"pair", fmt::format("{}-{}", first, first + 1)}};
  return s;
}

// Rank 0 claims the result folder once every rank accepted the settings; every rank hears the
// outcome (a taken --run-id: exit 2 everywhere, nothing measured).
bool openFolder(Bootstrap& bs, const Args& a, ClaimedRun& run) {
  try {
    run = claimRun(bs, folderRequest(a.resultsDir, a.runId, "verbs", !a.noFiles));
  } catch (const ConfigError& e) {
    if (bs.rank() == 0) ::fb::printLine("fabricbench-verbs: error: ", e.what());
    return false;
  }
  return true;
}

// run.json's fingerprint: every rank's, with what verbs discovered; rank 0 begins the folder.
void beginFolder(Bootstrap& bs, const Args& a, const ClaimedRun& run, RunRecorder& recorder,
                 const std::string& mpiVersion, int argc, char** argv) {
  if (a.noFiles) return;
  FingerprintOptions fpo;
  fpo.mpiVersion = mpiVersion;
  fpo.extra = {{"rank", bs.rank()}};
  fpo.rdmaDiscovery = discover(a.t);
  auto fps = bs.allGatherStrings(collectLocalFingerprint(fpo).dump());
  auto hosts = bs.hostnames();
  if (bs.rank() != 0) return;
  RunMeta meta;
  meta.runId = run.runId;
  meta.commandLine = joinArgs(argc, argv);
  meta.fingerprint = runFingerprint(fps, hosts);
  meta.config = {{"test", a.test},     {"sizes", a.sizes},       {"iters", a.iters}, {"tx_depth", a.txDepth},
                 {"cq_mod", a.cqMod},  {"warmup", a.warmup},     {"check", a.check}, {"packed", a.packed},
                 {"timer", a.timer},   {"ib_dev", a.t.verbsDevice}, {"ib_port", a.t.verbsPort},
                 {"gid_index", a.t.gidIndex}};
  recorder.beginFiles((std::filesystem::path(a.resultsDir) / run.runId).string(), meta);
}

int measure(Bootstrap& bs, const Args& a, const char* launch, const Selection& sel,
            const std::vector<std::size_t>& sizes, RunRecorder& recorder);

// Rank 0 could not write its files: every rank stops after this size, together.
void stopIfNotWriting(Bootstrap& bs, RunRecorder& recorder) {
  if (bs.allReduceSum(bs.rank() == 0 && recorder.stopRequested() ? 1 : 0) > 0)
    throw RunStopped("writing the result files stopped on rank 0");
}

int run(Bootstrap& bs, const Args& a, const char* launch, int argc, char** argv, const std::string& mpiVersion) {
  const bool root = bs.rank() == 0;
  // Settings, agreed by all ranks before anything else (agree(): the most severe verdict wins).
  std::vector<std::size_t> sizes;
  std::optional<Selection> sel;
  try {
    agree(bs, "fabricbench-verbs", [&] { sel = validate(a, bs.size(), sizes); });
  } catch (const UnavailableError& e) {
    if (root) std::printf("SKIPPED: verbs unavailable: %s\n", e.what());
    return 77;
  } catch (const ConfigError& e) {
    if (root) std::fprintf(stderr, "fabricbench-verbs: error: %s\n", e.what());
    return 2;
  }
  ClaimedRun claimed;
  if (!openFolder(bs, a, claimed)) return 2;
  RunRecorder recorder;
  recorder.tool = "fabricbench-verbs";
  // SIGCONT checkpoints run.json and report.md; SIGTERM/SIGINT/SIGHUP finalise them (rank 0).
  if (root) recorder.handleSignals(true, "fabricbench-verbs");
  beginFolder(bs, a, claimed, recorder, mpiVersion, argc, argv);
  try {
    int rc = measure(bs, a, launch, *sel, sizes, recorder);
    RunSummary sum;
    sum.ok = rc == 0;
    sum.status = rc == 0 ? "passed: wrong = 0 in every row" : "failed: wrong bytes (see the rows)";
    sum.exitCode = rc;
    sum.measured = {"verbs"};
    recorder.end(sum);
    return rc;
  } catch (const RunStopped&) {
    // Agreed by every rank after a size: a clean end, exit 1. Rank 0 said why already.
    RunSummary sum;
    sum.ok = false;
    sum.status = "failed: writing the result files stopped after " + std::to_string(recorder.rows) + " rows";
    sum.exitCode = 1;
    recorder.end(sum);
    return 1;
  } catch (const std::exception& e) {
    RunSummary sum;
    sum.ok = false;
    sum.status = std::string("aborted: ") + e.what();
    sum.exitCode = 1;
    recorder.end(sum);
    throw;
  }
}

// WRITE bandwidth per size, every pair at once: a row per pair, one RESULT line. Returns the sizes
// with wrong bytes.
int measureBw(Bootstrap& bs, const Args& a, const Selection& sel, Pair& pair, const std::vector<std::size_t>& sizes,
              int nodes, RunRecorder& recorder) {
  const bool root = bs.rank() == 0;
  int failures = 0;
  int iters = a.iters ? a.iters : 5000;
  if (root) std::printf("%-10s %-8s %-7s %12s %10s %10s %8s\n", "#test", "#bytes", "#iters", "BW[MB/s]", "BW[GB/s]", "Mpps", "wrong");
  for (std::size_t s : sizes) {
    if (a.warmup > 0) {
      if (!pair.driver()) pair.postDoneRecv();
      bs.barrier();
      pair.writeBw(s, a.warmup, a.txDepth, a.cqMod);
    }
    pair.fillSend(s);
    pair.clearRecv(s);
    if (!pair.driver()) pair.postDoneRecv();
    bs.barrier();
    double sec = pair.writeBw(s, iters, a.txDepth, a.cqMod);
    bs.barrier();  // the driver's completions mean the data is in the partner's memory
    std::int64_t wrong = a.check && !pair.driver() ? pair.countWrong(s, false) : 0;
    std::int64_t wrongAll = bs.allReduceSum(wrong);
    std::vector<double> secs(bs.size());
    auto gathered = bs.allGatherStrings(fmt::format("{:.9f}", sec));
    double sumBw = 0;
    for (int r = 0; r < bs.size(); r += 2) {
      double t = std::stod(gathered[r]);
      double bps = double(s) * iters / t;
      sumBw += bps;
      if (!root) continue;
      std::printf("%-10s %-8zu %-7d %12.2f %10.4f %10.4f %8lld   pair %d-%d\n", "write_bw", s, iters, bps / 1048576.0,
                  bps / 1e9, iters / t / 1e6, (long long)wrongAll, r, r + 1);
      Sample row = pairRow("write_bw", sel.summary(), s, iters, bs.size(), nodes, wrongAll, r);
      row.timeUs = t / iters * 1e6;
      row.algBwGBps = row.busBwGBps = bps / 1e9;
      row.extra.emplace_back("mbps", fmt::format("{:.2f}", bps / 1048576.0));
      row.extra.emplace_back("mpps", fmt::format("{:.4f}", iters / t / 1e6));
      row.extra.emplace_back("tx_depth", std::to_string(a.txDepth));
      recorder.add(row, "verbs");
    }
    if (root)
      std::printf("RESULT test=write_bw bytes=%zu iters=%d pairs=%d mbps=%.2f gbps=%.4f wrong=%lld\n", s, iters,
                  bs.size() / 2, sumBw / 1048576.0, sumBw / 1e9, (long long)wrongAll);
    if (wrongAll) ++failures;
    stopIfNotWriting(bs, recorder);
  }
  return failures;
}

// WRITE latency per size (half round trips): a row per pair, one RESULT line for pair 0-1. Returns
// the sizes with wrong bytes.
int measureLat(Bootstrap& bs, const Args& a, const Selection& sel, Pair& pair, const std::vector<std::size_t>& sizes,
               int nodes, RunRecorder& recorder) {
  const bool root = bs.rank() == 0;
  int failures = 0;
  int iters = a.iters ? a.iters : 1000;
  if (iters < 2) iters = 2;
  if (root)
    std::printf("%-10s %-8s %-7s %10s %12s %10s %10s %10s %8s\n", "#test", "#bytes", "#iters", "t_min[us]",
                "t_typical", "t_avg", "t_max", "t_99%", "wrong");
  for (std::size_t s : sizes) {
    pair.fillSend(s);
    pair.clearRecv(s);
    bs.barrier();
    auto half = pair.writeLat(s, iters, a.timer == "tsc");
    if (root && !a.dump.empty()) {
      std::FILE* f = std::fopen(a.dump.c_str(), "a");
      if (!f) FB_THROW(IoError, "--dump-samples ", a.dump, ": cannot open for writing");
      std::fprintf(f, "# write_lat %zu B, %d iterations, half round trip per iteration [us] (timer %s)\n", s, iters,
                   a.timer.c_str());
      for (double h : half) std::fprintf(f, "%.3f\n", h);
      std::fclose(f);
    }
    bs.barrier();
    std::int64_t wrong = a.check ? pair.countWrong(s, true) : 0;
    std::int64_t wrongAll = bs.allReduceSum(wrong);
    double med = percentile(half, 50);
    double avg = half.empty() ? 0 : std::accumulate(half.begin(), half.end(), 0.0) / double(half.size());
    if (root && a.timer == "tsc")
      std::printf("# time-stamp counter: %.1f MHz (measured against CLOCK_MONOTONIC over the loop)\n", pair.tscMhz());
    auto gathered = bs.allGatherStrings(fmt::format("{:.4f} {:.4f} {:.4f} {:.4f} {:.4f}", percentile(half, 0), med, avg,
                                                    percentile(half, 100), percentile(half, 99)));
    for (int r = 0; r < bs.size(); r += 2) {
      double mn, md, av, mx, p99;
      std::sscanf(gathered[r].c_str(), "%lf %lf %lf %lf %lf", &mn, &md, &av, &mx, &p99);
      if (root) {
        std::printf("%-10s %-8zu %-7d %10.2f %12.2f %10.2f %10.2f %10.2f %8lld   pair %d-%d\n", "write_lat", s, iters,
                    mn, md, av, mx, p99, (long long)wrongAll, r, r + 1);
        if (r == 0)
          std::printf("RESULT test=write_lat bytes=%zu iters=%d t_typical_us=%.3f t_avg_us=%.3f t_min_us=%.3f wrong=%lld\n", s,
                      iters, md, av, mn, (long long)wrongAll);
        // time = the median half round trip (perftest's t_typical)
        Sample row = pairRow("write_lat", sel.summary(), s, iters, bs.size(), nodes, wrongAll, r);
        row.timer = a.timer;
        row.timeUs = row.p50Us = md;
        row.timeUsMin = mn;
        row.timeUsMax = mx;
        row.p99Us = p99;
        row.algBwGBps = row.busBwGBps = md > 0 ? double(s) / (md * 1e-6) / 1e9 : 0;
        row.extra.emplace_back("t_avg_us", fmt::format("{:.3f}", av));
        recorder.add(row, "verbs");
      }
    }
    if (wrongAll) ++failures;
    stopIfNotWriting(bs, recorder);
  }
  return failures;
}

int measure(Bootstrap& bs, const Args& a, const char* launch, const Selection& sel,
            const std::vector<std::size_t>& sizes, RunRecorder& recorder) {
  const bool root = bs.rank() == 0;
  auto hosts = bs.hostnames();
  const int nodes = int(std::set<std::string>(hosts.begin(), hosts.end()).size());
  bool doBw = a.test != "lat", doLat = a.test != "bw";
  std::vector<std::size_t> bwSizes = sizes, latSizes = sizes;
  if (sizes.empty()) {
    bwSizes = {65536};
    latSizes = {2};
  }
  std::size_t maxBytes = 8;
  for (auto s : bwSizes) maxBytes = std::max(maxBytes, s);
  for (auto s : latSizes) maxBytes = std::max(maxBytes, s);

  Pair pair(bs, sel, maxBytes, a.txDepth, a.packed);
  if (root) {
    std::printf("# fabricbench-verbs: %d ranks = %d pairs (%s), path: %s\n", bs.size(), bs.size() / 2, launch,
                sel.summary().c_str());
    std::printf("# why: %s\n# max inline %d B, tx-depth %d, cq-mod %d, receive area at +%zu B, timer %s;"
                " MB = 2^20 B (as perftest), GB = 1e9 B\n",
                sel.why.c_str(), pair.inlineBytes(), a.txDepth, a.cqMod, pair.recvOffset(), a.timer.c_str());
  }
  int failures = 0;
  if (doBw) failures += measureBw(bs, a, sel, pair, bwSizes, nodes, recorder);
  if (doLat) failures += measureLat(bs, a, sel, pair, latSizes, nodes, recorder);
  std::fflush(stdout);
  bs.barrier();
  return failures ? 1 : 0;
}

}  // namespace fb::verbs

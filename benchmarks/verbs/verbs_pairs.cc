// fabricbench-verbs' measurements: rank pairs, the bw and lat loops, the run folder.
#include "verbs_pairs.h"

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

#ifdef FB_VERBS_HAVE_TSC
#include <x86intrin.h>
#endif

#include <optional>

#include "bootstrap/agree.h"

namespace fb::verbs {
namespace {


struct Endpoint {  // what a side tells its partner
  QpAddress qp;
  std::uint64_t addr = 0;  // its receive area
  std::uint32_t rkey = 0;
};

double nowUs() {
  return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
}

std::uint8_t pattern(std::size_t i, int sender) { return std::uint8_t((i * 131u + std::size_t(sender) * 17u + 7u) & 0xff); }

class Pair {
 public:
  Pair(Bootstrap& bs, const Selection& sel, std::size_t maxBytes, int txDepth, bool packed)
      : bs_(bs), maxBytes_(std::max<std::size_t>(maxBytes, 8)) {
    // perftest keeps send and receive areas a page apart (BUFF_SIZE: at least one page), so the
    // byte this side spins on and the byte it writes before each post never share a cache line.
    recvOff_ = packed ? maxBytes_ : ((maxBytes_ + 4095) / 4096) * 4096;
    const std::size_t total = ((recvOff_ + maxBytes_ + 4095) / 4096) * 4096;
    me_ = bs.rank();
    partner_ = (me_ % 2 == 0) ? me_ + 1 : me_ - 1;
    driver_ = me_ % 2 == 0;
    auto opened = openPort(sel);
    ctx_ = std::move(opened.ctx);
    port_ = opened.port;
    pd_ = allocPd(ctx_.get());
    channel_ = createChannel(ctx_.get());
    cq_ = createCq(ctx_.get(), txDepth * 2 + 16, channel_.get());
    // [0, max): send area; [recvOff, recvOff + max): receive area (the partner writes there)
    buf_ = static_cast<std::uint8_t*>(std::aligned_alloc(4096, total));
    if (!buf_) FB_THROW(Error, "out of memory for ", total, " bytes");
    std::memset(buf_, 0, total);
    mr_ = regMr(pd_.get(), buf_, total, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    qp_ = createRcQp(pd_.get(), cq_.get(), txDepth + 8, 8, 220, &inline_);
    std::uint32_t psn = (std::uint32_t(me_) * 7919u + 11u) & 0xffffff;
    Endpoint mine;
    mine.qp = localAddress(qp_.get(), port_, psn);
    mine.addr = reinterpret_cast<std::uintptr_t>(buf_ + recvOff_);
    mine.rkey = mr_->rkey;
    std::vector<std::byte> blob(sizeof mine);
    std::memcpy(blob.data(), &mine, sizeof mine);
    auto all = bs.allGather(blob);
    std::memcpy(&remote_, all[partner_].data(), sizeof remote_);
    connect(qp_.get(), port_, remote_.qp, psn);
    bs.barrier();
  }
  ~Pair() {
    qp_.reset();
    mr_.reset();
    std::free(buf_);
  }

  int inlineBytes() const { return inline_; }
  std::size_t recvOffset() const { return recvOff_; }
  double tscMhz() const { return tscMhz_; }  // the rate the last tsc-timed loop measured
  bool driver() const { return driver_; }

  // The passive side of bw posts this before the start barrier and then sleeps in
  // waitDone() on the completion channel (like perftest's server, which sleeps in a socket read
  // instead of competing for the CPU); the driver ends with one untimed 0-byte WRITE WITH IMM.
  void postDoneRecv() {
    ibv_recv_wr wr{};
    wr.wr_id = 7;
    ibv_recv_wr* bad = nullptr;
    FB_VERBS_CHECK(ibv_post_recv(qp_.get(), &wr, &bad));
  }
  void waitDone() {
    auto deadline = Clock::now() + std::chrono::seconds(300);
    for (;;) {
      ibv_wc wc;
      int n = ibv_poll_cq(cq_.get(), 1, &wc);
      if (n < 0) FB_THROW(VerbsError, "ibv_poll_cq failed");
      if (n == 1) {
        checkCompletion(wc, partner_, "end-of-test notice");
        return;
      }
      if (Clock::now() > deadline) FB_THROW(TimeoutError, "write_bw: rank ", partner_, " never finished");
      FB_VERBS_CHECK(ibv_req_notify_cq(cq_.get(), 0));
      n = ibv_poll_cq(cq_.get(), 1, &wc);
      if (n == 1) {
        checkCompletion(wc, partner_, "end-of-test notice");
        return;
      }
      waitCqEvent(channel_.get(), 100);
    }
  }
  void sendDone() {
    ibv_send_wr wr{};
    wr.wr_id = 8;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote_.addr;
    wr.wr.rdma.rkey = remote_.rkey;
    ibv_send_wr* bad = nullptr;
    FB_VERBS_CHECK(ibv_post_send(qp_.get(), &wr, &bad));
    ibv_wc wc;
    int n;
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while ((n = ibv_poll_cq(cq_.get(), 1, &wc)) == 0)
      if (Clock::now() > deadline) FB_THROW(TimeoutError, "write_bw: end-of-test notice not completed");
    if (n < 0) FB_THROW(VerbsError, "ibv_poll_cq failed");
    checkCompletion(wc, partner_, "end-of-test notice");
  }

  // Returns seconds for `iters` WRITEs of `bytes` (driver), 0 on the passive side.
  double writeBw(std::size_t bytes, int iters, int txDepth, int cqMod) {
    cqMod = std::max(1, std::min(cqMod, txDepth));
    if (!driver_) {
      waitDone();
      return 0;
    }
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf_), std::uint32_t(bytes), mr_->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = remote_.addr;
    wr.wr.rdma.rkey = remote_.rkey;
    ibv_send_wr* bad = nullptr;
    long posted = 0, done = 0;
    ibv_wc wc[16];
    auto deadline = Clock::now() + std::chrono::seconds(300);
    double t0 = nowUs();
    while (done < iters) {
      while (posted < iters && posted - done < txDepth) {
        bool sig = (posted + 1) % cqMod == 0 || posted + 1 == iters;
        wr.send_flags = sig ? IBV_SEND_SIGNALED : 0;
        // wr_id = how many WRITEs this completion accounts for
        wr.wr_id = sig ? std::uint64_t((posted % cqMod) + 1) : 0;
        if (bytes <= std::size_t(inline_)) wr.send_flags |= IBV_SEND_INLINE;
        FB_VERBS_CHECK(ibv_post_send(qp_.get(), &wr, &bad));
        ++posted;
      }
      int n = ibv_poll_cq(cq_.get(), 16, wc);
      if (n < 0) FB_THROW(VerbsError, "ibv_poll_cq failed");
      for (int i = 0; i < n; ++i) {
        checkCompletion(wc[i], partner_, "RDMA WRITE");
        done += long(wc[i].wr_id);
      }
      if (n == 0 && Clock::now() > deadline) FB_THROW(TimeoutError, "write_bw: no completion for 300 s");
    }
    double sec = (nowUs() - t0) * 1e-6;
    sendDone();
    return sec;
  }

  // perftest's run_iter_lat_write: returns the per-iteration half round trips (us).
  // Time stamps: clock_gettime(CLOCK_MONOTONIC) (steady), or with useTsc the CPU's time-stamp
  // counter as perftest's get_cycles(), converted with the rate measured against the monotonic
  // clock over this very loop (perftest uses a sampled CPU MHz instead).
  std::vector<double> writeLat(std::size_t bytes, int iters, bool useTsc) {
    volatile std::uint8_t* pollByte = buf_ + recvOff_ + bytes - 1;
    std::uint8_t* postByte = buf_ + bytes - 1;  // the receive area was cleared before the barrier
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf_), std::uint32_t(bytes), mr_->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED | (bytes <= std::size_t(inline_) ? IBV_SEND_INLINE : 0);
    wr.wr.rdma.remote_addr = remote_.addr;
    wr.wr.rdma.rkey = remote_.rkey;
    ibv_send_wr* bad = nullptr;
    std::vector<std::uint64_t> posted(iters + 1);
    auto stamp = [useTsc]() -> std::uint64_t {
#ifdef FB_VERBS_HAVE_TSC
      if (useTsc) return __rdtsc();
#endif
      return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
    };
    int scnt = 0, rcnt = 0, ccnt = 0;
    auto deadline = Clock::now() + std::chrono::seconds(300);
    const auto wall0 = Clock::now();
    const std::uint64_t stamp0 = stamp();
    while (scnt < iters || rcnt < iters || ccnt < iters) {
      if (rcnt < iters && !(scnt < 1 && driver_)) {
        ++rcnt;
        long spins = 0;
        while (*pollByte != std::uint8_t(rcnt)) {
          if ((++spins & 0xfffff) == 0 && Clock::now() > deadline)
            FB_THROW(TimeoutError, "write_lat: rank ", partner_, " did not answer iteration ", rcnt);
        }
      }
      if (scnt < iters) {
        posted[scnt] = stamp();
        *postByte = std::uint8_t(++scnt);
        FB_VERBS_CHECK(ibv_post_send(qp_.get(), &wr, &bad));
      }
      if (ccnt < iters) {
        ibv_wc wc;
        int n;
        long spins = 0;
        while ((n = ibv_poll_cq(cq_.get(), 1, &wc)) == 0) {
          if ((++spins & 0xfffff) == 0 && Clock::now() > deadline) FB_THROW(TimeoutError, "write_lat: no completion");
        }
        if (n < 0) FB_THROW(VerbsError, "ibv_poll_cq failed");
        checkCompletion(wc, partner_, "RDMA WRITE");
        ++ccnt;
      }
    }
    posted[iters] = stamp();
    const auto wall1 = Clock::now();
    const std::uint64_t stamp1 = stamp();
    double usPerStamp = 1e-3;  // steady: nanoseconds
    if (useTsc) {
      double us = std::chrono::duration<double, std::micro>(wall1 - wall0).count();
      usPerStamp = stamp1 > stamp0 ? us / double(stamp1 - stamp0) : 0;
      if (!(usPerStamp > 0)) FB_THROW(Error, "write_lat: the time-stamp counter did not advance");
      tscMhz_ = 1.0 / usPerStamp;
    }
    std::vector<double> half;
    for (int i = 1; i < iters; ++i) half.push_back(double(posted[i] - posted[i - 1]) * usPerStamp / 2);
    return half;
  }

  void fillSend(std::size_t bytes) {
    for (std::size_t i = 0; i < bytes; ++i) buf_[i] = pattern(i, me_);
  }
  void clearRecv(std::size_t bytes) { std::memset(buf_ + recvOff_, 0, bytes); }
  // Wrong bytes in the receive area (the last byte excluded for latency: it holds the counter).
  std::int64_t countWrong(std::size_t bytes, bool skipLast) {
    std::int64_t wrong = 0;
    std::size_t n = skipLast && bytes > 0 ? bytes - 1 : bytes;
    for (std::size_t i = 0; i < n; ++i) wrong += buf_[recvOff_ + i] != pattern(i, partner_);
    return wrong;
  }

 private:
  Bootstrap& bs_;
  std::size_t maxBytes_;
  std::size_t recvOff_ = 0;
  double tscMhz_ = 0;
  int me_ = 0, partner_ = 1, inline_ = 0;
  bool driver_ = true;
  PortSel port_;
  Context ctx_;
  Pd pd_;
  Channel channel_;
  Cq cq_;
  std::uint8_t* buf_ = nullptr;
  Mr mr_;
  Qp qp_;
  Endpoint remote_;
};

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
    run = claimRun(bs, {.resultsDir = a.resultsDir, .runId = a.runId, .suffix = "verbs", .writeFiles = !a.noFiles});
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
  if (doBw) {
    int iters = a.iters ? a.iters : 5000;
    if (root) std::printf("%-10s %-8s %-7s %12s %10s %10s %8s\n", "#test", "#bytes", "#iters", "BW[MB/s]", "BW[GB/s]", "Mpps", "wrong");
    for (std::size_t s : bwSizes) {
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
  }
  if (doLat) {
    int iters = a.iters ? a.iters : 1000;
    if (iters < 2) iters = 2;
    if (root)
      std::printf("%-10s %-8s %-7s %10s %12s %10s %10s %10s %8s\n", "#test", "#bytes", "#iters", "t_min[us]",
                  "t_typical", "t_avg", "t_max", "t_99%", "wrong");
    for (std::size_t s : latSizes) {
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
  }
  std::fflush(stdout);
  bs.barrier();
  return failures ? 1 : 0;
}

}  // namespace fb::verbs

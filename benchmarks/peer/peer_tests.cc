// fabricbench-peer's tests: copy-engine and SM peer copies, host copies, the reduce kernel, the
// GPU x GPU matrix and the P2P sanity check.
#include "benchmarks/peer/peer_tests.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <cuda_runtime.h>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/sample.h"
#include "core/units.h"
#include "kernels/copy.h"
#include "kernels/reduce.h"
#include "report/fingerprint.h"
#include "report/result_sink.h"
#include "app/run_recorder.h"
#include "topology/topology.h"
#include "gpu/cuda/cuda_ipc.h"
#include "gpu/cuda/p2p_check.h"
#include "benchmarks/peer/peer_plan.h"

namespace fb {
namespace {

using cudaipc::DeviceBuffer;
namespace ipc = kernels::ipc;

constexpr int kExitNoGpu = 3;
constexpr int kPatternSeed = 3;


std::string gbps(double bytes, double sec) { return sec > 0 ? fmt::format("{:.1f}", bytes / sec / 1e9) : "-"; }

// Runs fn `iters` times between two events on stream s (on the current device) and returns
// seconds. The wait is bounded.
double timeOnStream(cudaStream_t s, int iters, const std::function<void()>& fn) {
  cudaEvent_t a, b;
  FB_CUDA_CHECK(cudaEventCreate(&a));
  FB_CUDA_CHECK(cudaEventCreate(&b));
  FB_CUDA_CHECK(cudaEventRecord(a, s));
  for (int i = 0; i < iters; ++i) fn();
  FB_CUDA_CHECK(cudaEventRecord(b, s));
  if (!cudaipc::waitEvent(b, Deadline::in(std::chrono::seconds(120))))
    FB_THROW(TimeoutError, "a timed batch did not finish within 120 s");
  float ms = 0;
  FB_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms * 1e-3;
}

void syncBounded(int dev, cudaStream_t s) {
  FB_CUDA_CHECK(cudaSetDevice(dev));
  if (!cudaipc::waitStream(s, Deadline::in(std::chrono::seconds(120))))
    FB_THROW(TimeoutError, "GPU ", dev, " did not finish within 120 s");
}

// Counts elements of `buf` (float32 on device `dev`) that differ from pattern(srcTag).
std::int64_t countWrongPattern(int dev, cudaStream_t s, const void* buf, std::size_t bytes, int srcTag) {
  FB_CUDA_CHECK(cudaSetDevice(dev));
  DeviceBuffer counter(sizeof(unsigned long long));
  auto* c = static_cast<unsigned long long*>(counter.get());
  FB_CUDA_CHECK(cudaMemsetAsync(c, 0, sizeof(*c), s));
  ipc::ExpectSpec spec{ipc::Expect::kPattern, 1, 0, srcTag, kPatternSeed, 0};
  FB_CUDA_CHECK(ipc::countWrong(kernels::ElemType::kFloat32, buf, bytes / 4, spec, c, s));
  unsigned long long host = 0;
  FB_CUDA_CHECK(cudaMemcpyAsync(&host, c, sizeof(host), cudaMemcpyDeviceToHost, s));
  syncBounded(dev, s);
  return static_cast<std::int64_t>(host);
}

struct Gpu {
  int dev = 0;
  cudaStream_t s = nullptr;
  cudaStream_t s2 = nullptr;
};

class PeerBench {
 public:
  PeerBench(const Opts& o, RunRecorder& recorder) : o_(o), recorder_(recorder) {}

  int run() {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
      cudaGetLastError();
      fmt::print(stderr, "fabricbench-peer: no CUDA GPU visible ({}; CUDA_VISIBLE_DEVICES={})\n",
                 e == cudaSuccess ? "0 devices" : cudaGetErrorString(e), cudaipc::visibleDevicesEnv());
      return kExitNoGpu;
    }
    n_ = n;
    // --gpus and the sizes were checked before the result folder was made (realMain).
    bytes_ = parseSize(o_.size);
    matrixBytes_ = parseSize(o_.matrixSize);

    fmt::print("# fabricbench-peer: {} GPU(s) visible (CUDA_VISIBLE_DEVICES={}); GB = 1e9 bytes; times are CUDA "
               "events over {} iterations after {} warm-up\n",
               n, cudaipc::visibleDevicesEnv(), o_.iters, o_.warmup);
    for (int d = 0; d < n; ++d) fmt::print("#   GPU {}: {} {}\n", d, cudaipc::deviceName(d), cudaipc::pciBusId(d));
    gpus_.resize(n);
    for (int d = 0; d < n; ++d) {
      FB_CUDA_CHECK(cudaSetDevice(d));
      gpus_[d].dev = d;
      FB_CUDA_CHECK(cudaStreamCreateWithFlags(&gpus_[d].s, cudaStreamNonBlocking));
      FB_CUDA_CHECK(cudaStreamCreateWithFlags(&gpus_[d].s2, cudaStreamNonBlocking));
    }
    // Peer access, unless the user wants to see the sanity check flag it.
    if (!o_.noPeerAccess) {
      for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b) {
          if (a == b) continue;
          int can = 0;
          FB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
          if (!can) continue;
          FB_CUDA_CHECK(cudaSetDevice(a));
          cudaError_t pe = cudaDeviceEnablePeerAccess(b, 0);
          if (pe != cudaSuccess && pe != cudaErrorPeerAccessAlreadyEnabled)
            fmt::print("# warning: cudaDeviceEnablePeerAccess({} -> {}): {}\n", a, b, cudaGetErrorString(pe));
          cudaGetLastError();
        }
    }
    auto want = [&](const char* t) { return std::find(o_.tests.begin(), o_.tests.end(), t) != o_.tests.end(); };
    bool pair = o_.gpus.size() == 2 && o_.gpus[0] != o_.gpus[1] && n >= 2;
    if (want("sanity")) sanity();
    if (pair && (want("ce") || want("sm") || want("bidir"))) {
      if (!peerOk(o_.gpus[0], o_.gpus[1]) || !peerOk(o_.gpus[1], o_.gpus[0]))
        fmt::print("# peer copies skipped: GPUs {} and {} cannot use P2P in this process (see the sanity check)\n",
                   o_.gpus[0], o_.gpus[1]);
      else
        peerCopies(o_.gpus[0], o_.gpus[1], want("ce"), want("sm"), want("bidir"));
    } else if (want("ce") || want("sm") || want("bidir")) {
      fmt::print("# peer copies skipped: they need two distinct GPUs (--gpus a,b; {} visible)\n", n);
    }
    if (want("bulk")) {
      if (pair && peerOk(o_.gpus[0], o_.gpus[1]) && peerOk(o_.gpus[1], o_.gpus[0]))
        bulkCopies(o_.gpus[0], o_.gpus[1]);
      else
        fmt::print("# bulk copies skipped: they need two GPUs with P2P (--gpus a,b)\n");
    }
    if (want("host")) hostCopies(o_.gpus[0]);
    if (want("reduce")) reduce(o_.gpus[0]);
    if (want("matrix")) matrix();
    return 0;
  }

 private:
  bool peerOk(int a, int b) {
    int can = 0;
    cudaDeviceCanAccessPeer(&can, a, b);
    return can && cudaipc::peerAccessEnabled(a, b);
  }

  // % of nominal for copies between two GPUs ("GPU0->GPU1 ..."; NVLink links x rate, else PCIe) and
  // between a GPU and host memory (host_copy: the GPU's PCIe link). Latency rows get none.
  static std::string busOf(int dev) {
    char bus[64] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), dev) != cudaSuccess) {
      cudaGetLastError();
      return {};
    }
    return bus;
  }
  static void addNominal(Sample& s) {
    if (s.coll == "matrix_latency") return;
    static const std::regex kPair(R"(GPU(\d+)<?->GPU(\d+))"), kOne(R"(GPU(\d+))");
    std::smatch m;
    topo::LinkNominal n;
    if (std::regex_search(s.path, m, kPair)) {
      n = topo::gpuPeerNominal(topo::localTopology(), busOf(std::stoi(m[1])), {busOf(std::stoi(m[2]))});
    } else if (s.coll == "host_copy" && std::regex_search(s.path, m, kOne)) {
      n = topo::gpuPeerNominal(topo::localTopology(), busOf(std::stoi(m[1])), {});
    } else {
      return;  // local copies and reductions: HBM, no link
    }
    if (s.path.find("<->") != std::string::npos && n.gbps > 0) {  // both directions at once: twice the link
      n.gbps *= 2;
      n.basis += ", both directions";
    }
    if (n.gbps > 0) s.pctNominal = 100.0 * s.busBwGBps / n.gbps;
    s.extra.emplace_back("nominal_basis", n.basis);
  }

  void emit(const std::string& coll, const std::string& path, std::size_t bytes, double sec, int iters,
            std::int64_t wrong, std::vector<std::pair<std::string, std::string>> extra = {},
            const std::string& dtype = "float32") {
    Sample s;
    s.coll = coll;
    s.impl = "cuda";
    s.timer = "rank-events";  // CUDA events on the stream that does the copy
    s.path = path;
    s.dtype = dtype;
    s.bytes = bytes;
    s.count = bytes / (dtype == "float32" ? 4 : 2);
    s.nRanks = 1;
    s.nNodes = 1;
    s.iters = iters;
    s.timeUs = sec * 1e6;
    s.algBwGBps = sec > 0 ? static_cast<double>(bytes) / sec / 1e9 : 0;
    s.busBwGBps = s.algBwGBps;
    s.wrong = wrong;
    s.extra = std::move(extra);
    addNominal(s);
    if (wrong > 0) ++badRows_;
    recorder_.add(s, "peer");
    // The files could not be written (disk full, folder gone): the run stops here (exit 1).
    if (recorder_.stopRequested()) throw RunStopped("writing the result files stopped");
  }

  void sanity() {
    cudaipc::P2PCheckOptions po;
    po.timeout = std::chrono::milliseconds(o_.sanityTimeoutMs);
    po.enablePeerAccess = !o_.noPeerAccess;
    po.injectHang = o_.injectHang;
    auto t0 = Clock::now();
    cudaipc::P2PReport r = cudaipc::checkLocalPairs(po);
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    fmt::print("\n## P2P sanity check ({} B per pair, time-out {} ms per pair; took {:.0f} ms)\n", po.bytes,
               o_.sanityTimeoutMs, ms);
    for (auto& p : r.pairs) fmt::print("  {} {}\n", p.ok ? "ok  " : "FAIL", p.message);
    fmt::print("  => {}\n", r.summary);
    sanityOk_ = r.ok;
  }

  void peerCopies(int a, int b, bool ce, bool sm, bool bidir) {
    const std::size_t B = bytes_;
    fmt::print("\n## Peer copies GPU {} <-> GPU {}, {} per copy (GB/s = bytes moved one way / time)\n", a, b,
               formatSize(B) + "B");
    fmt::print("  {:<44} {:>12} {:>10} {:>7}\n", "what", "time/copy us", "GB/s", "wrong");
    // Buffers: src/dst on each GPU; sources hold pattern(gpu).
    FB_CUDA_CHECK(cudaSetDevice(a));
    DeviceBuffer srcA(B), dstA(B);
    FB_CUDA_CHECK(ipc::fillPattern(kernels::ElemType::kFloat32, srcA.get(), B / 4, a, kPatternSeed, gpus_[a].s));
    FB_CUDA_CHECK(cudaSetDevice(b));
    DeviceBuffer srcB(B), dstB(B);
    FB_CUDA_CHECK(ipc::fillPattern(kernels::ElemType::kFloat32, srcB.get(), B / 4, b, kPatternSeed, gpus_[b].s));
    syncBounded(a, gpus_[a].s);
    syncBounded(b, gpus_[b].s);
    auto poison = [&](int dev, void* p) {
      FB_CUDA_CHECK(cudaSetDevice(dev));
      FB_CUDA_CHECK(ipc::fillValue(kernels::ElemType::kFloat32, p, B / 4, NAN, gpus_[dev].s));
      syncBounded(dev, gpus_[dev].s);
    };
    auto row = [&](const std::string& what, const std::string& coll, const std::string& path, double sec, int iters,
                   std::int64_t wrong, std::size_t movedPerIter) {
      fmt::print("  {:<44} {:>12.1f} {:>10} {:>7}\n", what, sec / iters * 1e6, gbps(double(movedPerIter) * iters, sec),
                 wrong);
      emit(coll, path, movedPerIter, sec / iters, iters, wrong);
    };
    auto one = [&](int from, int to, const void* src, void* dst, const std::string& how) {
      int drive = how == "sm-read" ? to : from;  // who runs the copy
      cudaStream_t s = gpus_[drive].s;
      poison(to, dst);
      FB_CUDA_CHECK(cudaSetDevice(drive));
      auto op = [&] {
        if (how == "ce") FB_CUDA_CHECK(cudaMemcpyPeerAsync(dst, to, src, from, B, s));
        else FB_CUDA_CHECK(kernels::copyBytes(dst, src, B, s));
      };
      timeOnStream(s, o_.warmup, op);
      double sec = timeOnStream(s, o_.iters, op);
      std::int64_t wrong = countWrongPattern(to, gpus_[to].s, dst, B, from);
      std::string label = fmt::format("GPU{}->GPU{} {}", from, to, how);
      std::string what = how == "ce" ? "copy engine" : how == "sm-write" ? "SM copy, kernel on source writes"
                                                                          : "SM copy, kernel on destination reads";
      row(fmt::format("{} -> {} {}", from, to, what), "peer_copy", label, sec, o_.iters, wrong, B);
      return B * static_cast<double>(o_.iters) / sec;
    };
    double ceAB = 0, ceBA = 0, smBest = 0;
    if (ce) {
      ceAB = one(a, b, srcA.get(), dstB.get(), "ce");
      ceBA = one(b, a, srcB.get(), dstA.get(), "ce");
    }
    if (sm) {
      smBest = std::max(smBest, one(a, b, srcA.get(), dstB.get(), "sm-write"));
      smBest = std::max(smBest, one(a, b, srcA.get(), dstB.get(), "sm-read"));
      smBest = std::max(smBest, one(b, a, srcB.get(), dstA.get(), "sm-write"));
      smBest = std::max(smBest, one(b, a, srcB.get(), dstA.get(), "sm-read"));
    }
    if (bidir) {
      for (std::string how : {"ce", "sm-write"}) {
        poison(a, dstA.get());
        poison(b, dstB.get());
        auto opA = [&] {
          FB_CUDA_CHECK(cudaSetDevice(a));
          if (how == "ce") FB_CUDA_CHECK(cudaMemcpyPeerAsync(dstB.get(), b, srcA.get(), a, B, gpus_[a].s));
          else FB_CUDA_CHECK(kernels::copyBytes(dstB.get(), srcA.get(), B, gpus_[a].s));
        };
        auto opB = [&] {
          FB_CUDA_CHECK(cudaSetDevice(b));
          if (how == "ce") FB_CUDA_CHECK(cudaMemcpyPeerAsync(dstA.get(), a, srcB.get(), b, B, gpus_[b].s));
          else FB_CUDA_CHECK(kernels::copyBytes(dstA.get(), srcB.get(), B, gpus_[b].s));
        };
        for (int i = 0; i < o_.warmup; ++i) {
          opA();
          opB();
        }
        syncBounded(a, gpus_[a].s);
        syncBounded(b, gpus_[b].s);
        auto t0 = Clock::now();
        for (int i = 0; i < o_.iters; ++i) {
          opA();
          opB();
        }
        syncBounded(a, gpus_[a].s);
        syncBounded(b, gpus_[b].s);
        double sec = std::chrono::duration<double>(Clock::now() - t0).count();
        std::int64_t wrong = countWrongPattern(b, gpus_[b].s, dstB.get(), B, a) +
                             countWrongPattern(a, gpus_[a].s, dstA.get(), B, b);
        row(fmt::format("{} <-> {} both ways at once, {} (sum)", a, b, how == "ce" ? "copy engine" : "SM writes"),
            "peer_copy_bidir", fmt::format("GPU{}<->GPU{} {}", a, b, how), sec, o_.iters, wrong, 2 * B);
      }
    }
    std::string bestCfg = "default launch (2 blocks per SM x 1024 threads, unroll 4, cs loads)";
    if (sm && o_.smSweep) {
      // Launch shapes and load forms for the SM copy, one direction (a -> b), read and write.
      int sms = 0;
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, a);
      const std::pair<kernels::CopyLoad, const char*> loads[] = {
          {kernels::CopyLoad::kCg, "cg"},
          {kernels::CopyLoad::kCgPrefetch256, "cg+L2::256B"},
          {kernels::CopyLoad::kNoAllocPrefetch256, "nc+no_allocate+L2::256B"},
          {kernels::CopyLoad::kStreaming, "cs"},
          {kernels::CopyLoad::kStreamingLoadStore, "cs+st.cs"}};
      fmt::print("  SM copy launch sweep, {} -> {} (GB/s):\n  {:>24} {:>7} {:>8} {:>7} {:>10} {:>10}\n", a, b, "load",
                 "blocks", "threads", "unroll", "sm-write", "sm-read");
      for (const auto& [load, loadName] : loads)
        for (int mult : {1, 2, 4})
          for (int threads : {512, 1024})
            for (int unroll : {4, 8, 16}) {
              if (unroll * threads > 8192) continue;  // 16 loads x 1024 threads: not enough registers
              int blocks = sms * mult;
              double bw[2];
              for (int k = 0; k < 2; ++k) {
                int drive = k == 0 ? a : b;
                cudaStream_t s = gpus_[drive].s;
                FB_CUDA_CHECK(cudaSetDevice(drive));
                poison(b, dstB.get());
                FB_CUDA_CHECK(cudaSetDevice(drive));
                auto op = [&] {
                  FB_CUDA_CHECK(kernels::copyBytes(dstB.get(), srcA.get(), B, s, blocks, threads, unroll, load));
                };
                timeOnStream(s, 1, op);
                double sec = timeOnStream(s, o_.iters, op);
                bw[k] = B * static_cast<double>(o_.iters) / sec;
                std::int64_t wrong = countWrongPattern(b, gpus_[b].s, dstB.get(), B, a);
                emit("peer_copy_sweep", fmt::format("GPU{}->GPU{} {}", a, b, k == 0 ? "sm-write" : "sm-read"), B,
                     sec / o_.iters, o_.iters, wrong,
                     {{"load", loadName},
                      {"blocks", std::to_string(blocks)},
                      {"threads", std::to_string(threads)},
                      {"unroll", std::to_string(unroll)}});
                if (wrong == 0 && bw[k] > smBest) {
                  smBest = bw[k];
                  bestCfg = fmt::format("{} ({} loads, {} blocks x {} threads, unroll {})",
                                        k == 0 ? "sm-write" : "sm-read", loadName, blocks, threads, unroll);
                }
              }
              fmt::print("  {:>24} {:>7} {:>8} {:>7} {:>10.1f} {:>10.1f}\n", loadName, blocks, threads, unroll,
                         bw[0] / 1e9, bw[1] / 1e9);
            }
    }
    if (ce && sm)
      fmt::print("  => best SM copy {:.1f} GB/s = {:.1f}% of the copy engine (mean of both directions: {:.1f} GB/s); "
                 "best: {}\n",
                 smBest / 1e9, 100.0 * smBest / ((ceAB + ceBA) / 2), (ceAB + ceBA) / 2 / 1e9, bestCfg);
  }

  // SM copies through the bulk-copy (TMA) unit, against the copy engine in the same run.
  void bulkCopies(int a, int b) {
    const std::size_t B = bytes_;
    fmt::print("\n## Peer copies through the SM bulk-copy unit (cp.async.bulk), {} -> {}, {} per copy\n", a, b,
               formatSize(B) + "B");
    FB_CUDA_CHECK(cudaSetDevice(a));
    DeviceBuffer srcA(B);
    FB_CUDA_CHECK(ipc::fillPattern(kernels::ElemType::kFloat32, srcA.get(), B / 4, a, kPatternSeed, gpus_[a].s));
    syncBounded(a, gpus_[a].s);
    FB_CUDA_CHECK(cudaSetDevice(b));
    DeviceBuffer dstB(B);
    auto op = [&] { FB_CUDA_CHECK(cudaMemcpyPeerAsync(dstB.get(), b, srcA.get(), a, B, gpus_[a].s)); };
    FB_CUDA_CHECK(cudaSetDevice(a));
    timeOnStream(gpus_[a].s, o_.warmup, op);
    double ceSec = timeOnStream(gpus_[a].s, o_.iters, op);
    double ce = B * static_cast<double>(o_.iters) / ceSec;
    fmt::print("  copy engine {} -> {}: {:.1f} GB/s (reference for this table)\n", a, b, ce / 1e9);
    fmt::print("  {:>7} {:>9} {:>7} {:>12} {:>12} {:>7}\n", "blocks", "chunk", "stages", "bulk-write", "bulk-read",
               "wrong");
    double best = 0;
    std::string bestCfg;
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, a);
    for (int mult : {1, 2})
      for (int chunk : {16 << 10, 32 << 10})
        for (int stages : {2, 4}) {
          double bw[2];
          std::int64_t wrongSum = 0;
          for (int k = 0; k < 2; ++k) {
            int drive = k == 0 ? a : b;
            cudaStream_t s = gpus_[drive].s;
            FB_CUDA_CHECK(cudaSetDevice(b));
            FB_CUDA_CHECK(ipc::fillValue(kernels::ElemType::kFloat32, dstB.get(), B / 4, NAN, gpus_[b].s));
            syncBounded(b, gpus_[b].s);
            FB_CUDA_CHECK(cudaSetDevice(drive));
            DeviceBuffer failed(sizeof(int));
            FB_CUDA_CHECK(cudaMemset(failed.get(), 0, sizeof(int)));
            auto bop = [&] {
              FB_CUDA_CHECK(kernels::bulkCopyBytes(dstB.get(), srcA.get(), B, s, sms * mult, chunk, stages,
                                                   static_cast<int*>(failed.get())));
            };
            timeOnStream(s, 1, bop);
            double sec = timeOnStream(s, o_.iters, bop);
            int f = 0;
            FB_CUDA_CHECK(cudaMemcpy(&f, failed.get(), sizeof(int), cudaMemcpyDeviceToHost));
            if (f) FB_THROW(Error, "bulk copy kernel reported failure ", f, " (stage did not arrive in time)");
            bw[k] = B * static_cast<double>(o_.iters) / sec;
            std::int64_t wrong = countWrongPattern(b, gpus_[b].s, dstB.get(), B, a);
            wrongSum += wrong;
            emit("peer_copy_bulk", fmt::format("GPU{}->GPU{} {}", a, b, k == 0 ? "bulk-write" : "bulk-read"), B,
                 sec / o_.iters, o_.iters, wrong,
                 {{"blocks", std::to_string(sms * mult)}, {"chunk", std::to_string(chunk)},
                  {"stages", std::to_string(stages)}, {"pct_of_ce", fmt::format("{:.1f}", 100.0 * bw[k] / ce)}});
            if (bw[k] > best) {
              best = bw[k];
              bestCfg = fmt::format("{} ({} blocks, {} B chunks, {} stages)", k == 0 ? "bulk-write" : "bulk-read",
                                    sms * mult, chunk, stages);
            }
          }
          fmt::print("  {:>7} {:>9} {:>7} {:>12.1f} {:>12.1f} {:>7}\n", sms * mult, chunk, stages, bw[0] / 1e9,
                     bw[1] / 1e9, wrongSum);
        }
    fmt::print("  => best bulk SM copy {:.1f} GB/s = {:.1f}% of the copy engine; best: {}\n", best / 1e9,
               100.0 * best / ce, bestCfg);
  }

  void hostCopies(int d) {
    const std::size_t B = bytes_;
    fmt::print("\n## Pinned host <-> GPU {}, {} per copy\n", d, formatSize(B) + "B");
    fmt::print("  {:<44} {:>12} {:>10} {:>7}\n", "what", "time/copy us", "GB/s", "wrong");
    FB_CUDA_CHECK(cudaSetDevice(d));
    void* h1 = nullptr;
    void* h2 = nullptr;
    FB_CUDA_CHECK(cudaMallocHost(&h1, B));
    FB_CUDA_CHECK(cudaMallocHost(&h2, B));
    DeviceBuffer dev1(B), dev2(B);
    FB_CUDA_CHECK(ipc::fillPattern(kernels::ElemType::kFloat32, dev1.get(), B / 4, 7, kPatternSeed, gpus_[d].s));
    syncBounded(d, gpus_[d].s);
    FB_CUDA_CHECK(cudaMemcpy(h1, dev1.get(), B, cudaMemcpyDeviceToHost));  // host copy of pattern(7)
    cudaStream_t s = gpus_[d].s;
    auto h2d = [&] { FB_CUDA_CHECK(cudaMemcpyAsync(dev2.get(), h1, B, cudaMemcpyHostToDevice, s)); };
    auto d2h = [&] { FB_CUDA_CHECK(cudaMemcpyAsync(h2, dev1.get(), B, cudaMemcpyDeviceToHost, s)); };
    auto report = [&](const std::string& what, const std::string& path, double sec, std::int64_t wrong,
                      std::size_t moved) {
      fmt::print("  {:<44} {:>12.1f} {:>10} {:>7}\n", what, sec / o_.iters * 1e6,
                 gbps(double(moved) * o_.iters, sec), wrong);
      emit("host_copy", path, moved, sec / o_.iters, o_.iters, wrong);
    };
    FB_CUDA_CHECK(ipc::fillValue(kernels::ElemType::kFloat32, dev2.get(), B / 4, NAN, s));
    timeOnStream(s, o_.warmup, h2d);
    double sec = timeOnStream(s, o_.iters, h2d);
    report(fmt::format("host -> GPU {} (pinned)", d), fmt::format("host->GPU{} pinned", d), sec,
           countWrongPattern(d, s, dev2.get(), B, 7), B);
    std::memset(h2, 0xff, B);
    timeOnStream(s, o_.warmup, d2h);
    sec = timeOnStream(s, o_.iters, d2h);
    // Verify on the GPU: copy the host result back with cudaMemcpy and count there.
    FB_CUDA_CHECK(cudaMemcpy(dev2.get(), h2, B, cudaMemcpyHostToDevice));
    report(fmt::format("GPU {} -> host (pinned)", d), fmt::format("GPU{}->host pinned", d), sec,
           countWrongPattern(d, s, dev2.get(), B, 7), B);
    // Both directions at once (two streams).
    cudaStream_t s2 = gpus_[d].s2;
    DeviceBuffer dev3(B);
    FB_CUDA_CHECK(ipc::fillValue(kernels::ElemType::kFloat32, dev3.get(), B / 4, NAN, s));
    syncBounded(d, s);
    auto t0 = Clock::now();
    for (int i = 0; i < o_.iters; ++i) {
      FB_CUDA_CHECK(cudaMemcpyAsync(dev3.get(), h1, B, cudaMemcpyHostToDevice, s));
      FB_CUDA_CHECK(cudaMemcpyAsync(h2, dev1.get(), B, cudaMemcpyDeviceToHost, s2));
    }
    syncBounded(d, s);
    syncBounded(d, s2);
    sec = std::chrono::duration<double>(Clock::now() - t0).count();
    report(fmt::format("host <-> GPU {} both ways at once (sum)", d), fmt::format("host<->GPU{} pinned", d), sec,
           countWrongPattern(d, s, dev3.get(), B, 7), 2 * B);
    cudaFreeHost(h1);
    cudaFreeHost(h2);
  }

  void reduce(int d) {
    const std::size_t B = bytes_;
    fmt::print("\n## Reduce kernel vs device-to-device copy on GPU {}, {} per buffer (GB/s = bytes read + written)\n",
               d, formatSize(B) + "B");
    fmt::print("  {:<44} {:>12} {:>10} {:>7}\n", "what", "time/op us", "GB/s", "wrong");
    FB_CUDA_CHECK(cudaSetDevice(d));
    cudaStream_t s = gpus_[d].s;
    DeviceBuffer x(B), y(B), out(B);
    // D2D copy references: cudaMemcpy (copy engine or driver kernel) and our SM copy kernel.
    FB_CUDA_CHECK(ipc::fillPattern(kernels::ElemType::kFloat32, x.get(), B / 4, 0, kPatternSeed, s));
    auto memcpyOp = [&] { FB_CUDA_CHECK(cudaMemcpyAsync(out.get(), x.get(), B, cudaMemcpyDeviceToDevice, s)); };
    timeOnStream(s, o_.warmup, memcpyOp);
    double secCopy = timeOnStream(s, o_.iters, memcpyOp);
    std::int64_t wrongCopy = countWrongPattern(d, s, out.get(), B, 0);
    // Local copies: cg loads (3335 GB/s on H200 against 3027 with the peer-tuned cs default).
    auto kernelOp = [&] {
      FB_CUDA_CHECK(kernels::copyBytes(out.get(), x.get(), B, s, 0, 1024, 4, kernels::CopyLoad::kCg));
    };
    timeOnStream(s, o_.warmup, kernelOp);
    double secKernel = timeOnStream(s, o_.iters, kernelOp);
    std::int64_t wrongKernel = countWrongPattern(d, s, out.get(), B, 0);
    double copyBw = 2.0 * B * o_.iters / secCopy, kernelBw = 2.0 * B * o_.iters / secKernel;
    fmt::print("  {:<44} {:>12.1f} {:>10.1f} {:>7}\n", "D2D cudaMemcpyAsync (read + write)", secCopy / o_.iters * 1e6,
               copyBw / 1e9, wrongCopy);
    emit("d2d_copy", fmt::format("GPU{} cudaMemcpy", d), 2 * B, secCopy / o_.iters, o_.iters, wrongCopy);
    fmt::print("  {:<44} {:>12.1f} {:>10.1f} {:>7}\n", "D2D copy kernel (read + write)", secKernel / o_.iters * 1e6,
               kernelBw / 1e9, wrongKernel);
    emit("d2d_copy", fmt::format("GPU{} copy kernel", d), 2 * B, secKernel / o_.iters, o_.iters, wrongKernel);
    const double ref = std::max(copyBw, kernelBw);
    for (auto t : {kernels::ElemType::kFloat32, kernels::ElemType::kFloat16, kernels::ElemType::kBFloat16}) {
      std::size_t count = B / kernels::elemSize(t);
      const char* name = t == kernels::ElemType::kFloat32 ? "float32" : t == kernels::ElemType::kFloat16 ? "float16"
                                                                                                         : "bfloat16";
      FB_CUDA_CHECK(ipc::fillPattern(t, x.get(), count, 0, kPatternSeed, s));
      FB_CUDA_CHECK(ipc::fillPattern(t, y.get(), count, 1, kPatternSeed, s));
      FB_CUDA_CHECK(ipc::fillValue(t, out.get(), count, NAN, s));
      const void* ins[2] = {x.get(), y.get()};
      auto op = [&] { FB_CUDA_CHECK(kernels::reduceSum(t, out.get(), ins, 2, count, s)); };
      timeOnStream(s, o_.warmup, op);
      double sec = timeOnStream(s, o_.iters, op);
      // out = pattern(0) + pattern(1) = the 2-rank AllReduce expectation.
      DeviceBuffer counter(8);
      auto* c = static_cast<unsigned long long*>(counter.get());
      FB_CUDA_CHECK(cudaMemsetAsync(c, 0, 8, s));
      ipc::ExpectSpec spec{ipc::Expect::kAllReduce, 2, 0, 0, kPatternSeed, 0};
      FB_CUDA_CHECK(ipc::countWrong(t, out.get(), count, spec, c, s));
      unsigned long long wrong = 0;
      FB_CUDA_CHECK(cudaMemcpyAsync(&wrong, c, 8, cudaMemcpyDeviceToHost, s));
      syncBounded(d, s);
      double bw = 3.0 * B * o_.iters / sec;
      fmt::print("  {:<44} {:>12.1f} {:>10.1f} {:>7}   {:.1f}% of the faster D2D copy\n",
                 fmt::format("reduce 2 in -> 1 out, {} (2 reads + 1 write)", name), sec / o_.iters * 1e6, bw / 1e9,
                 wrong, 100.0 * bw / ref);
      emit("reduce_kernel", fmt::format("GPU{} reduce 2->1", d), 3 * B, sec / o_.iters, o_.iters,
           static_cast<std::int64_t>(wrong), {{"pct_of_d2d_copy", fmt::format("{:.1f}", 100.0 * bw / ref)}}, name);
    }
  }

  // The GPU x GPU tables' column header: a blank row-label cell, then GPU0..GPUn-1.
  static void columnHeader(int n) {
    fmt::print("  {:>6}", "");
    for (int j = 0; j < n; ++j) fmt::print(" {:>14}", fmt::format("GPU{}", j));
    fmt::print("\n");
  }

  void matrix() {
    const int n = n_;
    const std::size_t B = matrixBytes_;
    fmt::print("\n## GPU x GPU matrix (row = source/reader GPU i, column = GPU j)\n");
    // P2P capability.
    fmt::print("  P2P access (cudaDeviceCanAccessPeer / perf rank / native atomics / enabled here):\n");
    columnHeader(n);
    for (int i = 0; i < n; ++i) {
      fmt::print("  {:>6}", fmt::format("GPU{}", i));
      for (int j = 0; j < n; ++j) {
        if (i == j) {
          fmt::print(" {:>14}", "-");
          continue;
        }
        int can = 0, rank = 0, atomics = 0;
        cudaDeviceCanAccessPeer(&can, i, j);
        cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, i, j);
        cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, i, j);
        cudaGetLastError();
        fmt::print(" {:>14}", fmt::format("{}/{}/{}/{}", can ? "yes" : "NO", rank, atomics ? "yes" : "no",
                                          peerOk(i, j) ? "on" : "off"));
      }
      fmt::print("\n");
    }
    // Bandwidth: copy engine i -> j (i == j: device-local copy, GB/s one way).
    std::vector<DeviceBuffer> bufs;
    std::vector<DeviceBuffer> dsts;
    for (int d = 0; d < n; ++d) {
      FB_CUDA_CHECK(cudaSetDevice(d));
      bufs.emplace_back(B);
      dsts.emplace_back(B);
      FB_CUDA_CHECK(ipc::fillPattern(kernels::ElemType::kFloat32, bufs.back().get(), B / 4, d, kPatternSeed, gpus_[d].s));
      syncBounded(d, gpus_[d].s);
    }
    fmt::print("  copy-engine bandwidth GB/s, {} per copy (i -> j; wrong elements in brackets when > 0):\n",
               formatSize(B) + "B");
    columnHeader(n);
    for (int i = 0; i < n; ++i) {
      fmt::print("  {:>6}", fmt::format("GPU{}", i));
      for (int j = 0; j < n; ++j) {
        FB_CUDA_CHECK(cudaSetDevice(i));
        cudaStream_t s = gpus_[i].s;
        auto op = [&] { FB_CUDA_CHECK(cudaMemcpyPeerAsync(dsts[j].get(), j, bufs[i].get(), i, B, s)); };
        timeOnStream(s, 1, op);
        double sec = timeOnStream(s, std::max(1, o_.iters / 2), op);
        std::int64_t wrong = countWrongPattern(j, gpus_[j].s, dsts[j].get(), B, i);
        double bw = double(B) * std::max(1, o_.iters / 2) / sec / 1e9;
        fmt::print(" {:>14}", wrong ? fmt::format("{:.1f} [{}]", bw, wrong) : fmt::format("{:.1f}", bw));
        emit("matrix_copy", fmt::format("GPU{}->GPU{} ce", i, j), B, sec / std::max(1, o_.iters / 2),
             std::max(1, o_.iters / 2), wrong);
      }
      fmt::print("\n");
    }
    // Latency: one thread on GPU i following a pointer chain in GPU j's memory.
    fmt::print("  SM load latency ns (one thread on GPU i chasing pointers in GPU j's memory, {} hops):\n",
               o_.latencyHops);
    const std::size_t chainBytes = 64ull << 20, stride = 4096 + 64;
    for (int j = 0; j < n; ++j) {
      FB_CUDA_CHECK(cudaSetDevice(j));
      FB_CUDA_CHECK(kernels::buildPointerChain(bufs[j].get(), std::min(B, chainBytes), stride, gpus_[j].s));
      syncBounded(j, gpus_[j].s);
    }
    columnHeader(n);
    for (int i = 0; i < n; ++i) {
      fmt::print("  {:>6}", fmt::format("GPU{}", i));
      FB_CUDA_CHECK(cudaSetDevice(i));
      DeviceBuffer sink(8);
      for (int j = 0; j < n; ++j) {
        if (i != j && !peerOk(i, j)) {
          fmt::print(" {:>14}", "no P2P");
          continue;
        }
        cudaStream_t s = gpus_[i].s;
        auto op = [&] {
          FB_CUDA_CHECK(kernels::chasePointers(bufs[j].get(), o_.latencyHops,
                                               static_cast<unsigned long long*>(sink.get()), s));
        };
        timeOnStream(s, 1, op);
        double sec = timeOnStream(s, 3, op);
        double ns = sec / 3 / o_.latencyHops * 1e9;
        fmt::print(" {:>14.0f}", ns);
        emit("matrix_latency", fmt::format("GPU{}->GPU{} sm-load", i, j), 8, ns * 1e-9, o_.latencyHops * 3, -1,
             {{"latency_ns", fmt::format("{:.0f}", ns)}});
      }
      fmt::print("\n");
    }
  }

  const Opts& o_;
  RunRecorder& recorder_;
  int n_ = 0;
  std::size_t bytes_ = 0, matrixBytes_ = 0;
  std::vector<Gpu> gpus_;

 public:
  int badRows_ = 0;
  bool sanityOk_ = true;
};

}  // namespace

PeerOutcome runPeerTests(const Opts& o, RunRecorder& recorder) {
  PeerBench bench(o, recorder);
  PeerOutcome out;
  out.rc = bench.run();
  out.badRows = bench.badRows_;
  out.sanityOk = bench.sanityOk_;
  return out;
}

}  // namespace fb

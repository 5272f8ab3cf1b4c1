// fabricbench-peer's test class (peer_tests.h runs it), shared by its files: peer_tests.cc (the
// run, rows, nominal rates, sanity check), peer_copies.cc (GPU to GPU copies), peer_single.cc (host
// copies and the reduce kernel on one GPU), peer_matrix.cc (the GPU x GPU matrix).
#pragma once
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
#include "benchmarks/peer/peer_tests.h"

namespace fb::peer {

using cudaipc::DeviceBuffer;
namespace ipc = kernels::ipc;

constexpr int kExitNoGpu = 3;
constexpr int kPatternSeed = 3;

std::string gbps(double bytes, double sec);  // GB/s with one decimal, "-" for no time
// Runs fn `iters` times between two events on stream s (on the current device) and returns
// seconds. The wait is bounded.
double timeOnStream(cudaStream_t s, int iters, const std::function<void()>& fn);
void syncBounded(int dev, cudaStream_t s);
// Counts elements of `buf` (float32 on device `dev`) that differ from pattern(srcTag).
std::int64_t countWrongPattern(int dev, cudaStream_t s, const void* buf, std::size_t bytes, int srcTag);

struct Gpu {
  int dev = 0;
  cudaStream_t s = nullptr;
  cudaStream_t s2 = nullptr;
};

class PeerBench {
 public:
  PeerBench(const Opts& o, RunRecorder& recorder) : o_(o), recorder_(recorder) {}

  int run();

 private:
  bool peerOk(int a, int b) {
    int can = 0;
    cudaDeviceCanAccessPeer(&can, a, b);
    return can && cudaipc::peerAccessEnabled(a, b);
  }

  // % of nominal for copies between two GPUs ("GPU0->GPU1 ..."; NVLink links x rate, else PCIe) and
  // between a GPU and host memory (host_copy: the GPU's PCIe link). Latency rows get none.
  static std::string busOf(int dev);
  static void addNominal(Sample& s);

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

  void sanity();

  void peerCopies(int a, int b, bool ce, bool sm, bool bidir);

  // SM copies through the bulk-copy (TMA) unit, against the copy engine in the same run.
  void bulkCopies(int a, int b);

  void hostCopies(int d);

  void reduce(int d);

  // The GPU x GPU tables' column header: a blank row-label cell, then GPU0..GPUn-1.
  static void columnHeader(int n) {
    fmt::print("  {:>6}", "");
    for (int j = 0; j < n; ++j) fmt::print(" {:>14}", fmt::format("GPU{}", j));
    fmt::print("\n");
  }

  void matrix();

  const Opts& o_;
  RunRecorder& recorder_;
  int n_ = 0;
  std::size_t bytes_ = 0, matrixBytes_ = 0;
  std::vector<Gpu> gpus_;

 public:
  int badRows_ = 0;
  bool sanityOk_ = true;
};

}  // namespace fb::peer

// NCCL collectives on real GPUs, ranks as threads of one process (ThreadBootstrap): every
// collective × dtype × placement at a few odd sizes must give wrong = 0, a corrupted element
// must be counted on the GPU, CUDA-graph batches must time, and the path must be attested.
// The path comes from FB_NCCL_TEST_PATH (nvlink, shm, socket...): NCCL reads its path settings
// once per process, so each path is its own ctest entry. Needs 2 GPUs: otherwise exit 77.
#include <catch2/catch.hpp>

#include "catch_runner.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>
#include <vector>

#include "bootstrap/thread_bootstrap.h"
#include "collectives/nccl/nccl_collective.h"
#include "core/error.h"

namespace {

// Catch2 v2's assertion macros are not thread-safe: rank threads record failures here and the
// main thread asserts on them after runRanks().
struct Failures {
  std::mutex m;
  std::vector<std::string> list;
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    std::lock_guard<std::mutex> lock(m);
    list.push_back(what);
  }
  void report() {
    for (const auto& f : list) FAIL_CHECK(f);
    CHECK(list.empty());
  }
};

std::string testPath() {
  const char* p = std::getenv("FB_NCCL_TEST_PATH");
  return p && *p ? p : "nvlink";
}

std::string detail(const fb::PathInfo& p, const std::string& key) {
  for (const auto& [k, v] : p.details)
    if (k == key) return v;
  return {};
}

}  // namespace

TEST_CASE("every collective, dtype and placement verifies on the GPU; corruption is caught") {
  const std::string path = testPath();
  Failures f;
  fb::runRanks(2, [&](fb::Bootstrap& bs) {
    fb::CollectiveOptions opts;
    for (fb::CollKind k : fb::allCollKinds()) {
      auto coll = fb::nccl::makeCollective(k, bs, opts, path);
      auto p = coll->path();
      f.expect(p.label.rfind(path, 0) == 0, "label " + p.label);
      f.expect(detail(p, "attested").rfind("yes", 0) == 0, "attested: " + detail(p, "attested"));
      f.expect(!detail(p, "channels").empty(), "no channel count");
      for (fb::DataType t : {fb::DataType::kFloat32, fb::DataType::kFloat16, fb::DataType::kBFloat16,
                             fb::DataType::kInt32, fb::DataType::kFloat64}) {
        for (bool inPlace : {false, true}) {
          for (std::size_t bytes : {std::size_t(8), std::size_t(4096 + 8), std::size_t(3 << 20) + 24}) {
            auto shape = fb::makeShape(k, t, bytes, bs.size(), inPlace);
            coll->prepare(shape);
            std::ostringstream where;
            where << fb::collName(k) << " " << fb::dtypeName(t) << " inPlace=" << inPlace << " bytes=" << bytes
                  << " rank=" << bs.rank();
            double sec = coll->runBatch(3, fb::Deadline::in(std::chrono::seconds(30)));
            f.expect(sec > 0, where.str() + ": batch time " + std::to_string(sec));
            // In-place P2P ring = one buffer sent and received: a data race by construction
            // (the fabricbench reference runs measure the ring out-of-place only).
            const bool racy = !fb::describe(k).hasInPlace && inPlace;
            for (int seed : {1, 2}) {
              auto w = coll->check(seed, fb::Deadline::in(std::chrono::seconds(30)));
              f.expect(racy || w == 0, where.str() + " seed " + std::to_string(seed) + ": wrong " + std::to_string(w));
            }
            if (shape.recvCount > 0 && !racy) {
              // The last element of the output: corrupted after the op, counted on the GPU.
              coll->corruptNextCheck(shape.recvCount - 1);
              auto w = coll->check(3, fb::Deadline::in(std::chrono::seconds(30)));
              f.expect(w == 1, where.str() + ": corrupted element counted " + std::to_string(w) + " times");
              w = coll->check(4, fb::Deadline::in(std::chrono::seconds(30)));
              f.expect(w == 0, where.str() + ": after corruption wrong " + std::to_string(w));
            }
          }
        }
      }
    }
  }, std::chrono::seconds(300));
  f.report();
}

TEST_CASE("CUDA graph batches run and verify") {
  const std::string path = testPath();
  Failures f;
  fb::runRanks(2, [&](fb::Bootstrap& bs) {
    fb::CollectiveOptions opts;
    opts.cudaGraph = true;
    auto coll = fb::nccl::makeCollective(fb::CollKind::kAllReduce, bs, opts, path);
    coll->prepare(fb::makeShape(fb::CollKind::kAllReduce, fb::DataType::kFloat32, 1 << 20, bs.size(), false));
    f.expect(coll->runBatch(5, fb::Deadline::in(std::chrono::seconds(30))) > 0, "graph batch 1");
    f.expect(coll->runBatch(5, fb::Deadline::in(std::chrono::seconds(30))) > 0, "graph batch 2");
    f.expect(coll->check(7, fb::Deadline::in(std::chrono::seconds(30))) == 0, "graph check");
  }, std::chrono::seconds(120));
  f.report();
}

TEST_CASE("a rank that stops participating ends the other's wait at the deadline with NCCL aborted") {
  const std::string path = testPath();
  Failures f;
  fb::runRanks(2, [&](fb::Bootstrap& bs) {
    fb::CollectiveOptions opts;
    auto coll = fb::nccl::makeCollective(fb::CollKind::kAllReduce, bs, opts, path);
    coll->prepare(fb::makeShape(fb::CollKind::kAllReduce, fb::DataType::kFloat32, 1 << 20, bs.size(), false));
    if (bs.rank() == 0) {
      auto t0 = std::chrono::steady_clock::now();
      std::string what;
      try {
        coll->runBatch(2, fb::Deadline::in(std::chrono::seconds(5)));  // rank 1 runs only 1
      } catch (const fb::TimeoutError& e) {
        what = e.what();
      }
      auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      f.expect(what.find("aborted") != std::string::npos, "timeout error text: '" + what + "'");
      f.expect(took < 15.0, "rank 0 waited " + std::to_string(took) + " s");
    } else {
      coll->runBatch(1, fb::Deadline::in(std::chrono::seconds(30)));
    }
    bs.barrier();
  }, std::chrono::seconds(120));
  f.report();
}

TEST_CASE("availablePaths and probe agree with the machine") {
  auto st = fb::nccl::probe();
  CHECK(st.built);
  CHECK(st.usable);
  CHECK(!fb::nccl::topologyText().empty());
  Failures f;
  fb::runRanks(2, [&](fb::Bootstrap& bs) {
    auto paths = fb::nccl::availablePaths(bs);
    f.expect(std::find(paths.begin(), paths.end(), "socket") != paths.end(), "no socket path");
    f.expect(std::find(paths.begin(), paths.end(), "shm") != paths.end(), "no shm path");
  });
  f.report();
}

int main(int argc, char** argv) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n < 2) {
    std::cout << "SKIP: no CUDA device (" << (e == cudaSuccess ? std::to_string(n) + " visible" : cudaGetErrorString(e))
              << "); this test needs 2 GPUs\n";
    return 77;
  }
  return fb::test::runCatchSession(argc, argv);
}

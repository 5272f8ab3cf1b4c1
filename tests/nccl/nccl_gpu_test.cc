// NCCL collectives on real GPUs, ranks as threads of one process (ThreadBootstrap): every
// collective × dtype × placement at a few odd sizes must give wrong = 0, a corrupted element
// must be counted on the GPU, CUDA-graph batches must time, and the path must be attested.
// The path comes from FB_NCCL_TEST_PATH (nvlink, shm, socket...): NCCL reads its path settings
// once per process, so each path is its own ctest entry. Needs 2 GPUs: otherwise exit 77.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "bootstrap/thread_bootstrap.h"
#include "collectives/nccl/nccl_collective.h"
#include "core/error.h"

namespace {

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
  fb::runRanks(2, [&](fb::Bootstrap& bs) {
    fb::CollectiveOptions opts;
    for (fb::CollKind k : fb::allCollKinds()) {
      auto coll = fb::nccl::makeCollective(k, bs, opts, path);
      auto p = coll->path();
      CHECK(p.label.rfind(path, 0) == 0);
      CHECK(detail(p, "attested").rfind("yes", 0) == 0);
      CHECK(!detail(p, "channels").empty());
      for (fb::DataType t : {fb::DataType::kFloat32, fb::DataType::kFloat16, fb::DataType::kBFloat16,
                             fb::DataType::kInt32, fb::DataType::kFloat64}) {
        for (bool inPlace : {false, true}) {
          for (std::size_t bytes : {std::size_t(8), std::size_t(4096 + 8), std::size_t(3 << 20) + 24}) {
            auto shape = fb::makeShape(k, t, bytes, bs.size(), inPlace);
            coll->prepare(shape);
            double sec = coll->runBatch(3, fb::Deadline::in(std::chrono::seconds(30)));
            CHECK(sec > 0);
            for (int seed : {1, 2}) {
              INFO(fb::collName(k) << " " << fb::dtypeName(t) << " inPlace=" << inPlace << " bytes=" << bytes
                                   << " seed=" << seed << " rank=" << bs.rank());
              CHECK(coll->check(seed, fb::Deadline::in(std::chrono::seconds(30))) == 0);
            }
            if (shape.recvCount > 0) {
              // The last element of the output: corrupted after the op, counted on the GPU.
              coll->corruptNextCheck(shape.recvCount - 1);
              CHECK(coll->check(3, fb::Deadline::in(std::chrono::seconds(30))) == 1);
              CHECK(coll->check(4, fb::Deadline::in(std::chrono::seconds(30))) == 0);
            }
          }
        }
      }
    }
  }, std::chrono::seconds(300));
}

TEST_CASE("CUDA graph batches run and verify") {
  const std::string path = testPath();
  fb::runRanks(2, [&](fb::Bootstrap& bs) {
    fb::CollectiveOptions opts;
    opts.cudaGraph = true;
    auto coll = fb::nccl::makeCollective(fb::CollKind::kAllReduce, bs, opts, path);
    coll->prepare(fb::makeShape(fb::CollKind::kAllReduce, fb::DataType::kFloat32, 1 << 20, bs.size(), false));
    CHECK(coll->runBatch(5, fb::Deadline::in(std::chrono::seconds(30))) > 0);
    CHECK(coll->runBatch(5, fb::Deadline::in(std::chrono::seconds(30))) > 0);
    CHECK(coll->check(7, fb::Deadline::in(std::chrono::seconds(30))) == 0);
  }, std::chrono::seconds(120));
}

TEST_CASE("a rank that stops participating ends the other's wait at the deadline with NCCL aborted") {
  const std::string path = testPath();
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
      INFO(what);
      CHECK(what.find("aborted") != std::string::npos);
      CHECK(took < 15.0);
    } else {
      coll->runBatch(1, fb::Deadline::in(std::chrono::seconds(30)));
    }
    bs.barrier();
  }, std::chrono::seconds(120));
}

TEST_CASE("availablePaths and probe agree with the machine") {
  auto st = fb::nccl::probe();
  CHECK(st.built);
  CHECK(st.usable);
  CHECK(!fb::nccl::topologyText().empty());
  fb::runRanks(2, [&](fb::Bootstrap& bs) {
    auto paths = fb::nccl::availablePaths(bs);
    CHECK(!paths.empty());
    CHECK(std::find(paths.begin(), paths.end(), "socket") != paths.end());
  });
}

int main(int argc, char** argv) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n < 2) {
    std::cout << "SKIP: no CUDA device (" << (e == cudaSuccess ? std::to_string(n) + " visible" : cudaGetErrorString(e))
              << "); this test needs 2 GPUs\n";
    return 77;
  }
  return Catch::Session().run(argc, argv);
}

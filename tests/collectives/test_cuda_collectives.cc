// The CUDA IPC collectives end to end under mpirun -np 2 (one GPU per rank): every pattern,
// dtype and placement at odd sizes, both AllReduce algorithms, CUDA-graph replay, the
// corruption hook, and the P2P sanity check across ranks. Exits 77 on every rank (with the
// reason) when a rank sees no GPU.
#include <catch2/catch.hpp>

#include "catch_runner.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "bootstrap/mpi_bootstrap.h"
#include "collectives/cuda/cuda_collective.h"
#include "collectives/spec.h"
#include "core/units.h"
#include "gpu/cuda/p2p_check.h"

namespace {

fb::Bootstrap* gBs = nullptr;

fb::Deadline soon() { return fb::Deadline::in(std::chrono::seconds(10)); }

// Runs one collective over several sizes; returns the wrong count summed over ranks.
std::int64_t runSizes(fb::CollKind kind, fb::DataType dt, bool inPlace, const std::vector<std::size_t>& bytes,
                      bool graph = false) {
  fb::CollectiveOptions opts;
  opts.cudaGraph = graph;
  auto coll = fb::cudaipc::makeCollective(kind, *gBs, opts);
  std::int64_t wrong = 0;
  for (std::size_t b : bytes) {
    fb::CollShape shape = fb::makeShape(kind, dt, b, gBs->size(), inPlace);
    coll->prepare(shape);
    double sec = coll->runBatch(3, soon());
    CHECK(sec >= 0);
    std::int64_t w = 0;
    for (int seed : {2, 3}) w += coll->check(seed, soon());
    std::int64_t all = gBs->allReduceSum(w);
    if (all != 0)
      UNSCOPED_INFO(fb::collName(kind) << " " << fb::dtypeName(dt) << (inPlace ? " in-place" : "") << " " << b
                                       << " B: " << all << " wrong; path " << coll->path().label);
    wrong += all;
  }
  return wrong;
}

const std::vector<std::size_t> kSizes = {4, 12, 100, 1000, 4100, 65536, 65536 + 36, (1u << 20) + 8, (3u << 20) + 12};

}  // namespace

TEST_CASE("every pattern, dtype and placement is correct at odd sizes (auto algorithm)") {
  for (fb::CollKind kind : fb::allCollKinds())
    for (fb::DataType dt : {fb::DataType::kFloat32, fb::DataType::kFloat16, fb::DataType::kBFloat16})
      for (bool inPlace : {false, true}) {
        if (inPlace && !fb::describe(kind).hasInPlace) continue;  // out-of-place only (descriptor)
        INFO(fb::collName(kind) << " " << fb::dtypeName(dt) << (inPlace ? " in-place" : ""));
        CHECK(runSizes(kind, dt, inPlace, kSizes) == 0);
      }
}

TEST_CASE("AllReduce: ring and one-shot both correct, also replayed from a CUDA graph") {
  for (const char* algo : {"ring", "oneshot"}) {
    setenv("FB_CUDA_ALGO", algo, 1);
    std::vector<std::size_t> sizes = {4, 1000, 65536 + 4, (1u << 20)};
    INFO("algo " << algo);
    CHECK(runSizes(fb::CollKind::kAllReduce, fb::DataType::kFloat32, false, sizes) == 0);
    CHECK(runSizes(fb::CollKind::kAllReduce, fb::DataType::kBFloat16, true, sizes) == 0);
    CHECK(runSizes(fb::CollKind::kAllReduce, fb::DataType::kFloat16, false, sizes, /*graph=*/true) == 0);
  }
  unsetenv("FB_CUDA_ALGO");
  // LL (flags inside the data): odd sizes, partial 8-byte chunks, the largest that fits.
  setenv("FB_CUDA_ALGO", "ll", 1);
  for (fb::DataType dt : {fb::DataType::kFloat32, fb::DataType::kFloat16, fb::DataType::kBFloat16}) {
    INFO("algo ll " << fb::dtypeName(dt));
    CHECK(runSizes(fb::CollKind::kAllReduce, dt, false, {2, 4, 6, 1000, 4100, 65536 + 4, 1u << 19}) == 0);
    CHECK(runSizes(fb::CollKind::kAllReduce, dt, true, {6, 65536 + 36}) == 0);
  }
  {
    fb::CollectiveOptions graphOpts;
    graphOpts.cudaGraph = true;
    CHECK_THROWS_AS(fb::cudaipc::makeCollective(fb::CollKind::kAllReduce, *gBs, graphOpts), fb::ConfigError);
  }
  unsetenv("FB_CUDA_ALGO");
  // Auto: LL and the plain one-shot alternate on one staging area (stale lines must never
  // pass for new ones).
  CHECK(runSizes(fb::CollKind::kAllReduce, fb::DataType::kFloat32, false,
                 {65536 + 36, 1000, 65536 + 4, 64, 200000, 8, 8}) == 0);
  // Large ring with few blocks (long per-block slices) and with many.
  for (const char* blocks : {"3", "200"}) {
    setenv("FB_CUDA_BLOCKS", blocks, 1);
    CHECK(runSizes(fb::CollKind::kAllReduce, fb::DataType::kFloat32, false, {(16u << 20) + 4}) == 0);
    CHECK(runSizes(fb::CollKind::kReduceScatter, fb::DataType::kFloat32, true, {(16u << 20) + 8}) == 0);
  }
  unsetenv("FB_CUDA_BLOCKS");
}

TEST_CASE("check() counts a corrupted element (the test can fail)") {
  for (fb::CollKind kind : fb::allCollKinds()) {
    fb::CollectiveOptions opts;
    auto coll = fb::cudaipc::makeCollective(kind, *gBs, opts);
    fb::CollShape shape = fb::makeShape(kind, fb::DataType::kFloat32, 8192, gBs->size(), false);
    coll->prepare(shape);
    if (gBs->rank() == 1) coll->corruptNextCheck(std::size_t{5});
    std::int64_t mine = coll->check(2, soon());
    std::int64_t all = gBs->allReduceSum(mine);
    INFO(fb::collName(kind));
    CHECK(mine == (gBs->rank() == 1 ? 1 : 0));
    CHECK(all == 1);
    // And the next check is clean again.
    CHECK(gBs->allReduceSum(coll->check(3, soon())) == 0);
  }
}

TEST_CASE("probe: the P2P sanity check across ranks passes and says so") {
  fb::BackendStatus st = fb::cudaipc::probe(gBs);
  INFO(st.reason);
  CHECK(st.built);
  CHECK(st.usable);
  CHECK(st.reason.find("P2P ok") != std::string::npos);
}

TEST_CASE("sanity check with an injected hang reports the time-out, within bounds") {
  fb::cudaipc::P2PCheckOptions o;
  o.timeout = std::chrono::milliseconds(300);
  o.injectHang = true;
  auto t0 = std::chrono::steady_clock::now();
  fb::cudaipc::P2PReport r = fb::cudaipc::checkRanks(*gBs, o);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.summary);
  CHECK_FALSE(r.ok);
  CHECK(r.summary.find("did not complete within the 300 ms time-out") != std::string::npos);
  CHECK(ms < 5000);
  // Let the injected spin kernels end (they give up after 2x the time-out) before going on.
  cudaDeviceSynchronize();
  gBs->barrier();
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    fb::MpiBootstrap bs;
    gBs = &bs;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) n = 0;
    std::int64_t without = bs.allReduceSum(n == 0 ? 1 : 0);
    if (without > 0) {
      if (bs.rank() == 0) {
        const char* vis = std::getenv("CUDA_VISIBLE_DEVICES");
        std::printf("SKIP: %lld rank(s) see no CUDA GPU (%s; CUDA_VISIBLE_DEVICES=%s): run on the GPU host\n",
                    static_cast<long long>(without), e == cudaSuccess ? "0 devices" : cudaGetErrorString(e),
                    vis ? vis : "(unset)");
      }
      rc = 77;
    } else if (bs.size() < 2) {
      if (bs.rank() == 0) std::printf("SKIP: needs mpirun -np 2 or more\n");
      rc = 77;
    } else if (std::int64_t short_nodes = bs.allReduceSum(n < bs.localSize() ? 1 : 0); short_nodes > 0) {
      // Ranks sharing a GPU: NCCL refuses them ("Duplicate GPU detected") and peer copies need distinct GPUs.
      const int ranks = bs.localSize();
      const auto fewest = static_cast<int>(-bs.allReduceMax(-static_cast<double>(n)));
      if (bs.rank() == 0)
        std::printf("SKIP: needs one GPU per rank: %d GPUs for %d ranks\n", fewest, ranks);
      rc = 77;
    } else {
      rc = fb::test::runCatchSession(argc, argv);
      rc = static_cast<int>(bs.allReduceMax(rc));
    }
  }
  MPI_Finalize();
  return rc;
}

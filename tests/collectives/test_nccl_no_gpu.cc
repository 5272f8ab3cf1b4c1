// What the NCCL backend says on a machine without a GPU (CI): probe() answers quickly with
// usable = false and the reason, topologyText() is empty. On a GPU machine: exit 77.
#include <catch2/catch.hpp>

#include "catch_runner.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <iostream>

#include "collectives/nccl/nccl_collective.h"

TEST_CASE("probe without a GPU: usable = false, reason given, no hang") {
  auto t0 = std::chrono::steady_clock::now();
  auto st = fb::nccl::probe();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(st.name == "nccl");
  CHECK(st.built);
  CHECK_FALSE(st.usable);
  CHECK(st.reason.find("no CUDA device") != std::string::npos);
  CHECK(took < 10.0);
  CHECK(fb::nccl::topologyText().empty());
}

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) {
    std::cout << "SKIP: this test checks the no-GPU answers and this machine has " << n << " GPU(s)\n";
    return 77;
  }
  return fb::test::runCatchSession(argc, argv);
}

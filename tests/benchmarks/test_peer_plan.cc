// fabricbench-peer's plan (benchmarks/peer/peer_plan.h): which GPUs and which tests on 0, 1, 2 GPUs.
#include <catch2/catch.hpp>

#include "benchmarks/peer/peer_plan.h"

using fb::peer::planPeer;

namespace {
const std::vector<std::string> kDefault = {"ce", "sm", "bidir", "host", "reduce", "matrix", "sanity"};
}

TEST_CASE("peer plan: one GPU, no --gpus: one-GPU tests on GPU 0, pair tests skipped with the reason") {
  auto p = planPeer(1, false, {0, 1}, kDefault);
  CHECK(p.error.empty());
  REQUIRE(p.gpus.size() == 1);
  CHECK(p.gpus[0] == 0);
  REQUIRE(p.skipped.size() == 3);
  CHECK(p.skipped[0] == "ce");
  CHECK(p.skipped[1] == "sm");
  CHECK(p.skipped[2] == "bidir");
  CHECK(p.why == "they need two GPUs, 1 visible");
}

TEST_CASE("peer plan: one GPU with bulk asked for: bulk skipped too") {
  auto p = planPeer(1, false, {0, 1}, {"host", "bulk"});
  CHECK(p.error.empty());
  REQUIRE(p.skipped.size() == 1);
  CHECK(p.skipped[0] == "bulk");
}

TEST_CASE("peer plan: one GPU, only one-GPU tests: nothing skipped") {
  auto p = planPeer(1, false, {0, 1}, {"host", "reduce", "matrix", "sanity"});
  CHECK(p.error.empty());
  CHECK(p.skipped.empty());
  CHECK(p.why.empty());
}

TEST_CASE("peer plan: --gpus naming a GPU that does not exist is bad input") {
  auto p = planPeer(1, true, {0, 1}, kDefault);
  CHECK(p.error == "--gpus: GPU 1 does not exist (1 visible");
  auto q = planPeer(2, true, {0, 2}, kDefault);
  CHECK(q.error == "--gpus: GPU 2 does not exist (2 visible");
  auto r = planPeer(2, true, {-1}, kDefault);
  CHECK(r.error == "--gpus: GPU -1 does not exist (2 visible");
}

TEST_CASE("peer plan: two GPUs run everything; one --gpus on two GPUs skips the pair tests") {
  auto p = planPeer(2, false, {0, 1}, kDefault);
  CHECK(p.error.empty());
  CHECK(p.skipped.empty());
  CHECK(p.gpus == std::vector<int>{0, 1});
  auto q = planPeer(2, true, {1}, kDefault);
  CHECK(q.gpus == std::vector<int>{1});
  CHECK(q.skipped == std::vector<std::string>{"ce", "sm", "bidir"});
  CHECK(q.why == "they need two distinct GPUs (--gpus a,b)");
}

TEST_CASE("peer plan: no GPU: nothing decided here (the run is skipped as 'no GPU')") {
  auto p = planPeer(0, false, {0, 1}, kDefault);
  CHECK(p.error.empty());
  CHECK(p.skipped.empty());
  CHECK(p.gpus == std::vector<int>{0, 1});
}

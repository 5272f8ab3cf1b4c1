// SocketPairBootstrap (fabricbench-verbs --server / --peer): the control plane of the TCP pair
// mode, on loopback, without RDMA hardware. Exchanges are checked byte by byte; lost peers and
// absent servers must end in an error within the time-out, never a hang.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "bootstrap/socket_pair_bootstrap.h"
#include "core/error.h"

using fb::verbs::SocketPairBootstrap;
using namespace std::chrono_literals;

namespace {
// Below Linux's ephemeral range (32768-60999 by default): a port taken there by some client
// connection made the server's bind fail now and then, and the client waited out its time-out.
int testPort(int k) { return 12000 + (int(::getpid()) * 7 + k * 101) % 20000; }
}  // namespace

TEST_CASE("socket pair: ranks, allGather of uneven blobs, reductions, barrier") {
  const int port = testPort(1);
  auto server = std::async(std::launch::async, [&] {
    SocketPairBootstrap bs("", port, 10s);
    std::vector<std::byte> mine(100000);
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = std::byte((i * 7 + 1) & 0xff);
    auto all = bs.allGather(mine);
    bs.barrier();
    double mx = bs.allReduceMax(-3.5);
    std::int64_t sum = bs.allReduceSum(40);
    return std::make_tuple(bs.rank(), all, mx, sum);
  });
  SocketPairBootstrap client("127.0.0.1", port, 10s);  // retries until the server listens
  std::vector<std::byte> mine(3);
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = std::byte(0xa0 + i);
  auto all = client.allGather(mine);
  client.barrier();
  double mx = client.allReduceMax(2.25);
  std::int64_t sum = client.allReduceSum(2);
  auto [srank, sall, smx, ssum] = server.get();

  CHECK(client.rank() == 0);
  CHECK(srank == 1);
  CHECK(client.size() == 2);
  REQUIRE(all.size() == 2);
  REQUIRE(sall.size() == 2);
  CHECK(all[0] == mine);
  CHECK(sall[0] == mine);
  REQUIRE(all[1].size() == 100000);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < all[1].size(); ++i) wrong += all[1][i] != std::byte((i * 7 + 1) & 0xff);
  CHECK(wrong == 0);
  CHECK(sall[1] == all[1]);
  CHECK(mx == 2.25);
  CHECK(smx == 2.25);
  CHECK(sum == 42);
  CHECK(ssum == 42);
}

TEST_CASE("socket pair: a peer that goes away is an IoError, not a hang") {
  const int port = testPort(2);
  auto server = std::async(std::launch::async, [&] {
    SocketPairBootstrap bs("", port, 10s);
    bs.barrier();
    // leaves: the destructor closes the connection
  });
  SocketPairBootstrap client("127.0.0.1", port, 10s);
  client.barrier();
  server.get();
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(client.barrier(), fb::IoError);
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
}

TEST_CASE("socket pair: no server within the time-out is a TimeoutError naming the fix") {
  auto t0 = std::chrono::steady_clock::now();
  try {
    SocketPairBootstrap client("127.0.0.1", testPort(3), 700ms);
    FAIL("connected to nobody");
  } catch (const fb::TimeoutError& e) {
    CHECK(std::string(e.what()).find("--server") != std::string::npos);
  }
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took >= 600ms);
  CHECK(took < 5s);
}

TEST_CASE("socket pair: a server nobody joins gives up at its time-out") {
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(SocketPairBootstrap("", testPort(4), 700ms), fb::TimeoutError);
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
}

// tcp-only checks: interface choice, strangers on the listening port, path(), set-up timeout.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "bootstrap/thread_bootstrap.h"
#include "core/error.h"
#include "harness.h"
#include "transport/tcp/socket.h"
#include "transport/tcp/tcp_transport.h"

using namespace fb;
using namespace fb::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

std::string pathDetail(const PathInfo& p, const std::string& key) {
  for (auto& [k, v] : p.details)
    if (k == key) return v;
  return "";
}

// A blocking client socket connected to `to` (the "stranger").
tcp::Socket dial(const tcp::Endpoint& to) {
  tcp::Socket s(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in sa = to.sockaddr();
  if (::connect(s.fd(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) return tcp::Socket();
  return s;
}

// True when the server closed the connection within `ms` (EOF or reset).
bool closedByServer(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) <= 0) return false;
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

}  // namespace

TEST_CASE("tcp: interface choice", "[tcp]") {
  SECTION("an unknown interface name is a ConfigError naming it and listing the others") {
    REQUIRE_THROWS_AS(tcp::chooseInterface("nosuchif0", ""), ConfigError);
    REQUIRE_THROWS_WITH(tcp::chooseInterface("nosuchif0", ""), Contains("nosuchif0") && Contains("lo 127.0.0.1"));
  }
  SECTION("an address that is not local is a ConfigError") {
    REQUIRE_THROWS_AS(tcp::chooseInterface("203.0.113.77", ""), ConfigError);
  }
  SECTION("lo by name and by address") {
    CHECK(tcp::chooseInterface("lo", "").ip() == "127.0.0.1");
    CHECK(tcp::chooseInterface("127.0.0.1", "").name == "lo");
  }
  SECTION("default: a non-loopback up interface when there is one, else 127.0.0.1") {
    bool haveReal = false;
    for (auto& i : tcp::localInterfaces()) haveReal |= i.up && !i.loopback;
    std::string how;
    auto chosen = tcp::chooseInterface("", "localhost", &how);
    INFO(chosen.name << " " << chosen.ip() << ": " << how);
    CHECK(chosen.loopback == !haveReal);
  }
  SECTION("createTransport with a bad --tcp-if fails with ConfigError on every rank") {
    TransportOptions o;
    o.tcpInterface = "nosuchif0";
    std::atomic<int> configErrors{0};
    runRanks(2, [&](Bootstrap& bs) {
      try {
        tcp::createTransport(bs, o);
      } catch (const ConfigError&) {
        ++configErrors;
      }
    });
    CHECK(configErrors == 2);
  }
  SECTION("probe says what it would use") {
    auto s = tcp::probe(TransportOptions{});
    CHECK(s.built);
    CHECK(s.usable);
    CHECK_THAT(s.reason, Contains("would use"));
    TransportOptions bad;
    bad.tcpInterface = "nosuchif0";
    CHECK_FALSE(tcp::probe(bad).usable);
  }
}

TEST_CASE("tcp: path() on lo", "[tcp]") {
  TransportOptions o;
  o.tcpInterface = "lo";
  std::mutex mu;
  std::vector<PathInfo> paths;
  runRanks(2, [&](Bootstrap& bs) {
    auto t = tcp::createTransport(bs, o);
    std::lock_guard<std::mutex> lk(mu);
    paths.push_back(t->path());
  });
  REQUIRE(paths.size() == 2);
  for (auto& p : paths) {
    CHECK(p.label == "tcp lo 127.0.0.1 same host (loopback path)");  // both ranks on this host
    CHECK(pathDetail(p, "interface") == "lo");
    CHECK(pathDetail(p, "address") == "127.0.0.1");
    CHECK(pathDetail(p, "mtu") == tcp::readFirstLine("/sys/class/net/lo/mtu"));
    CHECK_THAT(pathDetail(p, "socket buffers"), Contains("SO_SNDBUF"));
    CHECK(!pathDetail(p, "link speed").empty());
    for (auto& [k, v] : p.details) UNSCOPED_INFO(k << ": " << v);
  }
}

TEST_CASE("tcp: strangers on the listening port are dropped and the job still connects", "[tcp]") {
  constexpr int n = 3;
  std::mutex mu;
  std::vector<tcp::Socket> strangers[n];
  std::vector<std::string> problems;
  std::vector<std::string> dropped(n);
  auto hook = [&](Bootstrap& bs, const tcp::SetupInfo& info) {
    // Before any peer connects, strangers reach this rank's port: one with a wrong token, one
    // that says nothing, one with the right token but an impossible rank (itself), one with a
    // rank out of range.
    std::vector<tcp::Socket> mine;
    tcp::Token wrong = info.token;
    wrong[0] ^= std::byte{1};
    auto send = [&](const std::vector<std::byte>& hello) {
      tcp::Socket s = dial(info.endpoints[info.rank]);
      if (!s.valid() || ::send(s.fd(), hello.data(), hello.size(), 0) != static_cast<ssize_t>(hello.size()))
        throw Error("stranger could not connect");
      mine.push_back(std::move(s));
    };
    send(tcp::helloMessage(n - 1, wrong));
    mine.push_back(dial(info.endpoints[info.rank]));  // silent
    send(tcp::helloMessage(info.rank, info.token));
    send(tcp::helloMessage(99, info.token));
    {
      std::lock_guard<std::mutex> lk(mu);
      strangers[info.rank] = std::move(mine);
    }
    bs.barrier();  // all strangers are queued before any real peer connects
  };
  runRanks(n, [&](Bootstrap& bs) {
    auto t = tcp::createTransport(bs, TransportOptions{}, hook);
    int me = bs.rank();
    Buffer send(*t, 100003), recv(*t, 100003);
    fillPattern(send.data(), send.size(), me, (me + 1) % n, 7);
    t->ringExchange(send.data(), send.size(), recv.data(), recv.size(), Deadline::in(10s));
    std::size_t wrong = countWrong(recv.data(), recv.size(), (me + n - 1) % n, me, 7);
    std::lock_guard<std::mutex> lk(mu);
    if (wrong) problems.push_back("rank " + std::to_string(me) + ": " + std::to_string(wrong) + " wrong bytes");
    dropped[me] = pathDetail(t->path(), "dropped unauthenticated connections");
  });
  for (auto& p : problems) UNSCOPED_INFO(p);
  CHECK(problems.empty());
  // Ranks 0 and 1 accept real peers after the strangers, so they must have dropped at least
  // the wrong token and the wrong ranks before finishing.
  CHECK(std::atoi(dropped[0].c_str()) >= 3);
  CHECK(std::atoi(dropped[1].c_str()) >= 3);
  // Every stranger's connection is closed by now (dropped, or the listener is gone).
  for (int r = 0; r < n; ++r)
    for (auto& s : strangers[r]) CHECK(closedByServer(s.fd(), 2000));
}

TEST_CASE("tcp: 100 idle strangers per rank never take a peer's place", "[tcp]") {
  // More silent connections than the 64 the listener keeps waiting: the oldest are closed, the
  // real peers (which say hello at once) still connect, and the ring moves correct data.
  constexpr int n = 3, kIdle = 100;
  std::mutex mu;
  std::vector<tcp::Socket> strangers[n];
  std::vector<std::string> problems;
  auto hook = [&](Bootstrap& bs, const tcp::SetupInfo& info) {
    // Non-blocking connects: the listen backlog is smaller than kIdle, and nothing accepts until
    // this hook returns, so a blocking connect would wait for the kernel's SYN retries.
    std::vector<tcp::Socket> mine;
    for (int i = 0; i < kIdle; ++i) {
      tcp::Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
      sockaddr_in sa = info.endpoints[info.rank].sockaddr();
      ::connect(s.fd(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa));  // EINPROGRESS
      mine.push_back(std::move(s));
    }
    {
      std::lock_guard<std::mutex> lk(mu);
      strangers[info.rank] = std::move(mine);
    }
    bs.barrier();
  };
  runRanks(n, [&](Bootstrap& bs) {
    TransportOptions o;
    o.connectTimeout = 10s;
    auto t = tcp::createTransport(bs, o, hook);
    int me = bs.rank();
    Buffer send(*t, 4099), recv(*t, 4099);
    fillPattern(send.data(), send.size(), me, (me + 1) % n, 3);
    t->ringExchange(send.data(), send.size(), recv.data(), recv.size(), Deadline::in(10s));
    std::size_t wrong = countWrong(recv.data(), recv.size(), (me + n - 1) % n, me, 3);
    std::lock_guard<std::mutex> lk(mu);
    if (wrong) problems.push_back("rank " + std::to_string(me) + ": " + std::to_string(wrong) + " wrong bytes");
  });
  for (auto& p : problems) UNSCOPED_INFO(p);
  CHECK(problems.empty());
  // Every stranger that got through is closed by now (dropped, or the listener is gone); one
  // still in the backlog when the listener closed is reset.
  int open = 0;
  for (int r = 0; r < n; ++r)
    for (auto& s : strangers[r]) {
      pollfd p{s.fd(), POLLIN, 0};
      if (::poll(&p, 1, 2000) <= 0) ++open;
    }
  CHECK(open == 0);
}

TEST_CASE("tcp: an accepted connection that says no hello is closed within its hello deadline", "[tcp]") {
  // Rank 1 shows up 5 s late; meanwhile a silent stranger on rank 0's port must be closed after
  // about 3 s (the hello deadline), long before the set-up ends.
  std::atomic<double> closedAfter{-1};
  std::thread watcher;
  tcp::Socket stranger;
  auto hook = [&](Bootstrap& bs, const tcp::SetupInfo& info) {
    if (bs.rank() == 0) {
      stranger = dial(info.endpoints[0]);
      double t0 = now();
      int fd = stranger.fd();
      watcher = std::thread([&closedAfter, fd, t0] {
        if (closedByServer(fd, 9000)) closedAfter = now() - t0;
      });
    }
    if (bs.rank() == 1) std::this_thread::sleep_for(5s);
  };
  runRanks(2, [&](Bootstrap& bs) {
    TransportOptions o;
    o.connectTimeout = 15s;
    tcp::createTransport(bs, o, hook);
  });
  if (watcher.joinable()) watcher.join();
  INFO("stranger closed after " << closedAfter.load() << " s");
  CHECK(closedAfter.load() > 2.5);
  CHECK(closedAfter.load() < 4.5);
}

TEST_CASE("tcp: a rank that never shows up is a TimeoutError naming it", "[tcp]") {
  TransportOptions o;
  o.connectTimeout = 500ms;
  std::string err0;
  double took = 0;
  auto hook = [&](Bootstrap& bs, const tcp::SetupInfo&) {
    if (bs.rank() == 1) std::this_thread::sleep_for(1500ms);
  };
  runRanks(2, [&](Bootstrap& bs) {
    double t0 = now();
    try {
      tcp::createTransport(bs, o, hook);
    } catch (const TimeoutError& e) {
      if (bs.rank() == 0) err0 = e.what(), took = now() - t0;
    }
  });
  INFO(err0);
  CHECK_THAT(err0, Contains("rank 1"));
  CHECK(took < 1.4);
}

TEST_CASE("tcp: a lost peer's message names its address", "[tcp]") {
  TransportOptions o;
  o.tcpInterface = "lo";
  std::string what;
  int peer = -1;
  runRanks(2, [&](Bootstrap& bs) {
    auto t = tcp::createTransport(bs, o);
    std::vector<char> b(1000);
    bs.barrier();
    if (bs.rank() == 1) t.reset();
    bs.barrier();
    if (bs.rank() == 0) {
      try {
        auto r = t->irecv(1, b.data(), b.size());
        t->wait(r, Deadline::in(5s));
      } catch (const IoError& e) {
        what = e.what();
        peer = e.peer();
      }
    }
  });
  INFO(what);
  CHECK(peer == 1);
  CHECK_THAT(what, Contains("lost connection to rank 1") && Contains("127.0.0.1:"));
}

TEST_CASE("tcp: signals during wait (EINTR) do not break transfers", "[tcp]") {
  struct sigaction sa {};
  sa.sa_handler = [](int) {};
  sa.sa_flags = 0;  // no SA_RESTART: poll/sendmsg/readv see EINTR
  struct sigaction old {};
  REQUIRE(::sigaction(SIGUSR1, &sa, &old) == 0);
  constexpr std::size_t n = 16u << 20;
  std::atomic<int> registered{0}, finished{0};
  std::atomic<bool> killerDone{false};
  std::atomic<long> signalsSent{0};
  pthread_t tids[2];
  std::size_t wrong[2] = {1, 1};
  std::thread killer([&] {
    while (registered < 2) std::this_thread::yield();
    while (finished < 2) {
      for (auto t : tids) ::pthread_kill(t, SIGUSR1);
      signalsSent += 2;
      std::this_thread::sleep_for(50us);
    }
    killerDone = true;
  });
  runRanks(2, [&](Bootstrap& bs) {
    auto t = tcp::createTransport(bs, TransportOptions{});
    int me = bs.rank(), peer = 1 - me;
    tids[me] = ::pthread_self();
    ++registered;
    Buffer send(*t, n), recv(*t, n);
    std::size_t bad = 0;
    for (int k = 0; k < 3; ++k) {
      fillPattern(send.data(), n, me, peer, k);
      t->ringExchange(send.data(), n, recv.data(), n, Deadline::in(60s));
      bad += countWrong(recv.data(), n, peer, me, k);
    }
    wrong[me] = bad;
    ++finished;
    while (!killerDone) std::this_thread::yield();  // no signal may target an exited thread
  });
  killer.join();
  ::sigaction(SIGUSR1, &old, nullptr);
  INFO(signalsSent.load() << " signals sent");
  CHECK(signalsSent > 10);
  CHECK(wrong[0] == 0);
  CHECK(wrong[1] == 0);
}

TEST_CASE("tcp: a send that times out says what the kernel holds on that connection", "[tcp]") {
  TransportOptions o;
  o.tcpInterface = "lo";
  std::string what;
  runRanks(2, [&](Bootstrap& bs) {
    auto t = tcp::createTransport(bs, o);
    std::vector<char> b(32u << 20);  // far more than both socket buffers hold
    if (bs.rank() == 0) {
      try {
        auto s = t->isend(1, b.data(), b.size());
        t->wait(s, Deadline::in(300ms));  // rank 1 never posts the receive
      } catch (const TimeoutError& e) {
        what = e.what();
      }
    }
    bs.barrier();
  });
  INFO(what);
  CHECK_THAT(what, Contains("[rank 1 kernel: 0 B to read, "));
  CHECK_THAT(what, Contains(" B unacknowledged"));
  CHECK_THAT(what, Contains("zero-window probes"));
  CHECK_FALSE(Catch::Matchers::Contains(", 0 B unacknowledged").match(what));  // the bytes rank 1 never read
}

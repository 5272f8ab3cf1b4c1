#include "doctor/run.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "core/error.h"
#include "doctor/util.h"
#include "transport/tcp/socket.h"

namespace fb::doctor {
using namespace util;
namespace {

using Clock = std::chrono::steady_clock;

// Listens on addr:0 and echoes 8 bytes to whoever connects, until stop.
class EchoServer {
 public:
  explicit EchoServer(const std::string& ip) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw IoError(std::string("socket: ") + std::strerror(errno));
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 64) != 0) {
      std::string e = std::strerror(errno);
      ::close(fd_);
      throw IoError("cannot listen on " + ip + ": " + e);
    }
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    th_ = std::thread([this] { loop(); });
  }
  ~EchoServer() {
    stop_ = true;
    th_.join();
    ::close(fd_);
  }
  int port() const { return port_; }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      timeval tv{2, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      char buf[8];
      std::size_t got = 0;
      while (got < 8) {
        ssize_t n = ::recv(c, buf + got, 8 - got, 0);
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
      }
      if (got == 8) (void)!::send(c, buf, 8, MSG_NOSIGNAL);
      ::close(c);
    }
  }
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread th_;
};

// Connect to ip:port within the deadline, send 8 bytes, expect them back. "" on success.
std::string probe(const std::string& ipPort, std::chrono::milliseconds timeout, double& ms) {
  auto colon = ipPort.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(std::atoi(ipPort.c_str() + colon + 1)));
  if (::inet_pton(AF_INET, ipPort.substr(0, colon).c_str(), &a.sin_addr) != 1) return "bad address " + ipPort;
  auto t0 = Clock::now();
  auto left = [&] {
    return static_cast<int>(std::max<long long>(
        0, (timeout - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0)).count()));
  };
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return std::string("socket: ") + std::strerror(errno);
  std::string err;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    err = std::string("connect: ") + std::strerror(errno);
  } else {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, left()) <= 0) {
      err = "no answer to connect within " + std::to_string(timeout.count()) + " ms";
    } else {
      int soerr = 0;
      socklen_t l = sizeof soerr;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &l);
      if (soerr) err = std::string("connect: ") + std::strerror(soerr);
    }
  }
  if (err.empty()) {
    const char msg[8] = {'f', 'b', 'd', 'o', 'c', 't', 'o', 'r'};
    char back[8];
    std::size_t sent = 0, got = 0;
    while (err.empty() && got < 8) {
      pollfd p{fd, static_cast<short>(sent < 8 ? POLLOUT : POLLIN), 0};
      if (::poll(&p, 1, left()) <= 0) {
        err = "connected, but no echo within " + std::to_string(timeout.count()) + " ms";
        break;
      }
      if (sent < 8) {
        ssize_t n = ::send(fd, msg + sent, 8 - sent, MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN) err = std::string("send: ") + std::strerror(errno);
        if (n > 0) sent += static_cast<std::size_t>(n);
      } else {
        ssize_t n = ::recv(fd, back + got, 8 - got, 0);
        if (n == 0) err = "connection closed before the echo";
        if (n < 0 && errno != EAGAIN) err = std::string("recv: ") + std::strerror(errno);
        if (n > 0) got += static_cast<std::size_t>(n);
      }
    }
    if (err.empty() && std::memcmp(msg, back, 8) != 0) err = "echo differs (another service on that port?)";
  }
  ::close(fd);
  ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return err;
}

void writeAtomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw IoError("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

std::pair<std::string, std::string> reachAddress(const Machine& m, const std::string& tcpIf, const std::string& host) {
  if (auto v = m.env("NCCL_SOCKET_IFNAME"); v && !v->empty()) {
    std::string s = *v;
    bool exclude = s[0] == '^', exact = s[0] == '=';
    if (exclude || exact) s = s.substr(1);
    auto names = split(s, ',');
    for (const auto& i : m.interfaces()) {
      if (!i.up || i.ipv4.empty()) continue;
      bool hit = false;
      for (const auto& n : names) hit = hit || (exact ? i.name == n : startsWith(i.name, n));
      if (exclude ? (!hit && i.name != "lo") : hit) return {i.ipv4[0], i.name + " (NCCL_SOCKET_IFNAME=" + *v + ")"};
    }
    throw ConfigError("NCCL_SOCKET_IFNAME=" + *v + " matches no interface that is up with an IPv4 address here");
  }
  std::string how;
  auto i = tcp::chooseInterface(tcpIf, host, &how);
  return {i.ip(), i.name + " (" + how + ")"};
}

int runDoctor(Bootstrap& bs, const Hooks& hooks, const RunOptions& o) {
  const bool checker = bs.localRank() == 0;
  Machine m("/");
  NodeReport mine;
  if (checker) {
    try {
      mine = checkNode(m, hooks, bs.hostname(), o.required);
    } catch (const std::exception& e) {
      mine.host = bs.hostname();
      mine.findings.push_back({"doctor", Verdict::kFail, std::string("the checks stopped: ") + e.what(), "", ""});
    }
  }
  // Fingerprint of every rank (the result folder carries one, as every run's does).
  nlohmann::json local = collectLocalFingerprint(o.fingerprint);
  auto fps = bs.allGatherStrings(local.dump());

  // Reachability: each node listens on its tcp / NCCL socket address, then connects to every other.
  Reachability reach;
  std::unique_ptr<EchoServer> server;
  if (checker) {
    try {
      auto [ip, how] = reachAddress(m, o.tcpInterface, bs.hostname());
      reach.iface = how;
      server = std::make_unique<EchoServer>(ip);
      reach.address = ip + ":" + std::to_string(server->port());
    } catch (const std::exception& e) {
      reach.error = e.what();
    }
  }
  auto addrs = bs.allGatherStrings(checker ? bs.hostname() + "\n" + reach.address : "");
  if (checker) {
    for (int q = 0; q < bs.size(); ++q) {
      if (q == bs.rank() || addrs[q].empty()) continue;
      std::string host = addrs[q].substr(0, addrs[q].find('\n'));
      std::string addr = addrs[q].substr(addrs[q].find('\n') + 1);
      if (host == bs.hostname()) continue;
      if (addr.empty()) {
        reach.failures[host] = "it has no address to reach (see its own entry)";
        continue;
      }
      if (reach.address.empty()) continue;  // this node could not listen: its error says why
      double ms = 0;
      std::string err = probe(addr, o.connectTimeout, ms);
      if (err.empty()) reach.okMs[host] = ms;
      else reach.failures[host] = addr + ": " + err;
    }
  }
  nlohmann::json rj = {{"iface", reach.iface}, {"address", reach.address}, {"error", reach.error},
                       {"failures", reach.failures}, {"ok_ms", reach.okMs}};
  auto all = bs.allGatherStrings(checker ? nlohmann::json{{"node", toJson(mine)}, {"reach", rj}}.dump() : "");
  server.reset();  // everyone has finished connecting (the gather above is the barrier)

  int rc = 0;
  if (bs.rank() == 0) {
    std::vector<NodeReport> nodes;
    std::vector<Reachability> reaches;
    for (const auto& s : all) {
      if (s.empty()) continue;
      auto j = nlohmann::json::parse(s);
      nodes.push_back(nodeFromJson(j["node"]));
      Reachability r;
      const auto& x = j["reach"];
      r.iface = x.value("iface", "");
      r.address = x.value("address", "");
      r.error = x.value("error", "");
      r.failures = x.value("failures", std::map<std::string, std::string>{});
      r.okMs = x.value("ok_ms", std::map<std::string, double>{});
      reaches.push_back(r);
    }
    Report rep = aggregate(nodes, reaches);
    std::string table = renderTable(rep);
    std::cout << "fabricbench --doctor: " << nodes.size() << " node(s), one checking rank each\n\n" << table << std::flush;
    rc = rep.exitCode();
    // --require: one line per node group lacking a required device, naming them.
    for (const auto& row : rep.rows)
      if (startsWith(row.id, "require.") && row.verdict == Verdict::kFail)
        std::cout << "fabricbench --doctor: " << row.id << " failed on " << join(row.nodes, ",") << ": " << row.evidence << "\n";
    std::cout << std::flush;
    if (!o.resultDir.empty()) {
      std::vector<nlohmann::json> per;
      for (auto& f : fps) per.push_back(nlohmann::json::parse(f));
      nlohmann::json j = toJson(rep, nodes);
      j["run_id"] = o.runId;
      j["command_line"] = o.commandLine;
      j["fingerprint"] = mergeFingerprints(per);
      j["fingerprint"]["ranks"] = bs.size();
      j["fingerprint"]["nodes"] = nodes.size();
      std::filesystem::create_directories(o.resultDir);
      writeAtomically(o.resultDir + "/doctor.txt", table);
      writeAtomically(o.resultDir + "/doctor.json", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
      std::cout << "# doctor.json and doctor.txt in " << o.resultDir << "/\n" << std::flush;
    }
  }
  double agreed = bs.allReduceMax(static_cast<double>(rc));
  return static_cast<int>(agreed);
}

}  // namespace fb::doctor

#include "transport/tcp/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"

namespace fb::tcp {

void Socket::reset() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

sockaddr_in Endpoint::sockaddr() const {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = addr;
  sa.sin_port = htons(port);
  return sa;
}

namespace {
std::string ipString(std::uint32_t addr) {
  char buf[INET_ADDRSTRLEN] = {};
  in_addr a{};
  a.s_addr = addr;
  ::inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return buf;
}
bool isLoopback(std::uint32_t addr) { return (ntohl(addr) >> 24) == 127; }
}  // namespace

std::string Endpoint::ip() const { return ipString(addr); }
std::string Endpoint::str() const { return ip() + ":" + std::to_string(port); }
std::string Interface::ip() const { return ipString(addr); }

std::vector<Interface> localInterfaces() {
  ifaddrs* list = nullptr;
  FB_SYSCALL_CHECK(::getifaddrs(&list));
  std::vector<Interface> out;
  for (ifaddrs* p = list; p; p = p->ifa_next) {
    if (!p->ifa_addr || p->ifa_addr->sa_family != AF_INET) continue;
    Interface i;
    i.name = p->ifa_name;
    i.addr = reinterpret_cast<const sockaddr_in*>(p->ifa_addr)->sin_addr.s_addr;
    i.up = (p->ifa_flags & IFF_UP) && (p->ifa_flags & IFF_RUNNING);
    i.loopback = (p->ifa_flags & IFF_LOOPBACK) || isLoopback(i.addr);
    out.push_back(i);
  }
  ::freeifaddrs(list);
  return out;
}

std::string describeInterfaces() {
  std::string s;
  std::set<std::string> withIp;
  for (auto& i : localInterfaces()) {
    if (!s.empty()) s += ", ";
    s += i.name + " " + i.ip() + (i.up ? "" : " (down)");
    withIp.insert(i.name);
  }
  // Interfaces that exist but carry no IPv4 address (if_nameindex lists them all).
  if (struct if_nameindex* names = ::if_nameindex()) {
    for (auto* n = names; n->if_index != 0; ++n) {
      if (withIp.count(n->if_name)) continue;
      if (!s.empty()) s += ", ";
      s += std::string(n->if_name) + " (no IPv4)";
    }
    ::if_freenameindex(names);
  }
  return s.empty() ? "none" : s;
}

Interface chooseInterface(const std::string& spec, const std::string& hostname, std::string* how) {
  auto all = localInterfaces();
  auto say = [&](std::string why) {
    if (how) *how = std::move(why);
  };
  if (!spec.empty()) {
    in_addr a{};
    if (::inet_pton(AF_INET, spec.c_str(), &a) == 1) {
      for (auto& i : all)
        if (i.addr == a.s_addr) {
          say("address given by --tcp-if");
          return i;
        }
      FB_THROW(ConfigError, "tcp: address '", spec, "' is not assigned to any local interface (available: ",
               describeInterfaces(), ")");
    }
    for (auto& i : all)
      if (i.name == spec) {
        if (!i.up) FB_THROW(ConfigError, "tcp: interface '", spec, "' is down (available: ", describeInterfaces(), ")");
        say("interface given by --tcp-if");
        return i;
      }
    bool exists = ::if_nametoindex(spec.c_str()) != 0;
    FB_THROW(ConfigError, "tcp: ", exists ? "interface '" + spec + "' has no IPv4 address" : "unknown interface '" + spec + "'",
             " (available: ", describeInterfaces(), ")");
  }
  // 1. The address the hostname resolves to, when it is a real (non-loopback) local address.
  if (!hostname.empty()) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(hostname.c_str(), nullptr, &hints, &res) == 0) {
      for (addrinfo* p = res; p; p = p->ai_next) {
        auto addr = reinterpret_cast<const sockaddr_in*>(p->ai_addr)->sin_addr.s_addr;
        if (isLoopback(addr)) continue;
        for (auto& i : all)
          if (i.addr == addr && i.up && !i.loopback) {
            ::freeaddrinfo(res);
            say("address of hostname '" + hostname + "'");
            return i;
          }
      }
      ::freeaddrinfo(res);
    }
  }
  // 2. The first non-loopback interface that is up.
  for (auto& i : all)
    if (i.up && !i.loopback) {
      say("first non-loopback interface that is up (hostname '" + hostname + "' gave no such address)");
      return i;
    }
  // 3. Loopback.
  for (auto& i : all)
    if (i.loopback && i.addr == htonl(INADDR_LOOPBACK)) {
      say("no non-loopback interface is up");
      return i;
    }
  Interface lo;
  lo.name = "lo";
  lo.addr = htonl(INADDR_LOOPBACK);
  lo.up = lo.loopback = true;
  say("no interface found; loopback");
  return lo;
}

void setNonBlocking(int fd) {
  int flags = FB_SYSCALL_CHECK(::fcntl(fd, F_GETFL, 0));
  FB_SYSCALL_CHECK(::fcntl(fd, F_SETFL, flags | O_NONBLOCK));
}

void setNoDelay(int fd) {
  int one = 1;
  FB_SYSCALL_CHECK(::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
}

namespace {
std::size_t readSysctl(const char* path) {
  auto line = readFirstLine(path);
  try {
    return line.empty() ? 0 : std::stoull(line);
  } catch (...) {
    return 0;
  }
}
}  // namespace

std::string setBufferSizes(int fd, std::size_t bytes) {
  if (bytes == 0) return "";
  // Setting SO_*BUF turns off autotuning and is capped at *mem_max: only worth it when the
  // kernel lets us have at least what we ask for.
  static const std::size_t wmax = readSysctl("/proc/sys/net/core/wmem_max");
  static const std::size_t rmax = readSysctl("/proc/sys/net/core/rmem_max");
  int v = static_cast<int>(bytes);
  std::string skipped;
  if (wmax >= bytes)
    FB_SYSCALL_CHECK(::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)));
  else
    skipped += "SO_SNDBUF left to autotuning (net.core.wmem_max " + std::to_string(wmax) + ")";
  if (rmax >= bytes)
    FB_SYSCALL_CHECK(::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
  else
    skipped += std::string(skipped.empty() ? "" : ", ") + "SO_RCVBUF left to autotuning (net.core.rmem_max " +
               std::to_string(rmax) + ")";
  return skipped;
}

std::string setCongestion(int fd, const std::string& name) {
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())) == 0) return "";
  return detail::errnoText(errno);
}

std::string congestionOf(int fd) {
  char buf[32] = {};
  socklen_t len = sizeof(buf);
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, buf, &len) != 0) return "unknown";
  return std::string(buf, strnlen(buf, std::min<std::size_t>(len, sizeof(buf))));
}

std::vector<std::string> availableCongestion() {
  std::istringstream in(readFirstLine("/proc/sys/net/ipv4/tcp_available_congestion_control"));
  std::vector<std::string> v;
  for (std::string w; in >> w;) v.push_back(w);
  return v;
}

std::string systemCongestion() {
  std::string s = readFirstLine("/proc/sys/net/ipv4/tcp_congestion_control");
  return s.empty() ? "unknown" : s;
}

std::pair<int, int> grantedBufferSizes(int fd) {
  int s = 0, r = 0;
  socklen_t len = sizeof(int);
  ::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &s, &len);
  len = sizeof(int);
  ::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &r, &len);
  return {s, r};
}

std::string kernelState(int fd) {
  int inq = -1, outq = -1;
  if (::ioctl(fd, SIOCINQ, &inq) != 0) inq = -1;
  if (::ioctl(fd, SIOCOUTQ, &outq) != 0) outq = -1;
  tcp_info ti{};
  socklen_t len = sizeof(ti);
  bool info = ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0;
  if (inq < 0 && outq < 0 && !info) return "";
  std::string s = "kernel: " + std::to_string(inq) + " B to read, " + std::to_string(outq) + " B unacknowledged";
  if (info)
    s += ", " + std::to_string(ti.tcpi_probes) + " zero-window probes, " + std::to_string(ti.tcpi_retransmits) +
         " retransmissions (" + std::to_string(ti.tcpi_total_retrans) + " in all), back-off " +
         std::to_string(ti.tcpi_backoff) + ", rto " + std::to_string(ti.tcpi_rto / 1000) + " ms, last data in " +
         std::to_string(ti.tcpi_last_data_recv) + " ms ago, out " + std::to_string(ti.tcpi_last_data_sent) + " ms ago";
  return s;
}

std::string readFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return line;
}

void randomBytes(void* out, std::size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  std::size_t got = 0;
  while (got < n) {
    ssize_t rv = ::getrandom(p + got, n - got, 0);
    if (rv < 0) {
      if (errno == EINTR) continue;
      FB_THROW(Error, "getrandom: ", detail::errnoText(errno));
    }
    got += static_cast<std::size_t>(rv);
  }
}

}  // namespace fb::tcp

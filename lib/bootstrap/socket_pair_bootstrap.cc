#include "bootstrap/socket_pair_bootstrap.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "core/units.h"

namespace fb::verbs {
namespace {

void setNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Waits until fd is ready for `events` or the deadline passes (TimeoutError naming `what`).
void waitFd(int fd, short events, const Deadline& d, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, std::min(d.msLeft(), 1000));
    if (n > 0) return;
    if (n < 0 && errno != EINTR) FB_THROW(IoError, "poll: ", detail::errnoText(errno), " while ", what);
    if (d.expired()) FB_THROW(TimeoutError, what, ": nothing within the time-out");
  }
}

}  // namespace

SocketPairBootstrap::SocketPairBootstrap(const std::string& host, int port, std::chrono::milliseconds timeout) {
  setTimeout(timeout);
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  host_ = name;
  auto d = Deadline::in(timeout);
  if (host.empty()) {  // server: rank 1
    rank_ = 1;
    int ls = FB_SYSCALL_CHECK(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), "(listening socket)");
    int one = 1, zero = 0;
    ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 clients too
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(std::uint16_t(port));
    if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      int e = errno;
      ::close(ls);
      FB_THROW(IoError, "cannot listen on port ", port, ": ", detail::errnoText(e), " (choose another with --port)");
    }
    FB_SYSCALL_CHECK(::listen(ls, 1));
    try {
      waitFd(ls, POLLIN, d, "waiting for the client (fabricbench-verbs --peer THIS_HOST)");
    } catch (...) {
      ::close(ls);
      throw;
    }
    fd_ = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
    int e = errno;
    ::close(ls);
    if (fd_ < 0) FB_THROW(IoError, "accept: ", detail::errnoText(e));
  } else {  // client: rank 0; retries while the server is not listening yet
    rank_ = 0;
    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_family = AF_UNSPEC;
    int g = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (g != 0) FB_THROW(ConfigError, "--peer ", host, ": ", gai_strerror(g));
    std::string last;
    while (fd_ < 0) {
      for (addrinfo* r = res; r && fd_ < 0; r = r->ai_next) {
        int s = ::socket(r->ai_family, r->ai_socktype | SOCK_CLOEXEC, r->ai_protocol);
        if (s < 0) continue;
        if (::connect(s, r->ai_addr, r->ai_addrlen) == 0) {
          fd_ = s;
        } else {
          last = detail::errnoText(errno);
          ::close(s);
        }
      }
      if (fd_ >= 0) break;
      if (d.expired()) {
        ::freeaddrinfo(res);
        FB_THROW(TimeoutError, "no server at ", host, ":", port, " (", last,
                 "); start `fabricbench-verbs --server` there first");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::freeaddrinfo(res);
  }
  setNoDelay(fd_);
}

SocketPairBootstrap::~SocketPairBootstrap() {
  if (fd_ >= 0) ::close(fd_);
}

void SocketPairBootstrap::sendAll(const void* p, std::size_t n) {
  auto d = Deadline::in(timeout());
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = ::send(fd_, c, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      c += k;
      n -= std::size_t(k);
      continue;
    }
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      waitFd(fd_, POLLOUT, d, "sending to the peer");
      continue;
    }
    FB_THROW(IoError, "connection to the peer lost while sending: ", detail::errnoText(errno));
  }
}

void SocketPairBootstrap::recvAll(void* p, std::size_t n) {
  auto d = Deadline::in(timeout());
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t k = ::recv(fd_, c, n, MSG_DONTWAIT);
    if (k > 0) {
      c += k;
      n -= std::size_t(k);
      continue;
    }
    if (k == 0) throw IoError(identity() + " the peer (rank " + std::to_string(1 - rank_) + ") closed the connection", 1 - rank_);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      waitFd(fd_, POLLIN, d, "waiting for the peer");
      continue;
    }
    FB_THROW(IoError, "connection to the peer lost while receiving: ", detail::errnoText(errno));
  }
}

std::vector<std::vector<std::byte>> SocketPairBootstrap::allGather(std::span<const std::byte> mine) {
  std::uint64_t len = mine.size();
  sendAll(&len, sizeof len);
  if (len) sendAll(mine.data(), mine.size());
  std::uint64_t theirLen = 0;
  recvAll(&theirLen, sizeof theirLen);
  if (theirLen > (std::uint64_t(1) << 30)) FB_THROW(IoError, "peer sent a blob of ", theirLen, " bytes: not a fabricbench-verbs peer?");
  std::vector<std::vector<std::byte>> all(2);
  all[std::size_t(rank_)].assign(mine.begin(), mine.end());
  auto& theirs = all[std::size_t(1 - rank_)];
  theirs.resize(theirLen);
  if (theirLen) recvAll(theirs.data(), theirLen);
  return all;
}

void SocketPairBootstrap::barrier() { allGather({}); }

double SocketPairBootstrap::allReduceMax(double v) {
  auto all = allGather(std::as_bytes(std::span<const double>(&v, 1)));
  double o;
  std::memcpy(&o, all[std::size_t(1 - rank_)].data(), sizeof o);
  return std::max(v, o);
}

std::int64_t SocketPairBootstrap::allReduceSum(std::int64_t v) {
  auto all = allGather(std::as_bytes(std::span<const std::int64_t>(&v, 1)));
  std::int64_t o;
  std::memcpy(&o, all[std::size_t(1 - rank_)].data(), sizeof o);
  return v + o;
}

// Closing the socket makes the peer's next exchange fail at once (IoError), so it exits too.
void SocketPairBootstrap::abortJob(int code) {
  if (fd_ >= 0) ::close(fd_);
  std::_Exit(code);
}

}  // namespace fb::verbs

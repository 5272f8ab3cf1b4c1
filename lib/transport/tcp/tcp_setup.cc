// The tcp transport's connection set-up: listen, agree on the job's token, exchange addresses,
// connect to lower ranks and accept higher ones (authenticated by their hello), describe the path.
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/tcp_transport_impl.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <thread>

#include "bootstrap/agree.h"
#include "core/error.h"
#include "topology/nic_rate.h"
#include "transport/progress.h"
#include "transport/self_messages.h"

namespace fb::tcp {
namespace {

constexpr std::uint32_t kHelloMagic = 0x4642544b;  // "FBTK": connection hello
constexpr int kMaxStrangers = 64;  // inbound connections waiting for their hello, at most
// An accepted connection must deliver its 24-byte hello within this time (a real peer sends it
// right after connecting); an idle one is closed, so strangers never hold a peer's place.
constexpr auto kHelloDeadline = std::chrono::seconds(3);

struct Hello {
  std::uint32_t magic;
  std::uint32_t rank;
  Token token;
};
static_assert(sizeof(Hello) == 24);

// Address blob for the all-gather: addr (4, network order), port (2, host order), hostname.
std::vector<std::byte> encodeEndpoint(const Endpoint& ep, const std::string& host) {
  std::vector<std::byte> b(6 + host.size());
  std::memcpy(b.data(), &ep.addr, 4);
  std::memcpy(b.data() + 4, &ep.port, 2);
  std::memcpy(b.data() + 6, host.data(), host.size());
  return b;
}
std::pair<Endpoint, std::string> decodeEndpoint(const std::vector<std::byte>& b) {
  FB_ENFORCE(b.size() >= 6, "tcp: malformed address blob (", b.size(), " bytes)");
  Endpoint ep;
  std::memcpy(&ep.addr, b.data(), 4);
  std::memcpy(&ep.port, b.data() + 4, 2);
  return {ep, std::string(reinterpret_cast<const char*>(b.data()) + 6, b.size() - 6)};
}

// A connection on its way to being a Peer.
struct Pending {
  enum class State { kConnecting, kAwaitHello } state;
  Socket sock;
  int peer = -1;  // outbound: the rank we connect to; inbound: -1 until its hello says
  bool outbound = false;
  Endpoint remote;
  Hello hello{};
  std::size_t got = 0;
  Clock::time_point retryAt{};
  std::string lastError{};  // outbound: why the last attempt failed
  Clock::time_point acceptedAt{};  // inbound: when accepted (its hello deadline runs from here)
};

void setCongestionOrThrow(int fd, const std::string& cc) {
  if (cc.empty()) return;
  if (auto err = setCongestion(fd, cc); !err.empty())
    FB_THROW(IoError, "tcp: congestion control ", cc, " on a socket: ", err);
}

std::string configureSocket(int fd, std::size_t sockBuf, const std::string& cc) {
  setNonBlocking(fd);
  setNoDelay(fd);
  setCongestionOrThrow(fd, cc);
  return setBufferSizes(fd, sockBuf);
}

Socket startConnect(const Endpoint& to, std::size_t sockBuf, const std::string& cc, std::string* err) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) FB_THROW(IoError, "tcp: socket(): ", detail::errnoText(errno));
  configureSocket(s.fd(), sockBuf, cc);
  sockaddr_in sa = to.sockaddr();
  int rv;
  do {
    rv = ::connect(s.fd(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  } while (rv < 0 && errno == EINTR);
  if (rv < 0 && errno != EINPROGRESS) {  // refused etc.: caller retries
    *err = "connect: " + detail::errnoText(errno);
    return Socket();
  }
  return s;
}

bool sendAll(int fd, const void* data, std::size_t n) {
  // Only for the 24-byte hello on a fresh socket: it always fits in the send buffer.
  for (;;) {
    ssize_t rv = ::send(fd, data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (rv < 0 && errno == EINTR) continue;
    return rv == static_cast<ssize_t>(n);
  }
}

}  // namespace

Socket TcpTransport::listenOnInterface(std::size_t sockBuf, const std::string& cc, Endpoint& me, std::string& bufNote) {
  Socket listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener.valid()) FB_THROW(IoError, "tcp: socket(): ", detail::errnoText(errno));
  bufNote = configureSocket(listener.fd(), sockBuf, cc);  // accepted sockets inherit the sizes
  me = Endpoint{iface_.addr, 0};
  sockaddr_in sa = me.sockaddr();
  if (::bind(listener.fd(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
    FB_THROW(IoError, "tcp: bind to ", iface_.name, " ", iface_.ip(), ": ", detail::errnoText(errno));
  FB_SYSCALL_CHECK(::listen(listener.fd(), size_ + kMaxStrangers));
  socklen_t len = sizeof(sa);
  FB_SYSCALL_CHECK(::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&sa), &len));
  me.port = ntohs(sa.sin_port);
  return listener;
}

Token TcpTransport::agreeToken(Bootstrap& bs) {
  Token token{};
  if (rank_ == 0) randomBytes(token.data(), token.size());
  auto tok = bs.broadcastFromRoot(token);
  FB_ENFORCE_EQ(tok.size(), kTokenBytes, "tcp: token from rank 0 has the wrong size");
  std::memcpy(token.data(), tok.data(), kTokenBytes);
  return token;
}

void TcpTransport::exchangeEndpoints(Bootstrap& bs, const Endpoint& me, const std::string& myHost, const Token& token,
                                     const SetupHook& hook) {
  auto blobs = bs.allGather(encodeEndpoint(me, myHost));
  SetupInfo info;
  info.rank = rank_;
  info.token = token;
  for (int r = 0; r < size_; ++r) {
    auto [ep, host] = decodeEndpoint(blobs[r]);
    peers_[r].remote = ep;
    peers_[r].host = host;
    info.endpoints.push_back(ep);
  }
  if (hook) hook(bs, info);
}

// Connections on their way to being peers: outbound to lower ranks (retried until the deadline),
// inbound from higher ranks (authenticated by the job's token in their hello).
struct TcpTransport::Handshake {
  TcpTransport& t;
  const Token& token;
  const Endpoint& me;
  std::size_t sockBuf;
  const std::string& cc;
  Hello mine;
  std::vector<Pending> pend;
  std::vector<bool> established;
  int missing;
  int dropped = 0;
  std::vector<pollfd> fds;

  Handshake(TcpTransport& tr, const Token& tok, const Endpoint& m, std::size_t buf, const std::string& ccName)
      : t(tr), token(tok), me(m), sockBuf(buf), cc(ccName), mine{kHelloMagic, static_cast<std::uint32_t>(tr.rank_), tok},
        established(tr.size_, false), missing(tr.size_ - 1) {
    established[t.rank_] = true;
  }

  bool validHello(const Hello& h) const {
    return h.magic == kHelloMagic && std::memcmp(h.token.data(), token.data(), kTokenBytes) == 0;
  }

  void drop(Pending& c, const std::string& why) {
    // The first few are said on stderr; path() counts them all.
    if (++dropped <= 3)
      std::fprintf(stderr, "%s tcp: dropped a connection from %s: %s%s\n", identity().c_str(), c.remote.str().c_str(),
                   why.c_str(), dropped == 3 ? " (further drops are only counted)" : "");
    c.sock.reset();
  }

  void connectLowerRanks() {
    for (int r = 0; r < t.rank_; ++r) {
      Pending c{Pending::State::kConnecting, Socket(), r, true, t.peers_[r].remote};
      c.sock = startConnect(t.peers_[r].remote, sockBuf, cc, &c.lastError);
      c.retryAt = Clock::now() + std::chrono::milliseconds(20);
      pend.push_back(std::move(c));
    }
  }

  // Who is still missing and why, as the time-out error says it.
  [[noreturn]] void throwTimedOut(const TransportOptions& options) {
    std::string who;
    for (int r = 0; r < t.size_; ++r) {
      if (established[r]) continue;
      who += (who.empty() ? "" : ", ") + std::string(r < t.rank_ ? "connect to " : "accept from ") + "rank " +
             std::to_string(r) + " (" + t.peers_[r].host + " " + t.peers_[r].remote.str() + ")";
      for (auto& c : pend)
        if (c.outbound && c.peer == r && !c.lastError.empty()) who += " [last attempt: " + c.lastError + "]";
    }
    FB_THROW(TimeoutError, "tcp: connection set-up timed out after ", options.connectTimeout.count(),
             " ms; rank ", t.rank_, " (", t.iface_.name, " ", me.str(), ") still waits to ", who);
  }

  // Restarts failed outbound attempts, then polls the listener and every pending socket.
  void poll(Socket& listener, Deadline deadline) {
    // (Re)start outbound connections whose earlier attempt failed.
    for (auto& c : pend)
      if (c.outbound && !c.sock.valid() && Clock::now() >= c.retryAt)
        c.sock = startConnect(c.remote, sockBuf, cc, &c.lastError), c.state = Pending::State::kConnecting, c.got = 0;

    fds.clear();
    fds.push_back({listener.fd(), POLLIN, 0});
    for (auto& c : pend)
      fds.push_back({c.sock.valid() ? c.sock.fd() : -1,
                     static_cast<short>(c.state == Pending::State::kConnecting ? POLLOUT : POLLIN), 0});
    int rv = ::poll(fds.data(), fds.size(), std::min(deadline.msLeft(), 50));
    if (rv < 0 && errno != EINTR) FB_THROW(IoError, "tcp: poll: ", detail::errnoText(errno));
  }

  // One pending connection after poll: the connect finished (send our hello) or hello bytes
  // arrived; a complete valid hello makes it the peer's connection.
  void advance(Pending& c, short re) {
    if (!c.sock.valid() || re == 0) return;
    if (c.state == Pending::State::kConnecting) {
      int err = 0;
      socklen_t l = sizeof(err);
      ::getsockopt(c.sock.fd(), SOL_SOCKET, SO_ERROR, &err, &l);
      if (err != 0 || !sendAll(c.sock.fd(), &mine, sizeof(mine))) {
        c.lastError = err ? "connect: " + detail::errnoText(err) : "could not send the hello";
        c.sock.reset();  // refused / reset: try again shortly, until the deadline
        c.retryAt = Clock::now() + std::chrono::milliseconds(20);
        return;
      }
      c.state = Pending::State::kAwaitHello;
      return;
    }
    // Await the 24-byte hello.
    ssize_t n = ::recv(c.sock.fd(), reinterpret_cast<char*>(&c.hello) + c.got, sizeof(Hello) - c.got, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      if (c.outbound) {
        c.lastError = n == 0 ? "closed by the listener before its hello" : "recv: " + detail::errnoText(errno);
        c.sock.reset();
        c.retryAt = Clock::now() + std::chrono::milliseconds(20);
      } else {
        drop(c, n == 0 ? "closed before its hello" : "error before its hello: " + detail::errnoText(errno));
      }
      return;
    }
    c.got += static_cast<std::size_t>(n);
    if (c.got < sizeof(Hello)) return;
    int r = static_cast<int>(c.hello.rank);
    if (c.outbound) {
      if (!validHello(c.hello) || r != c.peer)
        FB_THROW(IoError, "tcp: the listener at ", c.remote.str(), " (expected rank ", c.peer,
                 ") answered with a wrong token or rank ", c.hello.rank, ": not our job's peer");
    } else {
      if (!validHello(c.hello)) {
        drop(c, "wrong token");
        return;
      }
      if (c.hello.rank >= static_cast<std::uint32_t>(t.size_) || r <= t.rank_ || established[r]) {
        drop(c, "unexpected rank " + std::to_string(c.hello.rank));
        return;
      }
      if (!sendAll(c.sock.fd(), &mine, sizeof(mine))) {
        drop(c, "could not answer its hello");
        return;
      }
      c.peer = r;
    }
    t.peers_[c.peer].sock = std::move(c.sock);
    established[c.peer] = true;
    --missing;
  }

  void forgetFinished() {
    // Inbound connections that did not say hello in time are strangers (or dead): closed.
    for (auto& c : pend)
      if (!c.outbound && c.sock.valid() && Clock::now() - c.acceptedAt > kHelloDeadline)
        drop(c, "no hello within " + std::to_string(kHelloDeadline.count()) + " s");
    // Forget finished or dropped inbound attempts (outbound ones without a socket retry).
    std::erase_if(pend, [](const Pending& c) { return !c.sock.valid() && (!c.outbound || c.peer < 0); });
    std::erase_if(pend, [&](const Pending& c) { return c.outbound && established[c.peer]; });
  }

  // Every connection waiting in the listener's backlog.
  void acceptNew(Socket& listener) {
    for (;;) {
      sockaddr_in from{};
      socklen_t fl = sizeof(from);
      int fd = ::accept4(listener.fd(), reinterpret_cast<sockaddr*>(&from), &fl, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        break;  // EAGAIN: backlog drained
      }
      Pending c{Pending::State::kAwaitHello, Socket(fd), -1, false, Endpoint{from.sin_addr.s_addr, ntohs(from.sin_port)}};
      c.acceptedAt = Clock::now();
      setNoDelay(fd);
      setCongestionOrThrow(fd, cc);
      // At the cap, the OLDEST connection still without a hello goes, not the new one: a real
      // peer sends its hello at once, so it is never the oldest for long, while idle strangers
      // age; they can delay a peer by a poll round but never take its place.
      auto inboundWaiting = [&] {
        return std::count_if(pend.begin(), pend.end(), [](auto& p) { return !p.outbound && p.sock.valid(); });
      };
      if (inboundWaiting() >= kMaxStrangers) {
        Pending* oldest = nullptr;
        for (auto& p : pend)
          if (!p.outbound && p.sock.valid() && (!oldest || p.acceptedAt < oldest->acceptedAt)) oldest = &p;
        if (oldest) drop(*oldest, "too many connections without a hello (the oldest is closed)");
      }
      pend.push_back(std::move(c));
    }
  }
};

int TcpTransport::connectAll(Socket& listener, const Token& token, const Endpoint& me, std::size_t sockBuf,
                             const std::string& cc, const TransportOptions& options, Deadline deadline) {
  Handshake h(*this, token, me, sockBuf, cc);
  h.connectLowerRanks();
  while (h.missing > 0) {
    if (deadline.expired()) h.throwTimedOut(options);
    h.poll(listener, deadline);
    for (std::size_t i = 0; i < h.pend.size(); ++i) h.advance(h.pend[i], h.fds[i + 1].revents);
    h.forgetFinished();
    if (h.fds[0].revents & POLLIN) h.acceptNew(listener);
  }
  return h.dropped;
}

void TcpTransport::describePath(Bootstrap& bs, std::size_t sockBuf, const CongestionChoice& cc,
                                const std::string& bufNote, const std::string& myHost, int dropped) {
  path_.label = "tcp " + iface_.name + " " + iface_.ip();
  auto& d = path_.details;
  d.emplace_back("interface", iface_.name);
  d.emplace_back("address", iface_.ip());
  d.emplace_back("chosen because", ifaceHow_);
  std::string speed = readFirstLine("/sys/class/net/" + iface_.name + "/speed");
  d.emplace_back("link speed", speed.empty() || speed[0] == '-' ? "unknown" : speed + " Mb/s");
  std::string mtu = readFirstLine("/sys/class/net/" + iface_.name + "/mtu");
  d.emplace_back("mtu", mtu.empty() ? "unknown" : mtu);
  int probeFd = -1;
  for (auto& p : peers_)
    if (p.sock.valid()) probeFd = p.sock.fd();
  if (probeFd >= 0) {
    auto [snd, rcv] = grantedBufferSizes(probeFd);
    d.emplace_back("socket buffers", "SO_SNDBUF " + std::to_string(snd) + " B, SO_RCVBUF " + std::to_string(rcv) +
                                         " B (requested " + (sockBuf ? std::to_string(sockBuf) + " B" : "none: kernel autotuning") +
                                         (bufNote.empty() ? "" : "; " + bufNote) + ")");
  } else {
    d.emplace_back("socket buffers", "none (single rank)");
  }
  d.emplace_back("congestion control", (probeFd >= 0         ? congestionOf(probeFd)
                                        : !cc.name.empty() ? cc.name
                                                           : systemCongestion()) +
                                           " (" + cc.how + ")");
  d.emplace_back("connections", std::to_string(size_ - 1));
  int local = 0;
  for (int r = 0; r < size_; ++r) local += (r != rank_ && peers_[r].host == myHost);
  ProgressChoice progress = chooseProgress(bs);
  spin_ = progress.spin;
  yield_ = progress.yield;
  d.emplace_back("progress", progress.why);
  // % of nominal: the NIC's rate (tc-shaped where a tbf caps it); none through loopback.
  topo::NicRate nominal;
  if (size_ > 1 && local == size_ - 1) {
    path_.label += " same host (loopback path)";
    d.emplace_back("note", "all peers run on this host: the bytes go through the kernel's loopback path, "
                           "not the NIC (its speed and MTU do not apply)");
    nominal.basis = "same host (loopback path), no nominal rate";
  } else {
    if (local > 0)
      d.emplace_back("note", std::to_string(local) + " of " + std::to_string(size_ - 1) +
                                 " peers run on this host (kernel loopback path for those)");
    nominal = size_ > 1 ? topo::nicRate(iface_.name) : topo::NicRate{-1, "single rank, no link"};
  }
  path_.setNominal(nominal.gbps, nominal.basis);
  path_.lineGBps = nominal.lineGBps;
  if (dropped) d.emplace_back("dropped unauthenticated connections", std::to_string(dropped));
}

void TcpTransport::setup(Bootstrap& bs, const TransportOptions& options, const SetupHook& hook) {
  const std::size_t sockBuf = sockBufFromEnv();
  const CongestionChoice cc = congestionFromEnv();
  const std::string myHost = bs.hostname();
  Deadline deadline = Deadline::in(options.connectTimeout);

  // 1. Listen on the chosen address only.
  Endpoint me;
  std::string bufNote;
  Socket listener = listenOnInterface(sockBuf, cc.name, me, bufNote);
  // 2. The job's token, from rank 0.
  Token token = agreeToken(bs);
  // 3. Everyone's address.
  exchangeEndpoints(bs, me, myHost, token, hook);
  // 4. Connect to lower ranks, accept higher ranks; one poll loop drives both.
  int dropped = connectAll(listener, token, me, sockBuf, cc.name, options, deadline);
  listener.reset();  // no more strangers
  // 5. What path() reports.
  describePath(bs, sockBuf, cc, bufNote, myHost, dropped);
}

std::vector<std::byte> helloMessage(int rank, const Token& token) {
  Hello h{kHelloMagic, static_cast<std::uint32_t>(rank), token};
  std::vector<std::byte> b(sizeof(h));
  std::memcpy(b.data(), &h, sizeof(h));
  return b;
}

}  // namespace fb::tcp

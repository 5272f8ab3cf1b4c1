#include "transport/tcp/tcp_transport.h"

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

constexpr std::uint32_t kMsgMagic = 0x46425431;    // "FBT1": data message header
constexpr std::uint32_t kHelloMagic = 0x4642544b;  // "FBTK": connection hello
// SO_SNDBUF/SO_RCVBUF requested (the kernel doubles it): a window for a 100 Gbit/s link up to
// ~80 us round trip; larger buffers were slower with ranks sharing cores (benchmarks/host_vs_mpi.sh).
constexpr std::size_t kDefaultSockBuf = 1u << 20;
// One sendmsg/readv moves at most this much before the other direction gets its turn, so both
// directions advance together; 1 MiB was ahead of 256/512 KiB and level with 2 MiB (host_vs_mpi.sh).
constexpr std::size_t kDefaultChunk = 1u << 20;
// Congestion control on the transport's sockets unless FB_TCP_CC says otherwise: Linux's own
// default, so rows compare across hosts whatever each one's default is (under bbr the loopback
// exchange slowed to 1.3-2 x Open MPI's time after its first seconds).
constexpr const char* kDefaultCongestion = "cubic";
constexpr int kMaxIov = 64;  // iovec entries per sendmsg/readv (IOV_MAX is 1024)
constexpr int kMaxStrangers = 64;  // inbound connections waiting for their hello, at most
// An accepted connection must deliver its 24-byte hello within this time (a real peer sends it
// right after connecting); an idle one is closed, so strangers never hold a peer's place.
constexpr auto kHelloDeadline = std::chrono::seconds(3);

struct Header {
  std::uint32_t magic;
  std::uint32_t index;  // message index on this (sender, receiver) pair, low 32 bits
  std::uint64_t bytes;
  std::uint8_t pad[48];  // zero
};
// 64 bytes, so that a payload keeps its buffer's cache-line alignment in the byte stream: with a
// 16-byte header the kernel's copy into socket pages (_copy_from_iter) took 4 x the CPU.
static_assert(sizeof(Header) == 64);
constexpr std::size_t kHdr = sizeof(Header);

struct Hello {
  std::uint32_t magic;
  std::uint32_t rank;
  Token token;
};
static_assert(sizeof(Hello) == 24);

std::string bytesText(std::size_t n) { return std::to_string(n) + " B"; }


}  // namespace

std::size_t sockBufFromEnv() {
  const char* e = std::getenv("FB_TCP_SOCKBUF");
  if (!e || !*e) return kDefaultSockBuf;
  try {
    return parseSize(e);
  } catch (const Error&) {
    FB_THROW(ConfigError, "FB_TCP_SOCKBUF='", e, "' is not a size (e.g. 4M, 0 = kernel autotuning)");
  }
}

std::size_t chunkFromEnv() { return sizeFromEnv("FB_TCP_CHUNK", kDefaultChunk, 4u << 10, 64u << 20, "1M"); }

CongestionChoice congestionFromEnv() {
  const std::string sys = systemCongestion();
  const char* e = std::getenv("FB_TCP_CC");
  const std::string want = e ? e : "";
  auto avail = availableCongestion();
  std::string list;
  for (const auto& a : avail) list += (list.empty() ? "" : " ") + a;
  // Can this process put `name` on a socket? (Unprivileged processes only get the kernel's
  // allowed list.)
  auto trySet = [](const std::string& name) {
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    return s.valid() ? setCongestion(s.fd(), name) : std::string("socket(): ") + detail::errnoText(errno);
  };
  if (want == "system") return {"", "the host's default, FB_TCP_CC=system"};
  if (want.empty()) {
    if (std::find(avail.begin(), avail.end(), kDefaultCongestion) == avail.end())
      return {"", std::string("the host's default; this kernel has no ") + kDefaultCongestion};
    if (auto err = trySet(kDefaultCongestion); !err.empty())
      return {"", std::string("the host's default; ") + kDefaultCongestion + " refused: " + err};
    return {kDefaultCongestion, "fabricbench's default; the host's is " + sys + ", kept with FB_TCP_CC=system"};
  }
  if (std::find(avail.begin(), avail.end(), want) == avail.end())
    FB_THROW(ConfigError, "FB_TCP_CC='", want, "' is not a congestion control this kernel offers (", list,
             "; or 'system' for the host's default, ", sys, ")");
  if (auto err = trySet(want); !err.empty())
    FB_THROW(ConfigError, "FB_TCP_CC='", want, "' cannot be set on a socket: ", err,
             " (an unprivileged process may use only net.ipv4.tcp_allowed_congestion_control)");
  return {want, "FB_TCP_CC; the host's default is " + sys};
}

void checkOptions(const TransportOptions& options, const std::string& hostname) {
  sockBufFromEnv();
  chunkFromEnv();
  congestionFromEnv();
  std::string how;
  chooseInterface(options.tcpInterface, hostname, &how);
}

namespace {

// One posted send or receive. `done` counts header + payload bytes already moved.
struct Op {
  char* buf;
  std::size_t bytes;
  std::size_t done = 0;
  std::uint64_t index;  // message index on this pair
  Header hdr;
};

// Payload bytes of op moved so far (op.done counts the header too).
std::size_t payloadDone(const Op& op) { return op.done > kHdr ? op.done - kHdr : 0; }

struct Peer {
  int rank = -1;
  Socket sock;
  Endpoint remote;
  std::string host;
  std::deque<Op> sendq, recvq;
  std::uint64_t sendPosted = 0, sendDone = 0, recvPosted = 0, recvDone = 0;
  // False after a short transfer or EAGAIN: don't try that direction again until poll() says so.
  bool sendReady = true, recvReady = true;
  bool pending() const { return !sendq.empty() || !recvq.empty(); }
};

// Request id: ((seq + 1) << 20) | (dir << 19) | peer. dir 0 = send, 1 = recv.
constexpr int kPeerBits = 19;
constexpr std::uint64_t kPeerMask = (1u << kPeerBits) - 1;
std::uint64_t makeId(int peer, int dir, std::uint64_t seq) {
  return ((seq + 1) << (kPeerBits + 1)) | (static_cast<std::uint64_t>(dir) << kPeerBits) |
         static_cast<std::uint64_t>(peer);
}

class TcpTransport final : public Transport {
 public:
  TcpTransport(int rank, int size, Interface iface, std::string ifaceHow)
      : Transport(rank, size), iface_(std::move(iface)), ifaceHow_(std::move(ifaceHow)), peers_(size) {
    FB_ENFORCE(size >= 1 && static_cast<std::uint64_t>(size) <= kPeerMask, "tcp: ", size, " ranks is too many");
    for (int r = 0; r < size; ++r) peers_[r].rank = r;
  }

  std::string_view name() const override { return "tcp"; }
  PathInfo path() const override { return path_; }

  Request isend(int peer, const void* buf, std::size_t bytes) override {
    checkUsable(peer, buf, bytes, "isend");
    Peer& p = peers_[peer];
    std::uint64_t seq = p.sendPosted++;
    if (peer == rank_) {
      self_.postSend(seq, buf, bytes);
      matchSelf();
      return Request{makeId(peer, 0, seq)};
    }
    Op op{static_cast<char*>(const_cast<void*>(buf)), bytes, 0, seq,
          Header{kMsgMagic, static_cast<std::uint32_t>(seq), bytes, {}}};
    p.sendq.push_back(op);
    if (p.sendq.size() == 1 && p.sendReady) guarded([&] { pumpSend(p); });  // start now; the rest in wait()
    return Request{makeId(peer, 0, seq)};
  }

  Request irecv(int peer, void* buf, std::size_t bytes) override {
    checkUsable(peer, buf, bytes, "irecv");
    Peer& p = peers_[peer];
    std::uint64_t seq = p.recvPosted++;
    if (peer == rank_) {
      self_.postRecv(seq, buf, bytes);
      matchSelf();
    } else {
      p.recvq.push_back(Op{static_cast<char*>(buf), bytes, 0, seq, Header{}});
    }
    return Request{makeId(peer, 1, seq)};
  }

  // A peer whose connection is closed (EOF or error) while we are idle is gone: tell it by its
  // rank and address. Data a live peer sent ahead is left in the socket (MSG_PEEK).
  void checkPeersAlive() override {
    if (dead_) return;
    for (Peer& p : peers_) {
      if (p.rank == rank_ || !p.sock.valid()) continue;
      pollfd pfd{p.sock.fd(), POLLIN | POLLRDHUP, 0};
      if (::poll(&pfd, 1, 0) <= 0) continue;
      if (pfd.revents & (POLLERR | POLLHUP | POLLRDHUP))
        guarded([&] { throwLost(p, "connection closed while this rank waited in the bootstrap"); });
      if (pfd.revents & POLLIN) {
        char c;
        ssize_t n = ::recv(p.sock.fd(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) guarded([&] { throwLost(p, "peer closed the connection while this rank waited in the bootstrap"); });
      }
    }
  }

  // Shut every connection down at once: peers blocked on this rank see the connection close now
  // instead of at their deadline (used when this rank has failed and the job is ending).
  void abandon() override {
    for (Peer& p : peers_)
      if (p.rank != rank_ && p.sock.valid()) ::shutdown(p.sock.fd(), SHUT_RDWR);
    dead_ = true;
    if (deadReason_.empty()) deadReason_ = "abandoned after a failure";
  }

  void wait(Request& req, Deadline deadline) override {
    if (!req) return;
    if (dead_) FB_THROW(Error, "tcp: transport is unusable after an earlier error: ", deadReason_);
    int peer = static_cast<int>(req.id & kPeerMask);
    int dir = static_cast<int>((req.id >> kPeerBits) & 1);
    std::uint64_t seq = (req.id >> (kPeerBits + 1)) - 1;
    FB_ENFORCE(peer < size_ && seq < (dir ? peers_[peer].recvPosted : peers_[peer].sendPosted),
               "request ", req.id, " was not posted on this transport");
    auto isDone = [&] { return (dir ? peers_[peer].recvDone : peers_[peer].sendDone) > seq; };
    // progress.h: poll(2) without sleeping for a while (spin, or yield the core between polls when
    // oversubscribed), then sleep in it.
    SpinThenSleep waiting(spin_, yield_, yield_ ? pendingBytes() : 0);
    guarded([&] {
      while (!isDone()) {
        progressAll();  // afterwards every pending direction waits for the socket
        if (isDone()) break;
        if (deadline.expired()) throwTimeout(peer, dir, seq);
        pollOnce(peer, dir, seq, deadline, waiting.spin());
      }
    });
    req.id = 0;
  }

  // ---- set-up ----
  void setup(Bootstrap& bs, const TransportOptions& options, const SetupHook& hook);

 private:
  // setup()'s steps, in order (defined with it, below).
  Socket listenOnInterface(std::size_t sockBuf, const std::string& cc, Endpoint& me, std::string& bufNote);
  Token agreeToken(Bootstrap& bs);
  void exchangeEndpoints(Bootstrap& bs, const Endpoint& me, const std::string& myHost, const Token& token,
                         const SetupHook& hook);
  int connectAll(Socket& listener, const Token& token, const Endpoint& me, std::size_t sockBuf, const std::string& cc,
                 const TransportOptions& options, Deadline deadline);
  void describePath(Bootstrap& bs, std::size_t sockBuf, const CongestionChoice& cc, const std::string& bufNote,
                    const std::string& myHost, int dropped);
  struct Handshake;  // connectAll's connections in progress

  void checkUsable(int peer, const void* buf, std::size_t bytes, const char* what) {
    if (dead_) FB_THROW(Error, "tcp: transport is unusable after an earlier error: ", deadReason_);
    FB_ENFORCE(peer >= 0 && peer < size_, what, ": peer ", peer, " out of range [0, ", size_, ")");
    FB_ENFORCE(buf != nullptr || bytes == 0, what, ": null buffer with ", bytes, " bytes");
  }

  // Payload bytes not yet moved over every connection, both directions.
  std::size_t pendingBytes() const {
    std::size_t n = 0;
    for (const Peer& p : peers_)
      for (const auto* q : {&p.sendq, &p.recvq})
        for (const Op& op : *q) n += op.bytes - payloadDone(op);
    return n;
  }

  // Runs f; any exception marks the transport dead (contract: after an error it is dead).
  template <typename F>
  void guarded(F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      dead_ = true;
      deadReason_ = e.what();
      throw;
    }
  }

  std::string peerText(const Peer& p) const {
    return "rank " + std::to_string(p.rank) + " (" + p.host + " " + p.remote.str() + ")";
  }

  [[noreturn]] void throwLost(const Peer& p, const std::string& what) {
    throw IoError(identity() + " tcp: lost connection to " + peerText(p) + ": " + what, p.rank);
  }

  // The iovecs for the next messages of a queue: each one's header (or what is left of it) then
  // its payload (or what is left), as many messages as kMaxIov holds. Returns the count.
  static int fillIov(std::deque<Op>& q, iovec* iov, std::size_t& want, std::size_t cap) {
    int n = 0;
    want = 0;
    auto add = [&](void* b, std::size_t len) {
      len = std::min(len, cap - want);
      if (len) iov[n++] = {b, len};
      want += len;
    };
    for (auto it = q.begin(); it != q.end() && n + 2 <= kMaxIov && want < cap; ++it) {
      Op& op = *it;
      if (op.done < kHdr) {
        add(reinterpret_cast<char*>(&op.hdr) + op.done, kHdr - op.done);
        if (op.bytes) add(op.buf, op.bytes);
      } else {
        add(op.buf + (op.done - kHdr), op.bytes - (op.done - kHdr));
      }
    }
    return n;
  }

  // Sends from p's queue until it is empty, the socket takes no more, or one chunk (chunk_) went:
  // several messages per sendmsg.
  void pumpSend(Peer& p) {
    while (!p.sendq.empty()) {
      iovec iov[kMaxIov];
      std::size_t want = 0;
      int n = fillIov(p.sendq, iov, want, chunk_);
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<std::size_t>(n);
      ssize_t rv = ::sendmsg(p.sock.fd(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (rv < 0) {
        int e = errno;
        if (e == EINTR) continue;
        if (e == EAGAIN || e == EWOULDBLOCK) {
          p.sendReady = false;
          return;
        }
        const Op& op = p.sendq.front();
        throwLost(p, "send of message " + std::to_string(op.index) + " (" + bytesText(op.bytes) + ", " +
                         bytesText(payloadDone(op)) + " sent) failed: " + detail::errnoText(e));
      }
      auto left = static_cast<std::size_t>(rv);
      while (left > 0) {
        Op& op = p.sendq.front();
        std::size_t take = std::min(left, kHdr + op.bytes - op.done);
        op.done += take;
        left -= take;
        if (op.done == kHdr + op.bytes) {
          p.sendq.pop_front();
          ++p.sendDone;
        } else {
          break;
        }
      }
      if (static_cast<std::size_t>(rv) < want) {  // socket buffer full: poll for POLLOUT
        p.sendReady = false;
        return;
      }
      if (want >= chunk_) return;  // a full chunk: let the other direction have a turn
    }
  }

  // Receives into p's posted buffers (the next messages' headers and payloads in one readv), until
  // the queue is empty, the socket is drained, or one chunk came.
  void pumpRecv(Peer& p) {
    while (!p.recvq.empty()) {
      iovec iov[kMaxIov];
      std::size_t want = 0;
      int n = fillIov(p.recvq, iov, want, chunk_);
      ssize_t rv = ::readv(p.sock.fd(), iov, n);
      if (rv < 0) {
        int e = errno;
        if (e == EINTR) continue;
        if (e == EAGAIN || e == EWOULDBLOCK) {
          p.recvReady = false;
          return;
        }
        const Op& op = p.recvq.front();
        throwLost(p, "receive of message " + std::to_string(op.index) + " (" + bytesText(op.bytes) +
                         ") failed: " + detail::errnoText(e));
      }
      if (rv == 0) {
        const Op& op = p.recvq.front();
        throwLost(p, "peer closed the connection (EOF) while " + std::to_string(p.recvq.size()) +
                         " receive(s) were pending, the first message " + std::to_string(op.index) + " (" +
                         bytesText(op.bytes) + ", " + bytesText(payloadDone(op)) +
                         " received)");
      }
      // Bytes may run past a header into the following buffers (speculatively); every header is
      // checked as soon as it is complete, and any mismatch is fatal, so nothing is accepted
      // silently.
      auto left = static_cast<std::size_t>(rv);
      for (auto it = p.recvq.begin(); it != p.recvq.end() && left > 0; ++it) {
        Op& op = *it;
        std::size_t take = std::min(left, kHdr + op.bytes - op.done);
        bool hadHeader = op.done >= kHdr;
        op.done += take;
        left -= take;
        if (!hadHeader && op.done >= kHdr) checkHeader(p, op);
      }
      // A zero-byte message's header may complete it; pop every finished op from the front.
      while (!p.recvq.empty() && p.recvq.front().done == kHdr + p.recvq.front().bytes) {
        p.recvq.pop_front();
        ++p.recvDone;
      }
      if (static_cast<std::size_t>(rv) < want) {  // drained the socket: poll for POLLIN
        p.recvReady = false;
        return;
      }
      if (want >= chunk_) return;  // a full chunk: let the other direction have a turn
    }
  }

  void checkHeader(const Peer& p, const Op& op) {
    if (op.hdr.magic != kMsgMagic)
      FB_THROW(Error, "tcp: corrupt stream from ", peerText(p), ": message ", op.index,
               " has a bad header (magic 0x", std::hex, op.hdr.magic, std::dec, ")");
    if (op.hdr.index != static_cast<std::uint32_t>(op.index))
      FB_THROW(Error, "tcp: out-of-order stream from ", peerText(p), ": expected message ", op.index,
               ", got ", op.hdr.index);
    if (op.hdr.bytes != op.bytes)
      FB_THROW(Error, "tcp: size mismatch on message ", op.index, " from ", peerText(p), ": rank ", p.rank,
               " sent ", op.hdr.bytes, " bytes, rank ", rank_, " posted a receive of ", op.bytes, " bytes");
  }

  // Pairs sends to self with receives from self, in order (self_messages.h).
  void matchSelf() {
    Peer& p = peers_[rank_];
    self_.match("tcp", rank_, [&](std::uint64_t, std::uint64_t, const std::string& error) {
      if (!error.empty()) {
        dead_ = true;
        deadReason_ = "size mismatch on a message to self";
        FB_THROW(Error, error);
      }
      ++p.sendDone;
      ++p.recvDone;
    });
  }

  // Passes over every peer with pending work the socket is ready for, until none is left: each
  // pump stops after a chunk (the other direction and the other peers get their turn) or when its
  // queue is empty or the socket would block (then that direction waits for poll()).
  void progressAll() {
    for (bool more = true; more;) {
      more = false;
      for (Peer& p : peers_) {
        if (p.rank == rank_) continue;
        if (!p.sendq.empty() && p.sendReady) pumpSend(p);
        if (!p.recvq.empty() && p.recvReady) pumpRecv(p);
        more = more || (!p.sendq.empty() && p.sendReady) || (!p.recvq.empty() && p.recvReady);
      }
    }
  }

  void pollOnce(int peer, int dir, std::uint64_t seq, Deadline deadline, bool spin) {
    fds_.clear();
    fdPeer_.clear();
    for (Peer& p : peers_) {
      if (p.rank == rank_ || !p.pending()) continue;
      short ev = 0;
      if (!p.sendq.empty()) ev |= POLLOUT;
      if (!p.recvq.empty()) ev |= POLLIN;
      fds_.push_back(pollfd{p.sock.fd(), ev, 0});
      fdPeer_.push_back(&p);
    }
    if (fds_.empty()) {
      // Only unmatched self messages are left: nothing can complete them while we wait.
      FB_THROW(Error, "tcp: waiting on ", describe(peer, dir, seq),
               " can never complete: no network work is pending (unmatched send/receive to self)");
    }
    int rv = ::poll(fds_.data(), fds_.size(), spin ? 0 : deadline.msLeft());
    if (rv < 0 && errno != EINTR) FB_THROW(IoError, "tcp: poll: ", detail::errnoText(errno));
    if (rv == 0 && !spin && deadline.expired()) throwTimeout(peer, dir, seq);
    for (std::size_t i = 0; rv > 0 && i < fds_.size(); ++i) {
      short re = fds_[i].revents;
      // Errors and hang-ups are reported by the next send/recv on that socket.
      if (re & (POLLOUT | POLLERR | POLLHUP | POLLNVAL)) fdPeer_[i]->sendReady = true;
      if (re & (POLLIN | POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) fdPeer_[i]->recvReady = true;
    }
  }

  std::string describe(int peer, int dir, std::uint64_t seq) const {
    const Peer& p = peers_[peer];
    return std::string(dir ? "receive of message " : "send of message ") + std::to_string(seq) +
           (dir ? " from " : " to ") + (peer == rank_ ? "self" : peerText(p));
  }

  [[noreturn]] void throwTimeout(int peer, int dir, std::uint64_t seq) {
    std::string pending;
    int listed = 0, total = 0;
    for (const Peer& p : peers_) {
      for (int d = 0; d < 2; ++d) {
        const auto& q = d ? p.recvq : p.sendq;
        if (q.empty()) continue;
        total += static_cast<int>(q.size());
        if (listed++ >= 8) continue;
        const Op& op = q.front();
        pending += std::string(listed > 1 ? "; " : "") + std::to_string(q.size()) +
                   (d ? " receive(s) from rank " : " send(s) to rank ") + std::to_string(p.rank) +
                   ", first: message " + std::to_string(op.index) + " of " + bytesText(op.bytes) + " with " +
                   bytesText(payloadDone(op)) + (d ? " received" : " sent");
      }
      // What the kernel holds on that connection: a stalled socket and a peer that stopped reading
      // look alike from here.
      if (p.rank != rank_ && p.pending() && p.sock.valid() && listed <= 8)
        if (std::string k = kernelState(p.sock.fd()); !k.empty())
          pending += " [rank " + std::to_string(p.rank) + " " + k + "]";
    }
    FB_THROW(TimeoutError, "tcp: deadline expired waiting for the ", describe(peer, dir, seq), "; pending (", total,
             " requests): ", pending);
  }

  Interface iface_;
  std::string ifaceHow_;
  std::vector<Peer> peers_;
  std::vector<pollfd> fds_;
  std::vector<Peer*> fdPeer_;
  PathInfo path_;
  // Bytes per sendmsg/readv before the other direction gets a turn (FB_TCP_CHUNK).
  std::size_t chunk_ = chunkFromEnv();
  bool spin_ = true;    // progress.h: spin before sleeping in poll()
  bool yield_ = false;  // progress.h: oversubscribed, poll and yield before sleeping
  SelfMessages self_;
  bool dead_ = false;
  std::string deadReason_;
};

// ---------------- connection set-up ----------------

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

std::unique_ptr<Transport> createTransport(Bootstrap& bootstrap, const TransportOptions& options,
                                           const SetupHook& hook) {
  // The local part (which interface) may fail on one node only: every rank agrees on it before
  // the address exchange.
  std::unique_ptr<TcpTransport> t;
  agree(bootstrap, "tcp", [&] {
    failHook("tcp-open", bootstrap.rank());
    std::string how;
    Interface iface = chooseInterface(options.tcpInterface, bootstrap.hostname(), &how);
    t = std::make_unique<TcpTransport>(bootstrap.rank(), bootstrap.size(), iface, how);
  });
  t->setup(bootstrap, options, hook);
  return t;
}

std::unique_ptr<Transport> createTransport(Bootstrap& bootstrap, const TransportOptions& options) {
  return createTransport(bootstrap, options, SetupHook());
}

BackendStatus probe(const TransportOptions& options) {
  BackendStatus s{"tcp", true, false, ""};
  try {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    std::string how;
    Interface i = chooseInterface(options.tcpInterface, host, &how);
    s.usable = true;
    s.reason = "would use " + i.name + " " + i.ip() + " (" + how + ")";
  } catch (const Error& e) {
    s.reason = e.what();
  }
  return s;
}

std::vector<std::byte> helloMessage(int rank, const Token& token) {
  Hello h{kHelloMagic, static_cast<std::uint32_t>(rank), token};
  std::vector<std::byte> b(sizeof(h));
  std::memcpy(b.data(), &h, sizeof(h));
  return b;
}

}  // namespace fb::tcp

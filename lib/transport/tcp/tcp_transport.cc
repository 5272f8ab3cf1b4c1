// The tcp transport's data path: posting, progress (sendmsg/readv over every connection, one
// chunk per direction in turn), completion, and the errors that name the peer; createTransport.
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

Request TcpTransport::isend(int peer, const void* buf, std::size_t bytes) {
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

Request TcpTransport::irecv(int peer, void* buf, std::size_t bytes) {
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

void TcpTransport::checkPeersAlive() {
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

void TcpTransport::wait(Request& req, Deadline deadline) {
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

int TcpTransport::fillIov(std::deque<Op>& q, iovec* iov, std::size_t& want, std::size_t cap) {
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

void TcpTransport::pumpSend(Peer& p) {
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

void TcpTransport::pumpRecv(Peer& p) {
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

void TcpTransport::checkHeader(const Peer& p, const Op& op) {
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

void TcpTransport::matchSelf() {
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

void TcpTransport::progressAll() {
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

void TcpTransport::pollOnce(int peer, int dir, std::uint64_t seq, Deadline deadline, bool spin) {
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

void TcpTransport::throwTimeout(int peer, int dir, std::uint64_t seq) {
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

}  // namespace fb::tcp

// The tcp transport's class and wire format, shared by its data path (tcp_transport.cc) and its
// connection set-up (tcp_setup.cc). Internal to lib/transport/tcp.
#pragma once
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/error.h"
#include "transport/progress.h"
#include "transport/self_messages.h"
#include "transport/tcp/tcp_transport.h"

namespace fb::tcp {

constexpr std::uint32_t kMsgMagic = 0x46425431;    // "FBT1": data message header
constexpr int kMaxIov = 64;  // iovec entries per sendmsg/readv (IOV_MAX is 1024)

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

inline std::string bytesText(std::size_t n) { return std::to_string(n) + " B"; }

// One posted send or receive. `done` counts header + payload bytes already moved.
struct Op {
  char* buf;
  std::size_t bytes;
  std::size_t done = 0;
  std::uint64_t index;  // message index on this pair
  Header hdr;
};

// Payload bytes of op moved so far (op.done counts the header too).
inline std::size_t payloadDone(const Op& op) { return op.done > kHdr ? op.done - kHdr : 0; }

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
inline std::uint64_t makeId(int peer, int dir, std::uint64_t seq) {
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

  Request isend(int peer, const void* buf, std::size_t bytes) override;
  Request irecv(int peer, void* buf, std::size_t bytes) override;

  // A peer whose connection is closed (EOF or error) while we are idle is gone: tell it by its
  // rank and address. Data a live peer sent ahead is left in the socket (MSG_PEEK).
  void checkPeersAlive() override;

  // Shut every connection down at once: peers blocked on this rank see the connection close now
  // instead of at their deadline (used when this rank has failed and the job is ending).
  void abandon() override {
    for (Peer& p : peers_)
      if (p.rank != rank_ && p.sock.valid()) ::shutdown(p.sock.fd(), SHUT_RDWR);
    dead_ = true;
    if (deadReason_.empty()) deadReason_ = "abandoned after a failure";
  }

  void wait(Request& req, Deadline deadline) override;

  // ---- set-up (tcp_setup.cc) ----
  void setup(Bootstrap& bs, const TransportOptions& options, const SetupHook& hook);

 private:
  // setup()'s steps, in order.
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
  static int fillIov(std::deque<Op>& q, iovec* iov, std::size_t& want, std::size_t cap);

  // Sends from p's queue until it is empty, the socket takes no more, or one chunk (chunk_) went:
  // several messages per sendmsg.
  void pumpSend(Peer& p);

  // Receives into p's posted buffers (the next messages' headers and payloads in one readv), until
  // the queue is empty, the socket is drained, or one chunk came.
  void pumpRecv(Peer& p);

  void checkHeader(const Peer& p, const Op& op);

  // Pairs sends to self with receives from self, in order (self_messages.h).
  void matchSelf();

  // Passes over every peer with pending work the socket is ready for, until none is left: each
  // pump stops after a chunk (the other direction and the other peers get their turn) or when its
  // queue is empty or the socket would block (then that direction waits for poll()).
  void progressAll();

  void pollOnce(int peer, int dir, std::uint64_t seq, Deadline deadline, bool spin);

  std::string describe(int peer, int dir, std::uint64_t seq) const {
    const Peer& p = peers_[peer];
    return std::string(dir ? "receive of message " : "send of message ") + std::to_string(seq) +
           (dir ? " from " : " to ") + (peer == rank_ ? "self" : peerText(p));
  }

  [[noreturn]] void throwTimeout(int peer, int dir, std::uint64_t seq);

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

}  // namespace fb::tcp

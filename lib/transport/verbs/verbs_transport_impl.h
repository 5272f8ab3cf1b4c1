// The verbs Transport. Protocol, per ordered pair of ranks (A sends to B), all on one RC QP:
//
//   B irecv(A, buf, n)  -> B SENDs a 32-byte control message CTS{seq, addr, rkey, n} to A
//   A isend(B, buf, n)  -> A waits for the CTS with the same seq (seq counts messages of the
//                          pair in posting order), checks n, and RDMA WRITEs buf straight into
//                          B's buffer; the last (or only) WRITE carries IMMEDIATE = seq, which
//                          completes a receive on B: the message is there.
//   sizes differ        -> A SENDs MISMATCH{seq, its n} instead; both sides raise fb::Error.
//   a rank closes       -> it SENDs BYE; the peer fails whatever it still had with that rank
//                          (IoError naming it). A rank that dies silently is caught by a probe
//                          (8-byte WRITE into the peer's scratch word) that fails with
//                          RETRY_EXC_ERR when nobody answers.
//
// Receive buffers for control messages: every rank keeps 2*kCredits+2 receives posted per peer
// and reposts each as soon as it is polled. At most kCredits CTS per direction may wait for
// their data, and every data IMMEDIATE answers one of those CTS, so at most 2*kCredits receives
// are ever consumed and not yet reposted (+1 MISMATCH/BYE): the receive queue never runs dry
// and no message meets RNR, whatever order the application posts in.
//
// This header (internal to lib/transport/verbs) holds the class and the wire format, shared by the
// set-up (verbs_setup.cc) and the data path (verbs_transport.cc).
#pragma once
#include <arpa/inet.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>

#include "bootstrap/agree.h"
#include "core/error.h"
#include "transport/progress.h"
#include "transport/self_messages.h"
#include "transport/verbs/gpudirect.h"
#include "transport/verbs/discovery.h"
#include "transport/verbs/verbs.h"

namespace fb::verbs {

constexpr int kCredits = 64;                 // outstanding clear-to-sends per direction
constexpr int kRecvSlots = 2 * kCredits + 4; // receives posted per peer (see above)
constexpr int kSendSlots = kCredits + 2;     // CTS ring + MISMATCH + BYE
constexpr int kSqDepth = 256;                // send WRs in flight per QP (our accounting)
constexpr int kSqAlloc = kSqDepth + 8;
constexpr std::uint32_t kMagic = 0xfb0e7b5au;
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kMaxChunk = std::size_t(1) << 30;

enum class CtlType : std::uint32_t { kCts = 1, kMismatch = 2, kBye = 3 };
struct CtlMsg {
  std::uint32_t magic;
  std::uint32_t type;
  std::uint32_t seq;
  std::uint32_t rkey;
  std::uint64_t addr;
  std::uint64_t len;
};
static_assert(sizeof(CtlMsg) == 32);

enum WrKind : std::uint64_t { kWrRecv = 1, kWrCtl = 2, kWrData = 3, kWrProbe = 4 };
inline std::uint64_t wrId(WrKind k, int peer, std::uint32_t idx) {
  return (std::uint64_t(k) << 56) | (std::uint64_t(peer & 0xffffff) << 32) | idx;
}

// What each rank tells every other at connect time (plus per-peer qpn/psn after it).
struct Hello {
  std::uint32_t magic, version;
  std::int32_t rank, size;
  std::uint8_t ethernet, global, mtu, pad;
  std::uint16_t lid, pad2;
  std::uint8_t gid[16];
  std::uint32_t ctrlRkey;
  std::uint64_t scratchAddr;
  std::uint64_t maxMsg;
};

enum class ErrKind { kNone, kIo, kSize, kProtocol };

struct Op {
  bool send = false;
  int peer = 0;
  char* buf = nullptr;
  std::size_t bytes = 0;
  std::uint32_t key = 0;  // lkey (send) or rkey (recv)
  std::uint32_t seq = 0;
  bool done = false;
  bool ctsSent = false;
  int chunksLeft = 0;
  ErrKind err = ErrKind::kNone;
  std::string msg;
};

struct Peer {
  Qp qp;
  bool failed = false;    // error completion, or BYE received
  bool closed = false;    // BYE received: do not send ours
  std::string failMsg;
  std::uint32_t sendSeq = 0, recvSeq = 0;
  std::deque<std::uint64_t> sendsWaiting;  // isends without their CTS yet
  std::deque<CtlMsg> ctsReady;             // CTS received, no isend yet
  std::deque<std::uint64_t> writing;       // data WRITEs posted
  std::deque<std::uint64_t> recvsNoCts;    // irecvs whose CTS waits for a credit
  std::deque<std::uint64_t> recvsWaiting;  // CTS sent, waiting for data
  int sqUsed = 0;
  bool probeOut = false;
  Clock::time_point lastProbe{};
  std::uint32_t remoteCtrlRkey = 0;
  std::uint64_t remoteScratch = 0;
  int pathMtu = 0;
};

class VerbsTransport final : public Transport {
 public:
  VerbsTransport(Bootstrap& bs, Selection sel);  // --gpu-memory never gets here: agreeOnSelection refuses it
  ~VerbsTransport() override;

  std::string_view name() const override { return "verbs"; }
  PathInfo path() const override;
  // Host memory (GPU memory over verbs is detected and refused with its reason: agreeOnSelection).
  void registerMemory(void* ptr, std::size_t bytes) override;
  void deregisterMemory(void* ptr) override;
  Request isend(int peer, const void* buf, std::size_t bytes) override;
  Request irecv(int peer, void* buf, std::size_t bytes) override;
  void wait(Request& req, Deadline deadline) override;

 private:
  struct Region {
    std::size_t bytes;
    int refs;
    Mr mr;
  };

  ibv_mr* findMr(const void* p, std::size_t bytes, const char* what, int peer);
  CtlMsg* recvSlot(int peer, int i) { return ctlBase_ + (std::size_t(peer) * kRecvSlots + i); }
  CtlMsg* sendSlot(int peer, int i) {
    return ctlBase_ + (std::size_t(size_) * kRecvSlots + std::size_t(peer) * kSendSlots + i);
  }
  void postRecv(int peer, int slot);
  void postCtl(int peer, int slot, const CtlMsg& m);
  bool postData(int peer, Op& op, const CtlMsg& cts);
  void postProbe(int peer);
  void pump(int peer);
  bool progress();
  void handle(const ibv_wc& wc);
  void failPeer(int peer, const std::string& msg, bool includingWrites);
  void matchSelf();
  std::uint64_t newOp(Op op);
  Request post(bool send, int peer, void* buf, std::size_t bytes);
  [[noreturn]] void throwOp(const Op& op);
  std::string opText(const Op& op) const;

  Selection sel_;
  PortSel port_;
  Context ctx_;
  Pd pd_;
  Channel channel_;
  Cq cq_;
  bool armed_ = false;
  ProgressChoice progress_;  // progress.h: spin (or, oversubscribed, yield) first, then sleep on the channel
  std::vector<CtlMsg> ctl_;  // recv slots, then send slots, then scratch
  CtlMsg* ctlBase_ = nullptr;
  Mr ctlMr_;
  std::map<std::uintptr_t, Region> regions_;
  std::vector<Peer> peers_;  // indexed by rank; [rank_] unused
  std::unordered_map<std::uint64_t, Op> ops_;
  std::uint64_t nextId_ = 1;
  SelfMessages self_;  // ids of ops_
  std::size_t chunkMax_ = kMaxChunk;
  int minPathMtu_ = 0;
};

}  // namespace fb::verbs

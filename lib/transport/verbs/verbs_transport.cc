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
#include "transport/verbs/verbs_transport.h"

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
namespace {

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
std::uint64_t wrId(WrKind k, int peer, std::uint32_t idx) {
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

// ------------------------------------------------------------------ set-up
VerbsTransport::VerbsTransport(Bootstrap& bs, Selection sel) : Transport(bs.rank(), bs.size()), sel_(std::move(sel)) {
  progress_ = chooseProgress(bs);
  auto opened = openPort(sel_);
  ctx_ = std::move(opened.ctx);
  port_ = opened.port;
  pd_ = allocPd(ctx_.get());
  int peers = std::max(1, size_ - 1);
  channel_ = createChannel(ctx_.get());
  cq_ = createCq(ctx_.get(), peers * (kSqAlloc + kRecvSlots) + 16, channel_.get());
  ctl_.resize(std::size_t(size_) * (kRecvSlots + kSendSlots) + 2);
  ctlBase_ = ctl_.data();
  ctlMr_ = regMr(pd_.get(), ctl_.data(), ctl_.size() * sizeof(CtlMsg),
                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  chunkMax_ = std::min<std::size_t>(kMaxChunk, sel_.port.maxMsgSize ? sel_.port.maxMsgSize : kMaxChunk);

  peers_.resize(size_);
  std::vector<std::uint32_t> psn(size_, 0);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    peers_[p].qp = createRcQp(pd_.get(), cq_.get(), kSqAlloc, kRecvSlots);
    toInit(peers_[p].qp.get(), port_);
    for (int i = 0; i < kRecvSlots; ++i) postRecv(p, i);  // receives may be posted in INIT
    psn[p] = (std::uint32_t(rank_) * 7919u + std::uint32_t(p) * 104729u + 1) & 0xffffff;
  }

  Hello h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.rank = rank_;
  h.size = size_;
  h.ethernet = port_.ethernet;
  h.global = port_.gidIndex >= 0;
  h.mtu = static_cast<std::uint8_t>(port_.activeMtu);
  h.lid = port_.lid;
  std::memcpy(h.gid, port_.gid.data(), 16);
  h.ctrlRkey = ctlMr_->rkey;
  h.scratchAddr = reinterpret_cast<std::uintptr_t>(ctlBase_ + ctl_.size() - 1);
  h.maxMsg = sel_.port.maxMsgSize;
  std::vector<std::byte> blob(sizeof(Hello) + 2 * sizeof(std::uint32_t) * size_);
  std::memcpy(blob.data(), &h, sizeof h);
  for (int p = 0; p < size_; ++p) {
    std::uint32_t q = p == rank_ ? 0 : peers_[p].qp->qp_num;
    std::memcpy(blob.data() + sizeof h + 4 * p, &q, 4);
    std::memcpy(blob.data() + sizeof h + 4 * (size_ + p), &psn[p], 4);
  }
  auto all = bs.allGather(blob);

  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    const auto& b = all[p];
    Hello r{};
    if (b.size() != blob.size()) FB_THROW(Error, "verbs: rank ", p, " sent a connect record of ", b.size(), " bytes");
    std::memcpy(&r, b.data(), sizeof r);
    if (r.magic != kMagic || r.version != kVersion || r.size != size_)
      FB_THROW(Error, "verbs: rank ", p, " runs another protocol version or group size");
    if (r.ethernet != h.ethernet || r.global != h.global)
      FB_THROW(ConfigError, "verbs: rank ", p, " uses a ", r.ethernet ? "RoCE" : "InfiniBand",
               r.global ? " GID-addressed" : " LID-addressed", " port, this rank a ",
               h.ethernet ? "RoCE" : "InfiniBand", h.global ? " GID-addressed" : " LID-addressed",
               " one; choose matching --ib-dev/--gid-index on every node");
    QpAddress ra;
    std::memcpy(&ra.qpn, b.data() + sizeof r + 4 * rank_, 4);
    std::memcpy(&ra.psn, b.data() + sizeof r + 4 * (size_ + rank_), 4);
    ra.lid = r.lid;
    ra.mtu = r.mtu;
    ra.global = r.global;
    std::memcpy(ra.gid.data(), r.gid, 16);
    toRtr(peers_[p].qp.get(), port_, ra);
    toRts(peers_[p].qp.get(), psn[p]);
    peers_[p].remoteCtrlRkey = r.ctrlRkey;
    peers_[p].remoteScratch = r.scratchAddr;
    peers_[p].pathMtu = mtuBytes(static_cast<ibv_mtu>(std::min<int>(r.mtu, h.mtu)));
    minPathMtu_ = minPathMtu_ ? std::min(minPathMtu_, peers_[p].pathMtu) : peers_[p].pathMtu;
    if (r.maxMsg) chunkMax_ = std::min<std::size_t>(chunkMax_, r.maxMsg);
  }
  // Nobody sends before every QP of the group is at least RTR (a packet to an INIT QP is
  // dropped and only retried after the 67 ms transport timer).
  bs.barrier();
}

VerbsTransport::~VerbsTransport() {
  // Say goodbye so peers still waiting on this rank get an IoError at once, not a timeout.
  try {
    int pending = 0;
    for (int p = 0; p < size_; ++p) {
      Peer& pr = peers_[p];
      if (p == rank_ || !pr.qp || pr.failed || pr.closed || pr.sqUsed >= kSqAlloc - 1) continue;
      CtlMsg m{kMagic, std::uint32_t(CtlType::kBye), 0, 0, 0, 0};
      postCtl(p, kCredits + 1, m);
      ++pending;
    }
    auto until = Clock::now() + std::chrono::milliseconds(200);
    while (pending > 0 && Clock::now() < until) {
      ibv_wc wc[16];
      int n = ibv_poll_cq(cq_.get(), 16, wc);
      if (n < 0) break;
      for (int i = 0; i < n; ++i)
        if ((wc[i].wr_id >> 56) == kWrCtl && (wc[i].wr_id & 0xffffffff) == std::uint32_t(kCredits + 1)) --pending;
      if (n == 0) sched_yield();
    }
  } catch (...) {
  }
  for (auto& p : peers_) p.qp.reset();  // QPs before CQ, MRs, PD, context (members do the rest)
}

// ------------------------------------------------------------------ memory
void VerbsTransport::registerMemory(void* ptr, std::size_t bytes) {
  if (!ptr || bytes == 0) return;
  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  auto reg = [&](void* p, std::size_t n) { return regMr(pd_.get(), p, n, kAccess); };
  auto key = reinterpret_cast<std::uintptr_t>(ptr);
  auto it = regions_.find(key);
  if (it != regions_.end()) {
    if (bytes <= it->second.bytes) {
      ++it->second.refs;
      return;
    }
    it->second.mr = reg(ptr, bytes);
    it->second.bytes = bytes;
    ++it->second.refs;
    return;
  }
  Mr mr = reg(ptr, bytes);
  regions_.emplace(key, Region{bytes, 1, std::move(mr)});
}

void VerbsTransport::deregisterMemory(void* ptr) {
  auto it = regions_.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == regions_.end()) return;
  if (--it->second.refs <= 0) regions_.erase(it);
}

ibv_mr* VerbsTransport::findMr(const void* p, std::size_t bytes, const char* what, int peer) {
  auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = regions_.upper_bound(a);
  while (it != regions_.begin()) {
    --it;
    if (a >= it->first && a + bytes <= it->first + it->second.bytes) return it->second.mr.get();
  }
  FB_THROW(Error, "verbs: ", what, " of ", bytes, " bytes with rank ", peer, ": buffer ", p,
           " is not inside memory given to registerMemory()");
}

// ------------------------------------------------------------------ posting
void VerbsTransport::postRecv(int peer, int slot) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(recvSlot(peer, slot)), sizeof(CtlMsg), ctlMr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wrId(kWrRecv, peer, std::uint32_t(slot));
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  FB_VERBS_CHECK(ibv_post_recv(peers_[peer].qp.get(), &wr, &bad), "(control receive for rank ", peer, ")");
}

void VerbsTransport::postCtl(int peer, int slot, const CtlMsg& m) {
  CtlMsg* s = sendSlot(peer, slot);
  *s = m;
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(s), sizeof(CtlMsg), ctlMr_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wrId(kWrCtl, peer, std::uint32_t(slot));
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  FB_VERBS_CHECK(ibv_post_send(peers_[peer].qp.get(), &wr, &bad), "(control message to rank ", peer, ")");
  ++peers_[peer].sqUsed;
}

void VerbsTransport::postProbe(int peer) {
  Peer& pr = peers_[peer];
  CtlMsg* s = ctlBase_ + ctl_.size() - 2;  // local scratch source
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(s), 8, ctlMr_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wrId(kWrProbe, peer, 0);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = pr.remoteScratch;
  wr.wr.rdma.rkey = pr.remoteCtrlRkey;
  ibv_send_wr* bad = nullptr;
  FB_VERBS_CHECK(ibv_post_send(pr.qp.get(), &wr, &bad), "(liveness probe to rank ", peer, ")");
  ++pr.sqUsed;
  pr.probeOut = true;
  pr.lastProbe = Clock::now();
}

// Posts the WRITE(s) for one isend matched with its CTS; false when the send queue is full.
bool VerbsTransport::postData(int peer, Op& op, const CtlMsg& cts) {
  Peer& pr = peers_[peer];
  if (cts.seq != op.seq)
    FB_THROW(Error, "verbs: protocol error with rank ", peer, ": clear-to-send for message ", cts.seq,
             " matched isend ", op.seq);
  if (cts.len != op.bytes) {
    if (pr.sqUsed >= kSqDepth) return false;
    CtlMsg m{kMagic, std::uint32_t(CtlType::kMismatch), op.seq, 0, 0, op.bytes};
    postCtl(peer, kCredits, m);
    op.done = true;
    op.err = ErrKind::kSize;
    op.msg = "verbs: size mismatch: isend of " + std::to_string(op.bytes) + " bytes to rank " + std::to_string(peer) +
             " met an irecv of " + std::to_string(cts.len) + " bytes (message " + std::to_string(op.seq) + ")";
    return true;
  }
  std::size_t chunks = op.bytes == 0 ? 1 : (op.bytes + chunkMax_ - 1) / chunkMax_;
  if (pr.sqUsed + int(chunks) > kSqDepth) {
    if (pr.sqUsed == 0) FB_THROW(Error, "verbs: message of ", op.bytes, " bytes needs ", chunks, " work requests");
    return false;
  }
  std::vector<ibv_sge> sges(chunks);
  std::vector<ibv_send_wr> wrs(chunks);
  for (std::size_t c = 0; c < chunks; ++c) {
    std::size_t off = c * chunkMax_;
    std::size_t len = std::min(chunkMax_, op.bytes - std::min(op.bytes, off));
    ibv_send_wr& w = wrs[c];
    w = ibv_send_wr{};
    w.wr_id = wrId(kWrData, peer, 0);
    if (len > 0) {
      sges[c] = ibv_sge{reinterpret_cast<std::uintptr_t>(op.buf + off), std::uint32_t(len), op.key};
      w.sg_list = &sges[c];
      w.num_sge = 1;
    }
    bool last = c + 1 == chunks;
    w.opcode = last ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    if (last) w.imm_data = htonl(op.seq);
    w.send_flags = IBV_SEND_SIGNALED;
    w.wr.rdma.remote_addr = cts.addr + off;
    w.wr.rdma.rkey = cts.rkey;
    w.next = last ? nullptr : &wrs[c + 1];
  }
  ibv_send_wr* bad = nullptr;
  FB_VERBS_CHECK(ibv_post_send(pr.qp.get(), wrs.data(), &bad), "(RDMA WRITE of ", op.bytes, " bytes to rank ", peer, ")");
  pr.sqUsed += int(chunks);
  op.chunksLeft = int(chunks);
  return true;
}

void VerbsTransport::pump(int peer) {
  Peer& pr = peers_[peer];
  if (pr.failed || pr.closed) return;
  while (!pr.recvsNoCts.empty() && pr.recvsWaiting.size() < std::size_t(kCredits) && pr.sqUsed < kSqDepth) {
    std::uint64_t id = pr.recvsNoCts.front();
    Op& op = ops_.at(id);
    CtlMsg m{kMagic, std::uint32_t(CtlType::kCts), op.seq, op.key,
             op.bytes ? reinterpret_cast<std::uintptr_t>(op.buf) : reinterpret_cast<std::uintptr_t>(ctlBase_ + ctl_.size() - 1),
             op.bytes};
    if (op.bytes == 0) m.rkey = ctlMr_->rkey;  // a zero-length WRITE still names a valid region
    postCtl(peer, int(op.seq % kCredits), m);
    op.ctsSent = true;
    pr.recvsNoCts.pop_front();
    pr.recvsWaiting.push_back(id);
  }
  while (!pr.sendsWaiting.empty() && !pr.ctsReady.empty()) {
    std::uint64_t id = pr.sendsWaiting.front();
    Op& op = ops_.at(id);
    if (!postData(peer, op, pr.ctsReady.front())) break;
    pr.ctsReady.pop_front();
    pr.sendsWaiting.pop_front();
    if (!op.done) pr.writing.push_back(id);
  }
}

std::uint64_t VerbsTransport::newOp(Op op) {
  std::uint64_t id = nextId_++;
  ops_.emplace(id, std::move(op));
  return id;
}

// isend and irecv differ only in the direction: the send queues behind the peer's clear-to-send
// with our lkey; the receive announces itself (clear-to-send) with our rkey.
Request VerbsTransport::post(bool send, int peer, void* buf, std::size_t bytes) {
  const char* what = send ? "isend" : "irecv";
  if (peer < 0 || peer >= size_) FB_THROW(Error, "verbs: ", what, send ? " to" : " from", " rank ", peer, " of ", size_);
  Op op;
  op.send = send;
  op.peer = peer;
  op.buf = static_cast<char*>(buf);
  op.bytes = bytes;
  if (peer == rank_) {
    std::uint64_t id = newOp(std::move(op));
    if (send) self_.postSend(id, buf, bytes);
    else self_.postRecv(id, buf, bytes);
    matchSelf();
    return Request{id};
  }
  Peer& pr = peers_[peer];
  op.seq = send ? pr.sendSeq++ : pr.recvSeq++;
  if (bytes > 0) {
    auto* mr = findMr(buf, bytes, what, peer);
    op.key = send ? mr->lkey : mr->rkey;
  }
  if (pr.failed || pr.closed) {
    op.done = true;
    op.err = ErrKind::kIo;
    op.msg = pr.failMsg;
    return Request{newOp(std::move(op))};
  }
  std::uint64_t id = newOp(std::move(op));
  (send ? pr.sendsWaiting : pr.recvsNoCts).push_back(id);
  pump(peer);
  return Request{id};
}

Request VerbsTransport::isend(int peer, const void* buf, std::size_t bytes) {
  return post(true, peer, const_cast<void*>(buf), bytes);
}

Request VerbsTransport::irecv(int peer, void* buf, std::size_t bytes) { return post(false, peer, buf, bytes); }

void VerbsTransport::matchSelf() {
  self_.match("verbs", rank_, [&](std::uint64_t sendId, std::uint64_t recvId, const std::string& error) {
    Op& s = ops_.at(sendId);
    Op& r = ops_.at(recvId);
    s.done = r.done = true;
    if (!error.empty()) {
      s.err = r.err = ErrKind::kSize;
      s.msg = r.msg = error;
    }
  });
}

// ------------------------------------------------------------------ progress
// includingWrites = false for BYE: WRITEs already posted were acknowledged or will complete with
// an error of their own (a BYE may be polled before the completion of a WRITE the peer did get).
void VerbsTransport::failPeer(int peer, const std::string& msg, bool includingWrites) {
  Peer& pr = peers_[peer];
  if (pr.failMsg.empty()) pr.failMsg = msg;
  if (includingWrites) pr.failed = true;
  auto fail = [&](std::deque<std::uint64_t>& q) {
    for (std::uint64_t id : q) {
      Op& op = ops_.at(id);
      if (op.done && op.err != ErrKind::kNone) continue;
      op.done = true;
      op.err = ErrKind::kIo;
      op.msg = pr.failMsg;
    }
    q.clear();
  };
  fail(pr.sendsWaiting);
  if (includingWrites) fail(pr.writing);
  fail(pr.recvsNoCts);
  fail(pr.recvsWaiting);
  pr.ctsReady.clear();
}

void VerbsTransport::handle(const ibv_wc& wc) {
  auto kind = WrKind(wc.wr_id >> 56);
  int peer = int((wc.wr_id >> 32) & 0xffffff);
  auto idx = std::uint32_t(wc.wr_id & 0xffffffff);
  if (peer < 0 || peer >= size_ || peer == rank_) FB_THROW(Error, "verbs: completion with unknown wr_id ", wc.wr_id);
  Peer& pr = peers_[peer];
  if (wc.status != IBV_WC_SUCCESS) {
    if (pr.failed) return;  // flushes after the first error
    static const char* what[] = {"?", "receive", "control send", "RDMA WRITE", "liveness probe"};
    std::string m = "verbs: " + std::string(what[kind <= kWrProbe ? std::uint64_t(kind) : 0]) + " with rank " + std::to_string(peer) +
                    " failed: " + ibv_wc_status_str(wc.status) + " (status " + std::to_string(int(wc.status)) +
                    ", vendor_err " + std::to_string(wc.vendor_err) + ")" +
                    (wc.status == IBV_WC_RETRY_EXC_ERR ? ": rank " + std::to_string(peer) + " is not answering (gone?)" : "");
    failPeer(peer, pr.closed ? pr.failMsg + "; then " + m : m, true);
    return;
  }
  switch (kind) {
    case kWrRecv: {
      if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        std::uint32_t seq = ntohl(wc.imm_data);
        postRecv(peer, int(idx));
        if (pr.recvsWaiting.empty())
          FB_THROW(Error, "verbs: protocol error: data from rank ", peer, " without a posted irecv");
        Op& op = ops_.at(pr.recvsWaiting.front());
        if (op.seq != seq)
          FB_THROW(Error, "verbs: protocol error: data for message ", seq, " from rank ", peer, ", expected ", op.seq);
        if (op.bytes <= chunkMax_ && wc.byte_len != op.bytes) {
          op.err = ErrKind::kSize;
          op.msg = "verbs: size mismatch: " + std::to_string(wc.byte_len) + " bytes arrived from rank " +
                   std::to_string(peer) + " for an irecv of " + std::to_string(op.bytes);
        }
        op.done = true;
        pr.recvsWaiting.pop_front();
        return;
      }
      CtlMsg m = *recvSlot(peer, int(idx));
      postRecv(peer, int(idx));
      if (m.magic != kMagic) FB_THROW(Error, "verbs: protocol error: bad control message from rank ", peer);
      switch (CtlType(m.type)) {
        case CtlType::kCts:
          pr.ctsReady.push_back(m);
          return;
        case CtlType::kMismatch: {
          if (pr.recvsWaiting.empty() || ops_.at(pr.recvsWaiting.front()).seq != m.seq)
            FB_THROW(Error, "verbs: protocol error: size-mismatch notice for message ", m.seq, " from rank ", peer);
          Op& op = ops_.at(pr.recvsWaiting.front());
          op.done = true;
          op.err = ErrKind::kSize;
          op.msg = "verbs: size mismatch: rank " + std::to_string(peer) + " sent " + std::to_string(m.len) +
                   " bytes, this irecv expects " + std::to_string(op.bytes) + " (message " + std::to_string(m.seq) + ")";
          pr.recvsWaiting.pop_front();
          return;
        }
        case CtlType::kBye:
          pr.closed = true;
          failPeer(peer, "verbs: rank " + std::to_string(peer) + " closed its transport (peer lost)", false);
          return;
      }
      FB_THROW(Error, "verbs: protocol error: control message type ", m.type, " from rank ", peer);
    }
    case kWrCtl:
      --pr.sqUsed;
      return;
    case kWrProbe:
      --pr.sqUsed;
      pr.probeOut = false;
      return;
    case kWrData: {
      --pr.sqUsed;
      if (pr.writing.empty()) FB_THROW(Error, "verbs: protocol error: stray WRITE completion for rank ", peer);
      Op& op = ops_.at(pr.writing.front());
      if (--op.chunksLeft == 0) {
        op.done = true;
        pr.writing.pop_front();
      }
      return;
    }
  }
  FB_THROW(Error, "verbs: completion of unknown kind for rank ", peer);
}

bool VerbsTransport::progress() {
  ibv_wc wc[32];
  int n = ibv_poll_cq(cq_.get(), 32, wc);
  if (n < 0) FB_THROW(VerbsError, "ibv_poll_cq failed (", n, ")");
  for (int i = 0; i < n; ++i) handle(wc[i]);
  if (n > 0)
    for (int p = 0; p < size_; ++p)
      if (p != rank_) pump(p);
  return n > 0;
}

std::string VerbsTransport::opText(const Op& op) const {
  std::string s = std::string(op.send ? "isend of " : "irecv of ") + std::to_string(op.bytes) + " bytes " +
                  (op.send ? "to" : "from") + " rank " + std::to_string(op.peer) + " (message " + std::to_string(op.seq);
  if (op.peer == rank_) return s + ", to itself: no matching " + (op.send ? "irecv" : "isend") + ")";
  if (op.send) s += op.chunksLeft > 0 ? ", RDMA WRITE posted, no completion yet)" : ", no clear-to-send from the peer yet)";
  else s += op.ctsSent ? ", clear-to-send sent, no data yet)" : ", waiting for a credit to send clear-to-send)";
  return s;
}

void VerbsTransport::throwOp(const Op& op) {
  switch (op.err) {
    case ErrKind::kIo: throw IoError(identity() + " " + op.msg, op.peer);
    case ErrKind::kSize: throw Error(identity() + " " + op.msg);
    default: throw Error(identity() + " " + op.msg);
  }
}

void VerbsTransport::wait(Request& req, Deadline deadline) {
  if (!req) return;
  auto it = ops_.find(req.id);
  if (it == ops_.end()) {
    req.id = 0;
    return;
  }
  // progress.h: poll first (latency), then sleep on the completion channel: ranks often share
  // cores (threads in tests, oversubscribed mpirun, a 2-vCPU VM where rxe's own kernel work needs
  // the CPU too); with more ranks than cores on this node the polls yield the core in between.
  auto start = Clock::now();
  SpinThenSleep waiting(progress_);
  while (!it->second.done) {
    if (progress()) {
      waiting.progressed();
      armed_ = false;
      continue;
    }
    if (waiting.spin()) continue;
    auto now = Clock::now();
    const Op& op = it->second;
    if (now >= deadline.at) {
      FB_THROW(TimeoutError, "verbs: ", opText(op), " timed out after ",
               std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count(), " ms");
    }
    // A peer that died without BYE: an 8-byte WRITE into its scratch word fails with
    // RETRY_EXC_ERR (~0.5 s) when nobody answers.
    if (op.peer != rank_ && now - start > std::chrono::seconds(1)) {
      Peer& pr = peers_[op.peer];
      if (!pr.failed && !pr.probeOut && pr.sqUsed < kSqAlloc - 2 && now - pr.lastProbe > std::chrono::seconds(1))
        postProbe(op.peer);
    }
    if (!armed_) {  // arm, then poll once more: a completion that raced the arming is not lost
      FB_VERBS_CHECK(ibv_req_notify_cq(cq_.get(), 0));
      armed_ = true;
      continue;
    }
    int ms = std::max(0, std::min(deadline.msLeft(), 10));
    if (waitCqEvent(channel_.get(), ms)) armed_ = false;
  }
  Op op = std::move(it->second);
  ops_.erase(it);
  req.id = 0;
  if (op.err != ErrKind::kNone) throwOp(op);
}

PathInfo VerbsTransport::path() const {
  PathInfo p;
  const auto& g = sel_.gid;
  std::string compactRate;  // "2.5GbE", "HDR200Gb/s(4X)"
  for (char c : sel_.port.rate) if (c != ' ') compactRate += c;
  p.label = "verbs " + sel_.device.name + ":" + std::to_string(sel_.port.port) + " " +
            (sel_.port.ethernet ? (g && !g->type.empty() ? g->type : std::string("RoCE")) : std::string("IB")) +
            (g ? " gid" + std::to_string(sel_.gidIndex) + " " + g->text : " lid" + std::to_string(sel_.port.lid)) +
            " mtu" + std::to_string(minPathMtu_ ? minPathMtu_ : sel_.port.activeMtu) + " " + compactRate +
            " gpudirect=no";
  p.details = {{"device", sel_.device.name},
               {"port", std::to_string(sel_.port.port)},
               {"link_layer", sel_.port.linkLayer()},
               {"gid_index", std::to_string(sel_.gidIndex)},
               {"gid", g ? g->text : ""},
               {"gid_type", g ? g->type : ""},
               {"netdev", g ? g->netdev : ""},
               {"path_mtu", std::to_string(minPathMtu_ ? minPathMtu_ : sel_.port.activeMtu)},
               {"rate", sel_.port.rate},
               {"fw", sel_.device.fwVer},
               {"gpudirect", "no (host memory; --gpu-memory not given)"},
               {"why", sel_.why},
               {"progress", progress_.why}};
  // % of nominal: the port's rate (lanes x lane rate, Gb/s) in GB/s.
  const std::string port = sel_.device.name + " port " + std::to_string(sel_.port.port);
  p.setNominal(sel_.port.gbps / 8, sel_.port.gbps > 0 ? port + " " + sel_.port.rate + " (port rate)"
                                                      : port + ": rate unknown, no nominal rate");
  return p;
}

// Every rank decides on its own, then all agree: the first rank with a problem speaks for all,
// so a bad --gid-index is one clear line on every rank and nobody waits for a QP that never comes.
Selection agreeOnSelection(Bootstrap& bs, const TransportOptions& o) {
  std::optional<Selection> sel;
  agree(bs, "verbs", [&] {
    failHook("verbs-open", bs.rank());
    sel = select(discoverDevices(), o);
    if (o.gpuDirect) {
      GpuDirectStatus g = probeGpuDirect(sel->device.name);
      if (!g.possible)
        throw UnavailableError("verbs: --gpu-memory needs GPUDirect RDMA, not possible with " + sel->device.name +
                               " on this host: " + g.why);
      // The ring collectives keep their buffers in host memory; a row must not claim GPU memory
      // (gpudirect=yes) while its data sit in host memory.
      throw UnavailableError("verbs: --gpu-memory: GPUDirect RDMA looks possible with " + sel->device.name + " (" +
                             g.why + "), but verbs collectives on GPU memory are not implemented yet; "
                             "run without --gpu-memory (host memory)");
    }
  });
  return *sel;
}

}  // namespace

std::unique_ptr<Transport> createTransport(Bootstrap& bs, const TransportOptions& o) {
  Selection sel = agreeOnSelection(bs, o);
  return std::make_unique<VerbsTransport>(bs, std::move(sel));
}

BackendStatus probe(const TransportOptions& o) {
  BackendStatus st{"verbs", true, false, ""};
  try {
    auto devs = discoverDevices();
    Selection s = select(devs, o);
    st.usable = true;
    st.reason = s.summary() + "; why: " + s.why + "; gpudirect: " + probeGpuDirect(s.device.name).text();
  } catch (const Error& e) {
    st.reason = e.what();
  }
  return st;
}

}  // namespace fb::verbs

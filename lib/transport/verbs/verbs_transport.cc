// The verbs transport's data path (protocol in verbs_transport_impl.h): posting receives, control
// messages and RDMA WRITEs, progress over the completion queue, peer failures, wait.
#include "transport/verbs/verbs_transport.h"
#include "transport/verbs/verbs_transport_impl.h"

namespace fb::verbs {

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

}  // namespace fb::verbs

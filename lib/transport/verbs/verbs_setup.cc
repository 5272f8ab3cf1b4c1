// The verbs transport's set-up: device, port and GID selection agreed by every rank, the queue
// pairs and their control-message slots, memory registration, and what path() reports.
#include "transport/verbs/verbs_transport.h"
#include "transport/verbs/verbs_transport_impl.h"

namespace fb::verbs {

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

namespace {

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

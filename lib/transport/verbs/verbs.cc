#include "transport/verbs/verbs.h"

#include <poll.h>

#include <cerrno>
#include <cstring>

namespace fb::verbs {

std::string errText(int err) { return detail::errnoText(err); }

void checkCompletion(const ibv_wc& wc, int peer, const char* what) {
  if (wc.status == IBV_WC_SUCCESS) return;
  FB_THROW(IoError, "verbs: ", what, " completion failed with peer rank ", peer, ": ",
           ibv_wc_status_str(wc.status), " (status ", static_cast<int>(wc.status), ", vendor_err 0x",
           std::hex, wc.vendor_err, std::dec, ", qp ", wc.qp_num, ")");
}

std::vector<ibv_device*> deviceList(DeviceList& holder) {
  int n = 0;
  errno = 0;
  holder.reset(ibv_get_device_list(&n));
  std::vector<ibv_device*> out;
  if (!holder) return out;  // no uverbs support at all: treated as "no device"
  for (int i = 0; i < n; ++i) out.push_back(holder.get()[i]);
  return out;
}

Context openDevice(const std::string& name) {
  DeviceList holder;
  auto devs = deviceList(holder);
  std::string names;
  for (ibv_device* d : devs) {
    if (name == ibv_get_device_name(d)) return Context(FB_VERBS_PTR(ibv_open_device(d), "(", name, ")"));
    names += (names.empty() ? "" : ", ") + std::string(ibv_get_device_name(d));
  }
  if (devs.empty()) throw UnavailableError("no RDMA device");
  throw ConfigError("verbs: no RDMA device named '" + name + "' (devices here: " + names +
                    "); pass one of them to --ib-dev, or omit --ib-dev");
}

Pd allocPd(ibv_context* ctx) { return Pd(FB_VERBS_PTR(ibv_alloc_pd(ctx))); }

Cq createCq(ibv_context* ctx, int entries, ibv_comp_channel* channel) {
  return Cq(FB_VERBS_PTR(ibv_create_cq(ctx, entries, nullptr, channel, 0), "(", entries, " entries)"));
}

Channel createChannel(ibv_context* ctx) { return Channel(FB_VERBS_PTR(ibv_create_comp_channel(ctx))); }

bool waitCqEvent(ibv_comp_channel* channel, int timeoutMs) {
  pollfd p{channel->fd, POLLIN, 0};
  int rc = ::poll(&p, 1, timeoutMs);
  if (rc < 0) {
    if (errno == EINTR) return false;
    FB_THROW(VerbsError, "poll(completion channel) failed: ", errText(errno));
  }
  if (rc == 0) return false;
  ibv_cq* cq = nullptr;
  void* cqCtx = nullptr;
  if (ibv_get_cq_event(channel, &cq, &cqCtx) != 0) FB_THROW(VerbsError, "ibv_get_cq_event failed: ", errText(errno));
  ibv_ack_cq_events(cq, 1);
  return true;
}

Mr regMr(ibv_pd* pd, void* addr, std::size_t bytes, int access) {
  return Mr(FB_VERBS_PTR(ibv_reg_mr(pd, addr, bytes, access), "(", bytes,
                         " bytes; as non-root, check `ulimit -l`)"));
}

Qp createRcQp(ibv_pd* pd, ibv_cq* cq, int sendWr, int recvWr, int inlineBytes, int* inlineGot) {
  ibv_qp_init_attr a{};
  a.send_cq = cq;
  a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.sq_sig_all = 0;
  a.cap.max_send_wr = sendWr;
  a.cap.max_recv_wr = recvWr;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = inlineBytes;
  errno = 0;
  ibv_qp* qp = ibv_create_qp(pd, &a);
  if (!qp && inlineBytes > 0) {
    a.cap.max_inline_data = 0;
    qp = ibv_create_qp(pd, &a);
  }
  if (!qp) {
    int e = errno;
    FB_THROW(VerbsError, "ibv_create_qp(RC, ", sendWr, " send / ", recvWr, " recv WRs) failed: ", errText(e));
  }
  if (inlineGot) *inlineGot = static_cast<int>(a.cap.max_inline_data);
  return Qp(qp);
}

QpAddress localAddress(const ibv_qp* qp, const PortSel& sel, std::uint32_t psn) {
  QpAddress a;
  a.qpn = qp->qp_num;
  a.psn = psn & 0xffffff;
  a.lid = sel.lid;
  a.mtu = static_cast<std::uint8_t>(sel.activeMtu);
  a.global = sel.gidIndex >= 0 ? 1 : 0;
  a.gid = sel.gid;
  return a;
}

void toInit(ibv_qp* qp, const PortSel& sel) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<std::uint8_t>(sel.port);
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  FB_VERBS_CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
                 "(RESET->INIT, port ", sel.port, ")");
}

void toRtr(ibv_qp* qp, const PortSel& sel, const QpAddress& remote) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(std::min<int>(sel.activeMtu, remote.mtu));
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;  // 0.01 ms: a late receive costs little (the transport avoids RNR anyway)
  a.ah_attr.port_num = static_cast<std::uint8_t>(sel.port);
  a.ah_attr.dlid = remote.lid;
  a.ah_attr.sl = 0;
  if (sel.gidIndex >= 0) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid.data(), 16);
    a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(sel.gidIndex);
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.grh.traffic_class = 0;
  }
  FB_VERBS_CHECK(ibv_modify_qp(qp, &a,
                               IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
                 "(INIT->RTR to qpn ", remote.qpn, ", sgid index ", sel.gidIndex, ")");
}

void toRts(ibv_qp* qp, std::uint32_t psn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;    // 4.096 us * 2^14 = 67 ms per try
  a.retry_cnt = 7;
  a.rnr_retry = 7;   // infinite RNR retries (a receive posted late is not an error)
  a.sq_psn = psn & 0xffffff;
  a.max_rd_atomic = 1;
  FB_VERBS_CHECK(ibv_modify_qp(qp, &a,
                               IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
                 "(RTR->RTS)");
}

void connect(ibv_qp* qp, const PortSel& sel, const QpAddress& remote, std::uint32_t localPsn) {
  if (remote.global != (sel.gidIndex >= 0 ? 1 : 0))
    FB_THROW(ConfigError, "verbs: peers disagree on GID addressing (one side RoCE/GRH, the other not)");
  toInit(qp, sel);
  toRtr(qp, sel, remote);
  toRts(qp, localPsn);
}

int mtuBytes(ibv_mtu mtu) { return 128 << static_cast<int>(mtu); }
std::string mtuText(ibv_mtu mtu) { return std::to_string(mtuBytes(mtu)); }

}  // namespace fb::verbs

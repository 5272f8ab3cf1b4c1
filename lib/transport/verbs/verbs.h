// Thin RAII layer over libibverbs, shared by the verbs Transport and the raw pair benchmark.
//
// libibverbs reports errors three ways, and each has its own check here:
//   * functions returning int return 0 or an errno VALUE (ibv_modify_qp, ibv_post_send,
//     ibv_query_port, ibv_dereg_mr ...)                         -> FB_VERBS_CHECK
//   * functions returning a pointer return NULL and set errno (ibv_open_device, ibv_alloc_pd,
//     ibv_create_cq, ibv_create_qp, ibv_reg_mr ...)               -> FB_VERBS_PTR
//   * work completions carry wc.status (text: ibv_wc_status_str)  -> checkCompletion()
#pragma once
#include <infiniband/verbs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace fb::verbs {

std::string errText(int err);  // "Invalid argument (errno 22)"

}  // namespace fb::verbs

// int-returning verbs: the return value IS the errno (some providers return -1 and set errno).
#define FB_VERBS_CHECK(expr, ...)                                                              \
  do {                                                                                         \
    int fb_rc_ = (expr);                                                                       \
    if (fb_rc_ != 0) {                                                                         \
      int fb_e_ = fb_rc_ > 0 ? fb_rc_ : (errno ? errno : -fb_rc_);                             \
      FB_THROW(::fb::VerbsError, #expr " failed: ", ::fb::verbs::errText(fb_e_), " ", ##__VA_ARGS__); \
    }                                                                                          \
  } while (0)

// pointer-returning verbs: NULL + errno.
#define FB_VERBS_PTR(expr, ...)                                                                \
  ([&]() {                                                                                     \
    errno = 0;                                                                                 \
    auto* fb_p_ = (expr);                                                                      \
    if (fb_p_ == nullptr) {                                                                    \
      int fb_e_ = errno;                                                                       \
      FB_THROW(::fb::VerbsError, #expr " failed: ", ::fb::verbs::errText(fb_e_), " ", ##__VA_ARGS__); \
    }                                                                                          \
    return fb_p_;                                                                              \
  }())

namespace fb::verbs {

// Throws IoError(peer) naming the status (ibv_wc_status_str) and the vendor error.
void checkCompletion(const ibv_wc& wc, int peer, const char* what);

// ---------------------------------------------------------------- RAII handles
struct DeviceListDeleter { void operator()(ibv_device** l) const { ibv_free_device_list(l); } };
struct ContextDeleter { void operator()(ibv_context* c) const { ibv_close_device(c); } };
struct PdDeleter { void operator()(ibv_pd* p) const { ibv_dealloc_pd(p); } };
struct CqDeleter { void operator()(ibv_cq* c) const { ibv_destroy_cq(c); } };
struct ChannelDeleter { void operator()(ibv_comp_channel* c) const { ibv_destroy_comp_channel(c); } };
struct QpDeleter { void operator()(ibv_qp* q) const { ibv_destroy_qp(q); } };
struct MrDeleter { void operator()(ibv_mr* m) const { ibv_dereg_mr(m); } };

using DeviceList = std::unique_ptr<ibv_device*, DeviceListDeleter>;
using Context = std::unique_ptr<ibv_context, ContextDeleter>;
using Pd = std::unique_ptr<ibv_pd, PdDeleter>;
using Cq = std::unique_ptr<ibv_cq, CqDeleter>;
using Channel = std::unique_ptr<ibv_comp_channel, ChannelDeleter>;
using Qp = std::unique_ptr<ibv_qp, QpDeleter>;
using Mr = std::unique_ptr<ibv_mr, MrDeleter>;

// All devices (possibly none: returns an empty list, never throws for "no device").
std::vector<ibv_device*> deviceList(DeviceList& holder);
Context openDevice(const std::string& name);  // ConfigError if no such device
Pd allocPd(ibv_context* ctx);
Cq createCq(ibv_context* ctx, int entries, ibv_comp_channel* channel = nullptr);
Channel createChannel(ibv_context* ctx);
// Blocks (at most timeoutMs) until the armed CQ of `channel` has an event; acks it. Returns
// false on timeout. The caller arms with ibv_req_notify_cq and re-polls before calling.
bool waitCqEvent(ibv_comp_channel* channel, int timeoutMs);
Mr regMr(ibv_pd* pd, void* addr, std::size_t bytes, int access);
// RC QP on one CQ; caps as asked (max_inline_data is best effort: retried with 0).
Qp createRcQp(ibv_pd* pd, ibv_cq* cq, int sendWr, int recvWr, int inlineBytes = 64, int* inlineGot = nullptr);

// ---------------------------------------------------------------- connecting QPs
// What one side of an RC connection tells the other (exchanged through the Bootstrap).
struct QpAddress {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  std::uint16_t lid = 0;
  std::uint8_t mtu = 0;       // enum ibv_mtu of the sender's port (active_mtu)
  std::uint8_t global = 0;    // 1 = address by GID (RoCE, or IB with a GID chosen)
  std::array<std::uint8_t, 16> gid{};
};

// Local end: which port and GID a QP speaks from.
struct PortSel {
  int port = 1;
  int gidIndex = -1;           // -1: IB without GRH
  bool ethernet = false;
  ibv_mtu activeMtu = IBV_MTU_1024;
  std::uint16_t lid = 0;
  std::array<std::uint8_t, 16> gid{};
};

QpAddress localAddress(const ibv_qp* qp, const PortSel& sel, std::uint32_t psn);

// The three named transitions. Access flags: local write + remote write (+ read).
void toInit(ibv_qp* qp, const PortSel& sel);
void toRtr(ibv_qp* qp, const PortSel& sel, const QpAddress& remote);
void toRts(ibv_qp* qp, std::uint32_t psn);
// INIT -> RTR -> RTS in one go; path MTU = min(local, remote).
void connect(ibv_qp* qp, const PortSel& sel, const QpAddress& remote, std::uint32_t localPsn);

std::string mtuText(ibv_mtu mtu);  // "1024"
int mtuBytes(ibv_mtu mtu);

}  // namespace fb::verbs

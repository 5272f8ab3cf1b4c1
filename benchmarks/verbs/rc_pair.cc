// The RC queue-pair pair of fabricbench-verbs (rc_pair.h): set-up, the WRITE loops, the data check.
#include "rc_pair.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

#ifdef FB_VERBS_HAVE_TSC
#include <x86intrin.h>
#endif

namespace fb::verbs {
namespace {

double nowUs() {
  return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
}

std::uint8_t pattern(std::size_t i, int sender) { return std::uint8_t((i * 131u + std::size_t(sender) * 17u + 7u) & 0xff); }

}  // namespace

Pair::Pair(Bootstrap& bs, const Selection& sel, std::size_t maxBytes, int txDepth, bool packed)
    : bs_(bs), maxBytes_(std::max<std::size_t>(maxBytes, 8)) {
  // perftest keeps send and receive areas a page apart (BUFF_SIZE: at least one page), so the
  // byte this side spins on and the byte it writes before each post never share a cache line.
  recvOff_ = packed ? maxBytes_ : ((maxBytes_ + 4095) / 4096) * 4096;
  const std::size_t total = ((recvOff_ + maxBytes_ + 4095) / 4096) * 4096;
  me_ = bs.rank();
  partner_ = (me_ % 2 == 0) ? me_ + 1 : me_ - 1;
  driver_ = me_ % 2 == 0;
  auto opened = openPort(sel);
  ctx_ = std::move(opened.ctx);
  port_ = opened.port;
  pd_ = allocPd(ctx_.get());
  channel_ = createChannel(ctx_.get());
  cq_ = createCq(ctx_.get(), txDepth * 2 + 16, channel_.get());
  // [0, max): send area; [recvOff, recvOff + max): receive area (the partner writes there)
  buf_ = static_cast<std::uint8_t*>(std::aligned_alloc(4096, total));
  if (!buf_) FB_THROW(Error, "out of memory for ", total, " bytes");
  std::memset(buf_, 0, total);
  mr_ = regMr(pd_.get(), buf_, total, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  qp_ = createRcQp(pd_.get(), cq_.get(), txDepth + 8, 8, 220, &inline_);
  std::uint32_t psn = (std::uint32_t(me_) * 7919u + 11u) & 0xffffff;
  Endpoint mine;
  mine.qp = localAddress(qp_.get(), port_, psn);
  mine.addr = reinterpret_cast<std::uintptr_t>(buf_ + recvOff_);
  mine.rkey = mr_->rkey;
  std::vector<std::byte> blob(sizeof mine);
  std::memcpy(blob.data(), &mine, sizeof mine);
  auto all = bs.allGather(blob);
  std::memcpy(&remote_, all[partner_].data(), sizeof remote_);
  connect(qp_.get(), port_, remote_.qp, psn);
  bs.barrier();
}

Pair::~Pair() {
  qp_.reset();
  mr_.reset();
  std::free(buf_);
}

void Pair::postDoneRecv() {
  ibv_recv_wr wr{};
  wr.wr_id = 7;
  ibv_recv_wr* bad = nullptr;
  FB_VERBS_CHECK(ibv_post_recv(qp_.get(), &wr, &bad));
}

void Pair::waitDone() {
  auto deadline = Clock::now() + std::chrono::seconds(300);
  for (;;) {
    ibv_wc wc;
    int n = ibv_poll_cq(cq_.get(), 1, &wc);
    if (n < 0) FB_THROW(VerbsError, "ibv_poll_cq failed");
    if (n == 1) {
      checkCompletion(wc, partner_, "end-of-test notice");
      return;
    }
    if (Clock::now() > deadline) FB_THROW(TimeoutError, "write_bw: rank ", partner_, " never finished");
    FB_VERBS_CHECK(ibv_req_notify_cq(cq_.get(), 0));
    n = ibv_poll_cq(cq_.get(), 1, &wc);
    if (n == 1) {
      checkCompletion(wc, partner_, "end-of-test notice");
      return;
    }
    waitCqEvent(channel_.get(), 100);
  }
}

void Pair::sendDone() {
  ibv_send_wr wr{};
  wr.wr_id = 8;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote_.addr;
  wr.wr.rdma.rkey = remote_.rkey;
  ibv_send_wr* bad = nullptr;
  FB_VERBS_CHECK(ibv_post_send(qp_.get(), &wr, &bad));
  ibv_wc wc;
  int n;
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while ((n = ibv_poll_cq(cq_.get(), 1, &wc)) == 0)
    if (Clock::now() > deadline) FB_THROW(TimeoutError, "write_bw: end-of-test notice not completed");
  if (n < 0) FB_THROW(VerbsError, "ibv_poll_cq failed");
  checkCompletion(wc, partner_, "end-of-test notice");
}

double Pair::writeBw(std::size_t bytes, int iters, int txDepth, int cqMod) {
  cqMod = std::max(1, std::min(cqMod, txDepth));
  if (!driver_) {
    waitDone();
    return 0;
  }
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf_), std::uint32_t(bytes), mr_->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma.remote_addr = remote_.addr;
  wr.wr.rdma.rkey = remote_.rkey;
  ibv_send_wr* bad = nullptr;
  long posted = 0, done = 0;
  ibv_wc wc[16];
  auto deadline = Clock::now() + std::chrono::seconds(300);
  double t0 = nowUs();
  while (done < iters) {
    while (posted < iters && posted - done < txDepth) {
      bool sig = (posted + 1) % cqMod == 0 || posted + 1 == iters;
      wr.send_flags = sig ? IBV_SEND_SIGNALED : 0;
      // wr_id = how many WRITEs this completion accounts for
      wr.wr_id = sig ? std::uint64_t((posted % cqMod) + 1) : 0;
      if (bytes <= std::size_t(inline_)) wr.send_flags |= IBV_SEND_INLINE;
      FB_VERBS_CHECK(ibv_post_send(qp_.get(), &wr, &bad));
      ++posted;
    }
    int n = ibv_poll_cq(cq_.get(), 16, wc);
    if (n < 0) FB_THROW(VerbsError, "ibv_poll_cq failed");
    for (int i = 0; i < n; ++i) {
      checkCompletion(wc[i], partner_, "RDMA WRITE");
      done += long(wc[i].wr_id);
    }
    if (n == 0 && Clock::now() > deadline) FB_THROW(TimeoutError, "write_bw: no completion for 300 s");
  }
  double sec = (nowUs() - t0) * 1e-6;
  sendDone();
  return sec;
}

std::vector<double> Pair::writeLat(std::size_t bytes, int iters, bool useTsc) {
  volatile std::uint8_t* pollByte = buf_ + recvOff_ + bytes - 1;
  std::uint8_t* postByte = buf_ + bytes - 1;  // the receive area was cleared before the barrier
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf_), std::uint32_t(bytes), mr_->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED | (bytes <= std::size_t(inline_) ? IBV_SEND_INLINE : 0);
  wr.wr.rdma.remote_addr = remote_.addr;
  wr.wr.rdma.rkey = remote_.rkey;
  ibv_send_wr* bad = nullptr;
  std::vector<std::uint64_t> posted(iters + 1);
  auto stamp = [useTsc]() -> std::uint64_t {
#ifdef FB_VERBS_HAVE_TSC
    if (useTsc) return __rdtsc();
#endif
    return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
  };
  int scnt = 0, rcnt = 0, ccnt = 0;
  auto deadline = Clock::now() + std::chrono::seconds(300);
  const auto wall0 = Clock::now();
  const std::uint64_t stamp0 = stamp();
  while (scnt < iters || rcnt < iters || ccnt < iters) {
    if (rcnt < iters && !(scnt < 1 && driver_)) {
      ++rcnt;
      long spins = 0;
      while (*pollByte != std::uint8_t(rcnt)) {
        if ((++spins & 0xfffff) == 0 && Clock::now() > deadline)
          FB_THROW(TimeoutError, "write_lat: rank ", partner_, " did not answer iteration ", rcnt);
      }
    }
    if (scnt < iters) {
      posted[scnt] = stamp();
      *postByte = std::uint8_t(++scnt);
      FB_VERBS_CHECK(ibv_post_send(qp_.get(), &wr, &bad));
    }
    if (ccnt < iters) {
      ibv_wc wc;
      int n;
      long spins = 0;
      while ((n = ibv_poll_cq(cq_.get(), 1, &wc)) == 0) {
        if ((++spins & 0xfffff) == 0 && Clock::now() > deadline) FB_THROW(TimeoutError, "write_lat: no completion");
      }
      if (n < 0) FB_THROW(VerbsError, "ibv_poll_cq failed");
      checkCompletion(wc, partner_, "RDMA WRITE");
      ++ccnt;
    }
  }
  posted[iters] = stamp();
  const auto wall1 = Clock::now();
  const std::uint64_t stamp1 = stamp();
  double usPerStamp = 1e-3;  // steady: nanoseconds
  if (useTsc) {
    double us = std::chrono::duration<double, std::micro>(wall1 - wall0).count();
    usPerStamp = stamp1 > stamp0 ? us / double(stamp1 - stamp0) : 0;
    if (!(usPerStamp > 0)) FB_THROW(Error, "write_lat: the time-stamp counter did not advance");
    tscMhz_ = 1.0 / usPerStamp;
  }
  std::vector<double> half;
  for (int i = 1; i < iters; ++i) half.push_back(double(posted[i] - posted[i - 1]) * usPerStamp / 2);
  return half;
}

void Pair::fillSend(std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) buf_[i] = pattern(i, me_);
}

std::int64_t Pair::countWrong(std::size_t bytes, bool skipLast) {
  std::int64_t wrong = 0;
  std::size_t n = skipLast && bytes > 0 ? bytes - 1 : bytes;
  for (std::size_t i = 0; i < n; ++i) wrong += buf_[recvOff_ + i] != pattern(i, partner_);
  return wrong;
}

}  // namespace fb::verbs

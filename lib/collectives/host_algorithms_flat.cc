// The flat host algorithms (host_algorithms.h): recursive doubling, Rabenseifner, recursive
// halving, Bruck, and the step-by-step ring, over one Algo that holds the fold and the exchange.
#include <cstring>
#include <utility>

#include "collectives/host_algorithms_parts.h"
#include "collectives/host_reduce.h"

namespace fb::hostalgo {
namespace {

// Non-power-of-two fold (see host_algorithms.h).
struct Fold {
  int p = 1, rem = 0, newRank = 0;
  int real(int nr) const { return nr < rem ? 2 * nr + 1 : nr + rem; }
};
Fold makeFold(int n, int r) {
  Fold f;
  while (f.p * 2 <= n) f.p *= 2;
  f.rem = n - f.p;
  f.newRank = r < 2 * f.rem ? (r % 2 ? r / 2 : -1) : r - f.rem;
  return f;
}

class Algo {
 public:
  explicit Algo(const HostOp& op)
      : op_(op), t_(op.t), s_(op.s), n_(op.s.nRanks), r_(op.t.rank()), elt_(dtypeSize(op.s.dtype)),
        f_(makeFold(n_, r_)) {}

  void allReduceRecursiveDoubling() {
    const std::size_t B = s_.recvCount * elt_;
    if (op_.in != op_.out && B) std::memcpy(op_.out, op_.in, B);
    if (n_ == 1) return;
    foldIn(B);
    if (f_.newRank >= 0) {
      for (int mask = 1; mask < f_.p; mask <<= 1) {
        int partner = f_.real(f_.newRank ^ mask);
        // The send reads `out` until it completes: reduce only after both are done.
        exchange(partner, op_.out, B, partner, op_.recvScratch, B, [](std::size_t, std::size_t) {});
        sum(op_.out, op_.out, op_.recvScratch, B);
      }
    }
    foldOut(op_.out, B);
  }

  void allReduceRabenseifner() {
    const std::size_t C = s_.recvCount;
    const std::size_t B = C * elt_;
    if (op_.in != op_.out && B) std::memcpy(op_.out, op_.in, B);
    if (n_ == 1) return;
    foldIn(B);
    if (f_.newRank >= 0) {
      const int p = f_.p, me = f_.newRank;
      auto at = [&](int blk) { return C * static_cast<std::size_t>(blk) / static_cast<std::size_t>(p) * elt_; };
      auto [lo, hi] = recursiveHalving(op_.out, op_.out, at);
      for (int mask = 1; mask < p; mask <<= 1) {
        int partner = f_.real(me ^ mask), plo = lo ^ mask;
        exchange(partner, op_.out + at(lo), at(lo + mask) - at(lo), partner, op_.out + at(plo),
                 at(plo + mask) - at(plo), [](std::size_t, std::size_t) {});
        lo = std::min(lo, plo);
      }
    }
    foldOut(op_.out, B);
  }

  // Ring (reduce-scatter, then all-gather), step by step: the leaders' inner ring of kHier (ring.cc
  // runs the flat one, with forwarding). Chunk k = elements [k C/n, (k+1) C/n).
  void allReduceRing() {
    const std::size_t C = s_.recvCount;
    if (op_.in != op_.out && C) std::memcpy(op_.out, op_.in, C * elt_);
    if (n_ == 1) return;
    auto start = [&](int k) { return C * static_cast<std::size_t>((k % n_ + n_) % n_) / n_ * elt_; };
    auto len = [&](int k) {
      int m = (k % n_ + n_) % n_;
      return C * static_cast<std::size_t>(m + 1) / n_ * elt_ - start(m);
    };
    const int right = (r_ + 1) % n_, left = (r_ - 1 + n_) % n_;
    for (int st = 0; st < n_ - 1; ++st) {
      const int sk = r_ - st, rk = r_ - st - 1;
      std::byte* dst = op_.out + start(rk);
      exchange(right, op_.out + start(sk), len(sk), left, op_.recvScratch, len(rk),
               [&](std::size_t o, std::size_t b) { sum(dst + o, dst + o, op_.recvScratch + o, b); });
    }
    for (int st = 0; st < n_ - 1; ++st) {
      const int sk = r_ + 1 - st, rk = r_ - st;
      exchange(right, op_.out + start(sk), len(sk), left, op_.out + start(rk), len(rk),
               [](std::size_t, std::size_t) {});
    }
  }

  void reduceScatterRecursiveHalving() {
    const std::size_t c = s_.paramCount;
    const std::size_t B = c * elt_;       // one rank's block
    const std::size_t total = B * n_;     // the whole input
    std::byte* acc = op_.accScratch;
    if (n_ == 1) {
      if (op_.in != op_.out && B) std::memmove(op_.out, op_.in, B);
      return;
    }
    const std::byte* src = op_.in;
    if (f_.newRank < 0) {  // even folded rank: hand the whole input over, get its block back
      exchange(r_ + 1, op_.in, total, -1, nullptr, 0, [](std::size_t, std::size_t) {});
      exchange(-1, nullptr, 0, r_ + 1, op_.out, B, [](std::size_t, std::size_t) {});
      return;
    }
    if (r_ < 2 * f_.rem) {  // odd folded rank: acc = in + the even rank's input
      exchange(-1, nullptr, 0, r_ - 1, acc, total,
               [&](std::size_t o, std::size_t b) { sum(acc + o, acc + o, op_.in + o, b); });
      src = acc;
    }
    // New rank k covers the blocks of old ranks 2k, 2k+1 (k < rem) or k + rem.
    auto at = [&](int k) {
      return static_cast<std::size_t>(k < f_.rem ? 2 * k : k + f_.rem) * B;
    };
    recursiveHalving(src, acc, at);
    if (r_ < 2 * f_.rem)  // the even partner's block sits just below ours
      exchange(r_ - 1, acc + static_cast<std::size_t>(r_ - 1) * B, B, -1, nullptr, 0, [](std::size_t, std::size_t) {});
    if (B) std::memcpy(op_.out, acc + static_cast<std::size_t>(r_) * B, B);
  }

  void allGatherBruck() {
    const std::size_t B = s_.paramCount * elt_;
    std::byte* mine = op_.out + static_cast<std::size_t>(r_) * B;
    if (op_.in != mine && B) std::memcpy(mine, op_.in, B);
    for (int dist = 1; dist < n_; dist <<= 1) {
      int cnt = std::min(dist, n_ - dist);
      int to = (r_ - dist + n_) % n_, from = (r_ + dist) % n_;
      // Blocks [a, a + cnt) mod n are at most two runs of the output buffer; the sender and the
      // receiver of one range cut it at the same place (the end of the buffer).
      reqs_.clear();
      auto runs = [&](int a, auto&& post) {
        int first = std::min(cnt, n_ - a);
        post(op_.out + static_cast<std::size_t>(a) * B, static_cast<std::size_t>(first) * B);
        if (first < cnt) post(op_.out, static_cast<std::size_t>(cnt - first) * B);
      };
      runs(from, [&](std::byte* p, std::size_t b) { reqs_.push_back(t_.irecv(from, p, b)); });
      runs(r_, [&](std::byte* p, std::size_t b) { reqs_.push_back(t_.isend(to, p, b)); });
      for (auto& q : reqs_) t_.wait(q, op_.deadline);
    }
  }

 private:
  // Recursive halving over the fold's p ranks (new rank f_.newRank): each step keeps half of the
  // blocks [lo, hi), sends the other half to the partner and adds what arrives to the kept half:
  // dst = src + received (src is dst after the first step). Block k starts at byte at(k).
  // Returns the [lo, hi) this rank holds reduced at the end.
  template <typename At>
  std::pair<int, int> recursiveHalving(const std::byte* src, std::byte* dst, At&& at) {
    const int me = f_.newRank;
    int lo = 0, hi = f_.p;
    for (int mask = f_.p / 2; mask >= 1; mask >>= 1) {
      int partner = f_.real(me ^ mask), mid = (lo + hi) / 2;
      bool upper = me & mask;
      int kLo = upper ? mid : lo, kHi = upper ? hi : mid, sLo = upper ? lo : mid, sHi = upper ? mid : hi;
      std::size_t keep = at(kLo);
      exchange(partner, src + at(sLo), at(sHi) - at(sLo), partner, op_.recvScratch, at(kHi) - keep,
               [&](std::size_t o, std::size_t b) { sum(dst + keep + o, src + keep + o, op_.recvScratch + o, b); });
      src = dst;
      lo = kLo;
      hi = kHi;
    }
    return {lo, hi};
  }

  template <typename OnPiece>
  void exchange(int sendPeer, const std::byte* sb, std::size_t sbytes, int recvPeer, std::byte* rb,
                std::size_t rbytes, OnPiece&& onPiece) {
    exchangePieces(t_, sendPeer, sb, sbytes, recvPeer, rb, rbytes, elt_, op_.deadline, reqs_, onPiece);
  }
  void sum(std::byte* dst, const std::byte* a, const std::byte* b, std::size_t bytes) {
    if (bytes) hostSum(dst, a, b, bytes / elt_, s_.dtype);
  }
  // Fold: the even rank of a pair sends `out` to the odd one, which adds it to its own.
  void foldIn(std::size_t B) {
    if (r_ >= 2 * f_.rem) return;
    if (f_.newRank < 0)
      exchange(r_ + 1, op_.out, B, -1, nullptr, 0, [](std::size_t, std::size_t) {});
    else
      exchange(-1, nullptr, 0, r_ - 1, op_.recvScratch, B,
               [&](std::size_t o, std::size_t b) { sum(op_.out + o, op_.out + o, op_.recvScratch + o, b); });
  }
  // Unfold: the odd rank sends the result back to the even one.
  void foldOut(std::byte* buf, std::size_t B) {
    if (r_ >= 2 * f_.rem) return;
    if (f_.newRank < 0)
      exchange(-1, nullptr, 0, r_ + 1, buf, B, [](std::size_t, std::size_t) {});
    else
      exchange(r_ - 1, buf, B, -1, nullptr, 0, [](std::size_t, std::size_t) {});
  }

  const HostOp& op_;  // the caller's, alive for the whole operation (as Hier's)
  Transport& t_;
  const CollShape& s_;
  int n_, r_;
  std::size_t elt_;
  Fold f_;
  std::vector<Request> reqs_;
};

}  // namespace

void allReduceRecursiveDoubling(const HostOp& op) { Algo(op).allReduceRecursiveDoubling(); }
void allReduceRabenseifner(const HostOp& op) { Algo(op).allReduceRabenseifner(); }
void allReduceRing(const HostOp& op) { Algo(op).allReduceRing(); }
void reduceScatterRecursiveHalving(const HostOp& op) { Algo(op).reduceScatterRecursiveHalving(); }
void allGatherBruck(const HostOp& op) { Algo(op).allGatherBruck(); }

}  // namespace fb::hostalgo

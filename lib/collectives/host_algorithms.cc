// Host collective algorithms by size over any Transport (see host_algorithms.h).
#include "collectives/host_algorithms.h"

#include <bit>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include "collectives/host_reduce.h"
#include "core/error.h"
#include "core/units.h"

namespace fb {
namespace {

// ---- choice ----

struct Override {
  std::optional<HostAlgo> all;  // a plain name
  std::optional<HostAlgo> per[4];
};

std::optional<HostAlgo> parseAlgo(std::string_view n) {
  if (n == "ring") return HostAlgo::kRing;
  if (n == "rd" || n == "recursive-doubling") return HostAlgo::kRecursiveDoubling;
  if (n == "rabenseifner" || n == "rab") return HostAlgo::kRabenseifner;
  if (n == "bruck") return HostAlgo::kBruck;
  if (n == "rh" || n == "recursive-halving") return HostAlgo::kRecursiveHalving;
  return std::nullopt;
}

bool implements(HostAlgo a, CollKind k) {
  switch (a) {
    case HostAlgo::kRing: return true;
    case HostAlgo::kRecursiveDoubling:
    case HostAlgo::kRabenseifner: return k == CollKind::kAllReduce;
    case HostAlgo::kBruck: return k == CollKind::kAllGather;
    case HostAlgo::kRecursiveHalving: return k == CollKind::kReduceScatter;
  }
  return false;
}

std::size_t parsePiece() { return sizeFromEnv("FB_HOST_PIECE", kHostPieceBytes, 4u << 10, 64u << 20, "256K"); }

Override parseOverride() {
  Override o;
  const char* e = std::getenv("FB_HOST_ALGO");
  if (!e || !*e) return o;
  std::string text = e;
  auto bad = [&](const std::string& why) {
    throw ConfigError("FB_HOST_ALGO='" + text + "': " + why +
                      " (names: ring, rd, rabenseifner, bruck, rh; e.g. 'ring' or 'allreduce=rd,allgather=ring')");
  };
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) bad("empty item");
    std::size_t eq = item.find('=');
    if (eq == std::string::npos) {
      auto a = parseAlgo(item);
      if (!a) bad("unknown algorithm '" + item + "'");
      o.all = a;
    } else {
      auto k = parseCollKind(item.substr(0, eq));
      auto a = parseAlgo(item.substr(eq + 1));
      if (!k) bad("unknown collective '" + item.substr(0, eq) + "'");
      if (!a) bad("unknown algorithm '" + item.substr(eq + 1) + "'");
      if (!implements(*a, *k))
        bad(std::string(hostAlgoName(*a)) + " does not implement " + std::string(collName(*k)));
      o.per[static_cast<int>(*k)] = a;
    }
    if (end == text.size()) break;
  }
  return o;
}

// Default switch points (S = the row's size in bytes): where each algorithm was fastest against
// the MPI reference on loopback TCP, np 2-4 (benchmarks/host_vs_mpi.sh with FB_HOST_ALGO; the
// figures are in the history of this file's commits):
//  * allreduce: recursive doubling up to 64 KiB, Rabenseifner up to 512 KiB, then the ring (the
//    non-power-of-two fold moves the whole vector twice more).
//  * allgather: Bruck below 256 KiB, and up to 8 MiB from 4 ranks; the ring above.
//  * reducescatter: recursive halving up to 512 KiB (2 MiB at a power-of-two count from 4 ranks,
//    no fold), the ring above.
HostAlgo defaultAlgo(CollKind k, std::size_t bytes, int n) {
  constexpr std::size_t KiB = 1024;
  switch (k) {
    case CollKind::kAllReduce:
      if (bytes <= 64 * KiB) return HostAlgo::kRecursiveDoubling;
      if (bytes <= 512 * KiB) return HostAlgo::kRabenseifner;
      return HostAlgo::kRing;
    case CollKind::kAllGather:
      return bytes < 256 * KiB || (n >= 4 && bytes <= 8192 * KiB) ? HostAlgo::kBruck : HostAlgo::kRing;
    case CollKind::kReduceScatter: {
      const bool noFold = n >= 4 && std::has_single_bit(static_cast<unsigned>(n));
      return bytes <= (noFold ? 2048 : 512) * KiB ? HostAlgo::kRecursiveHalving : HostAlgo::kRing;
    }
    case CollKind::kP2PRing: return HostAlgo::kRing;
  }
  return HostAlgo::kRing;
}

// ---- algorithms ----

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
      : t_(op.t), s_(op.s), in_(op.in), out_(op.out), tmp_(op.recvScratch), acc_(op.accScratch),
        dl_(op.deadline), n_(op.s.nRanks), r_(op.t.rank()), elt_(dtypeSize(op.s.dtype)), f_(makeFold(n_, r_)) {}

  void allReduceRecursiveDoubling() {
    const std::size_t B = s_.recvCount * elt_;
    if (in_ != out_ && B) std::memcpy(out_, in_, B);
    if (n_ == 1) return;
    foldIn(B);
    if (f_.newRank >= 0) {
      for (int mask = 1; mask < f_.p; mask <<= 1) {
        int partner = f_.real(f_.newRank ^ mask);
        // The send reads `out` until it completes: reduce only after both are done.
        exchange(partner, out_, B, partner, tmp_, B, [](std::size_t, std::size_t) {});
        sum(out_, out_, tmp_, B);
      }
    }
    foldOut(out_, B);
  }

  void allReduceRabenseifner() {
    const std::size_t C = s_.recvCount;
    const std::size_t B = C * elt_;
    if (in_ != out_ && B) std::memcpy(out_, in_, B);
    if (n_ == 1) return;
    foldIn(B);
    if (f_.newRank >= 0) {
      const int p = f_.p, me = f_.newRank;
      auto at = [&](int blk) { return C * static_cast<std::size_t>(blk) / static_cast<std::size_t>(p) * elt_; };
      auto [lo, hi] = recursiveHalving(out_, out_, at);
      for (int mask = 1; mask < p; mask <<= 1) {
        int partner = f_.real(me ^ mask), plo = lo ^ mask;
        exchange(partner, out_ + at(lo), at(lo + mask) - at(lo), partner, out_ + at(plo), at(plo + mask) - at(plo),
                 [](std::size_t, std::size_t) {});
        lo = std::min(lo, plo);
      }
    }
    foldOut(out_, B);
  }

  void reduceScatterRecursiveHalving() {
    const std::size_t c = s_.paramCount;
    const std::size_t B = c * elt_;       // one rank's block
    const std::size_t total = B * n_;     // the whole input
    if (n_ == 1) {
      if (in_ != out_ && B) std::memmove(out_, in_, B);
      return;
    }
    const std::byte* src = in_;
    if (f_.newRank < 0) {  // even folded rank: hand the whole input over, get its block back
      exchange(r_ + 1, in_, total, -1, nullptr, 0, [](std::size_t, std::size_t) {});
      exchange(-1, nullptr, 0, r_ + 1, out_, B, [](std::size_t, std::size_t) {});
      return;
    }
    if (r_ < 2 * f_.rem) {  // odd folded rank: acc = in + the even rank's input
      exchange(-1, nullptr, 0, r_ - 1, acc_, total,
               [&](std::size_t o, std::size_t b) { sum(acc_ + o, acc_ + o, in_ + o, b); });
      src = acc_;
    }
    // New rank k covers the blocks of old ranks 2k, 2k+1 (k < rem) or k + rem.
    auto at = [&](int k) {
      return static_cast<std::size_t>(k < f_.rem ? 2 * k : k + f_.rem) * B;
    };
    recursiveHalving(src, acc_, at);
    if (r_ < 2 * f_.rem)  // the even partner's block sits just below ours
      exchange(r_ - 1, acc_ + static_cast<std::size_t>(r_ - 1) * B, B, -1, nullptr, 0, [](std::size_t, std::size_t) {});
    if (B) std::memcpy(out_, acc_ + static_cast<std::size_t>(r_) * B, B);
  }

  void allGatherBruck() {
    const std::size_t B = s_.paramCount * elt_;
    std::byte* mine = out_ + static_cast<std::size_t>(r_) * B;
    if (in_ != mine && B) std::memcpy(mine, in_, B);
    for (int dist = 1; dist < n_; dist <<= 1) {
      int cnt = std::min(dist, n_ - dist);
      int to = (r_ - dist + n_) % n_, from = (r_ + dist) % n_;
      // Blocks [a, a + cnt) mod n are at most two runs of the output buffer; the sender and the
      // receiver of one range cut it at the same place (the end of the buffer).
      reqs_.clear();
      auto runs = [&](int a, auto&& post) {
        int first = std::min(cnt, n_ - a);
        post(out_ + static_cast<std::size_t>(a) * B, static_cast<std::size_t>(first) * B);
        if (first < cnt) post(out_, static_cast<std::size_t>(cnt - first) * B);
      };
      runs(from, [&](std::byte* p, std::size_t b) { reqs_.push_back(t_.irecv(from, p, b)); });
      runs(r_, [&](std::byte* p, std::size_t b) { reqs_.push_back(t_.isend(to, p, b)); });
      for (auto& q : reqs_) t_.wait(q, dl_);
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
      exchange(partner, src + at(sLo), at(sHi) - at(sLo), partner, tmp_, at(kHi) - keep,
               [&](std::size_t o, std::size_t b) { sum(dst + keep + o, src + keep + o, tmp_ + o, b); });
      src = dst;
      lo = kLo;
      hi = kHi;
    }
    return {lo, hi};
  }

  template <typename OnPiece>
  void exchange(int sendPeer, const std::byte* sb, std::size_t sbytes, int recvPeer, std::byte* rb,
                std::size_t rbytes, OnPiece&& onPiece) {
    exchangePieces(t_, sendPeer, sb, sbytes, recvPeer, rb, rbytes, elt_, dl_, reqs_, onPiece);
  }
  void sum(std::byte* dst, const std::byte* a, const std::byte* b, std::size_t bytes) {
    if (bytes) hostSum(dst, a, b, bytes / elt_, s_.dtype);
  }
  // Fold: the even rank of a pair sends `out` to the odd one, which adds it to its own.
  void foldIn(std::size_t B) {
    if (r_ >= 2 * f_.rem) return;
    if (f_.newRank < 0)
      exchange(r_ + 1, out_, B, -1, nullptr, 0, [](std::size_t, std::size_t) {});
    else
      exchange(-1, nullptr, 0, r_ - 1, tmp_, B,
               [&](std::size_t o, std::size_t b) { sum(out_ + o, out_ + o, tmp_ + o, b); });
  }
  // Unfold: the odd rank sends the result back to the even one.
  void foldOut(std::byte* buf, std::size_t B) {
    if (r_ >= 2 * f_.rem) return;
    if (f_.newRank < 0)
      exchange(-1, nullptr, 0, r_ + 1, buf, B, [](std::size_t, std::size_t) {});
    else
      exchange(r_ - 1, buf, B, -1, nullptr, 0, [](std::size_t, std::size_t) {});
  }

  Transport& t_;
  const CollShape& s_;
  const std::byte* in_;
  std::byte* out_;
  std::byte* tmp_;
  std::byte* acc_;
  Deadline dl_;
  int n_, r_;
  std::size_t elt_;
  Fold f_;
  std::vector<Request> reqs_;
};

}  // namespace

std::string_view hostAlgoName(HostAlgo a) {
  switch (a) {
    case HostAlgo::kRing: return "ring";
    case HostAlgo::kRecursiveDoubling: return "recursive-doubling";
    case HostAlgo::kRabenseifner: return "rabenseifner";
    case HostAlgo::kBruck: return "bruck";
    case HostAlgo::kRecursiveHalving: return "recursive-halving";
  }
  return "?";
}

void validateHostAlgoEnv() {
  parseOverride();
  parsePiece();
}

std::size_t hostPieceBytes() {
  static const std::size_t piece = parsePiece();
  return piece;
}

HostAlgo chooseHostAlgo(CollKind k, std::size_t bytes, int n) {
  Override o = parseOverride();
  if (auto a = o.per[static_cast<int>(k)]) return *a;
  if (o.all && implements(*o.all, k)) return *o.all;
  return defaultAlgo(k, bytes, n);
}

HostScratch hostAlgoScratch(HostAlgo a, const CollShape& s) {
  const std::size_t elt = dtypeSize(s.dtype);
  switch (a) {
    case HostAlgo::kRecursiveDoubling:
    case HostAlgo::kRabenseifner: return {s.recvCount * elt, 0};
    case HostAlgo::kRecursiveHalving: return {s.sendCount * elt, s.sendCount * elt};
    case HostAlgo::kRing:
    case HostAlgo::kBruck: return {};
  }
  return {};
}

void runHostAlgo(HostAlgo a, const HostOp& op) {
  Algo algo(op);
  switch (a) {
    case HostAlgo::kRecursiveDoubling: return algo.allReduceRecursiveDoubling();
    case HostAlgo::kRabenseifner: return algo.allReduceRabenseifner();
    case HostAlgo::kBruck: return algo.allGatherBruck();
    case HostAlgo::kRecursiveHalving: return algo.reduceScatterRecursiveHalving();
    case HostAlgo::kRing: break;
  }
  FB_THROW(Error, "runHostAlgo: ", hostAlgoName(a), " is run by the ring collective itself");
}

}  // namespace fb

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

// A forced choice; for kHier, innerSet says whether the name fixed the inner algorithm.
struct Forced {
  HostChoice c;
  bool innerSet = false;
};
struct Override {
  std::optional<Forced> all;  // a plain name
  std::optional<Forced> per[4];
};

std::optional<HostAlgo> parseFlat(std::string_view n) {
  if (n == "ring") return HostAlgo::kRing;
  if (n == "rd" || n == "recursive-doubling") return HostAlgo::kRecursiveDoubling;
  if (n == "rabenseifner" || n == "rab") return HostAlgo::kRabenseifner;
  if (n == "bruck") return HostAlgo::kBruck;
  if (n == "rh" || n == "recursive-halving") return HostAlgo::kRecursiveHalving;
  return std::nullopt;
}
std::optional<Forced> parseAlgo(std::string_view n) {
  if (n == "hier" || n == "hierarchical") return Forced{{HostAlgo::kHier, HostAlgo::kRing}, false};
  if (n.starts_with("hier-")) {
    auto inner = parseFlat(n.substr(5));
    if (!inner || (*inner != HostAlgo::kRing && *inner != HostAlgo::kRecursiveDoubling &&
                   *inner != HostAlgo::kRabenseifner))
      return std::nullopt;
    return Forced{{HostAlgo::kHier, *inner}, true};
  }
  if (auto a = parseFlat(n)) return Forced{{*a, HostAlgo::kRing}, false};
  return std::nullopt;
}

bool implementsFlat(HostAlgo a, CollKind k) {
  switch (a) {
    case HostAlgo::kRing: return true;
    case HostAlgo::kRecursiveDoubling:
    case HostAlgo::kRabenseifner: return k == CollKind::kAllReduce;
    case HostAlgo::kBruck: return k == CollKind::kAllGather;
    case HostAlgo::kRecursiveHalving: return k == CollKind::kReduceScatter;
    case HostAlgo::kHier: return k == CollKind::kAllReduce || k == CollKind::kAllGather || k == CollKind::kReduceScatter;
  }
  return false;
}
// The leaders' inner algorithm: ring for every collective, rd and Rabenseifner for AllReduce.
bool implements(const HostChoice& c, CollKind k) {
  if (!implementsFlat(c.algo, k)) return false;
  return c.algo != HostAlgo::kHier || c.inner == HostAlgo::kRing || k == CollKind::kAllReduce;
}

std::size_t parsePiece() { return sizeFromEnv("FB_HOST_PIECE", kHostPieceBytes, 4u << 10, 64u << 20, "256K"); }

Override parseOverride() {
  Override o;
  const char* e = std::getenv("FB_HOST_ALGO");
  if (!e || !*e) return o;
  std::string text = e;
  auto bad = [&](const std::string& why) {
    throw ConfigError("FB_HOST_ALGO='" + text + "': " + why +
                      " (names: ring, rd, rabenseifner, bruck, rh, hier, hier-ring, hier-rd, hier-rabenseifner;"
                      " e.g. 'ring' or 'allreduce=rd,allgather=ring')");
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
      if (!implements(a->c, *k))
        bad(hostChoiceName(a->c) + " does not implement " + std::string(collName(*k)));
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

  // Ring (reduce-scatter, then all-gather), step by step: the leaders' inner ring of kHier (ring.cc
  // runs the flat one, with forwarding). Chunk k = elements [k C/n, (k+1) C/n).
  void allReduceRing() {
    const std::size_t C = s_.recvCount;
    if (in_ != out_ && C) std::memcpy(out_, in_, C * elt_);
    if (n_ == 1) return;
    auto start = [&](int k) { return C * static_cast<std::size_t>((k % n_ + n_) % n_) / n_ * elt_; };
    auto len = [&](int k) {
      int m = (k % n_ + n_) % n_;
      return C * static_cast<std::size_t>(m + 1) / n_ * elt_ - start(m);
    };
    const int right = (r_ + 1) % n_, left = (r_ - 1 + n_) % n_;
    for (int st = 0; st < n_ - 1; ++st) {
      const int sk = r_ - st, rk = r_ - st - 1;
      std::byte* dst = out_ + start(rk);
      exchange(right, out_ + start(sk), len(sk), left, tmp_, len(rk),
               [&](std::size_t o, std::size_t b) { sum(dst + o, dst + o, tmp_ + o, b); });
    }
    for (int st = 0; st < n_ - 1; ++st) {
      const int sk = r_ + 1 - st, rk = r_ - st;
      exchange(right, out_ + start(sk), len(sk), left, out_ + start(rk), len(rk), [](std::size_t, std::size_t) {});
    }
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

// A group of ranks (the node leaders) as a Transport of its own: group rank i is members[i]. Messages
// keep the parent's per-pair order, so the group's traffic and the node phases around it match.
class GroupTransport final : public Transport {
 public:
  GroupTransport(Transport& parent, const std::vector<int>& members, int me)
      : Transport(me, static_cast<int>(members.size())), p_(parent), m_(members) {}
  std::string_view name() const override { return p_.name(); }
  PathInfo path() const override { return p_.path(); }
  Request isend(int peer, const void* buf, std::size_t bytes) override { return p_.isend(m_[peer], buf, bytes); }
  Request irecv(int peer, void* buf, std::size_t bytes) override { return p_.irecv(m_[peer], buf, bytes); }
  void wait(Request& req, Deadline deadline) override { p_.wait(req, deadline); }

 private:
  Transport& p_;
  const std::vector<int>& m_;
};

// Hierarchical (host_algorithms.h): intra-node phases through the leader, the inner algorithm
// between leaders. Any placement: nodes may hold different numbers of ranks, not contiguous.
class Hier {
 public:
  Hier(const HostOp& op, HostAlgo inner)
      : op_(op), t_(op.t), s_(op.s), inner_(inner), n_(op.s.nRanks), r_(op.t.rank()), elt_(dtypeSize(op.s.dtype)),
        nodes_(op.placement->members()) {
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      leaders_.push_back(nodes_[k].front());
      if (std::find(nodes_[k].begin(), nodes_[k].end(), r_) != nodes_[k].end()) myNode_ = static_cast<int>(k);
    }
    leader_ = nodes_[myNode_].front() == r_;
  }

  void allReduce() {
    const std::size_t B = s_.recvCount * elt_;
    if (op_.in != op_.out && B) std::memcpy(op_.out, op_.in, B);
    reduceToLeader(op_.out, B);
    if (leader_ && nodes_.size() > 1) {
      CollShape g = s_;
      g.nRanks = static_cast<int>(nodes_.size());
      GroupTransport gt(t_, leaders_, myNode_);
      HostOp inner{gt, g, op_.out, op_.out, op_.recvScratch, op_.accScratch, op_.deadline, nullptr};
      runFlat(inner_, inner);
    }
    broadcastFromLeader(op_.out, B);
  }

  void allGather() {
    const std::size_t B = s_.paramCount * elt_;
    std::byte* out = op_.out;
    std::byte* mine = out + static_cast<std::size_t>(r_) * B;
    if (op_.in != mine && B) std::memcpy(mine, op_.in, B);
    const auto& local = nodes_[myNode_];
    const int leader = local.front();
    // Gather the node's blocks into the leader's output, each in its place.
    reqs_.clear();
    if (leader_) {
      for (std::size_t i = 1; i < local.size(); ++i) postRecv(local[i], out + static_cast<std::size_t>(local[i]) * B, B);
    } else {
      postSend(leader, mine, B);
    }
    waitAll();
    if (leader_) {
      // Ring between leaders: step st sends node (me - st)'s blocks right, receives node (me - st - 1)'s.
      const int N = static_cast<int>(nodes_.size()), me = myNode_;
      const int right = leaders_[(me + 1) % N], left = leaders_[(me - 1 + N) % N];
      for (int st = 0; st < N - 1; ++st) {
        reqs_.clear();
        for (int q : nodes_[((me - st - 1) % N + N) % N]) postRecv(left, out + static_cast<std::size_t>(q) * B, B);
        for (int q : nodes_[((me - st) % N + N) % N]) postSend(right, out + static_cast<std::size_t>(q) * B, B);
        waitAll();
      }
    }
    broadcastFromLeader(out, B * static_cast<std::size_t>(n_));
  }

  void reduceScatter() {
    const std::size_t B = s_.paramCount * elt_;
    const std::size_t total = B * static_cast<std::size_t>(n_);
    std::byte* acc = op_.accScratch;
    const auto& local = nodes_[myNode_];
    if (!leader_) {
      reqs_.clear();
      postSend(local.front(), op_.in, total);
      postRecv(local.front(), op_.out, B);
      waitAll();
      return;
    }
    if (total) std::memcpy(acc, op_.in, total);
    reduceToLeader(acc, total);
    // Ring reduce-scatter between leaders over node blocks: step st sends the partial sums of node
    // (me - st - 1)'s blocks, receives node (me - st - 2)'s and adds them; node me's blocks end complete.
    const int N = static_cast<int>(nodes_.size()), me = myNode_;
    const int right = leaders_[(me + 1) % N], left = leaders_[(me - 1 + N) % N];
    for (int st = 0; st < N - 1; ++st) {
      reqs_.clear();
      const auto& rn = nodes_[((me - st - 2) % N + 2 * N) % N];
      const auto& sn = nodes_[((me - st - 1) % N + N) % N];
      for (std::size_t i = 0; i < rn.size(); ++i) postRecv(left, op_.recvScratch + i * B, B);
      for (int q : sn) postSend(right, acc + static_cast<std::size_t>(q) * B, B);
      waitAll();
      for (std::size_t i = 0; i < rn.size(); ++i) {
        std::byte* d = acc + static_cast<std::size_t>(rn[i]) * B;
        sum(d, d, op_.recvScratch + i * B, B);
      }
    }
    reqs_.clear();
    for (std::size_t i = 1; i < local.size(); ++i) postSend(local[i], acc + static_cast<std::size_t>(local[i]) * B, B);
    waitAll();
    if (B) std::memcpy(op_.out, acc + static_cast<std::size_t>(r_) * B, B);
  }

 private:
  static void runFlat(HostAlgo a, const HostOp& op);
  // Every other rank of the node sends `buf`; the leader adds each into its own, piece by piece.
  void reduceToLeader(std::byte* buf, std::size_t bytes) {
    const auto& local = nodes_[myNode_];
    if (!leader_) {
      exchangePieces(t_, local.front(), buf, bytes, -1, nullptr, 0, elt_, op_.deadline, reqs_,
                     [](std::size_t, std::size_t) {});
      return;
    }
    for (std::size_t i = 1; i < local.size(); ++i)
      exchangePieces(t_, -1, nullptr, 0, local[i], op_.recvScratch, bytes, elt_, op_.deadline, reqs_,
                     [&](std::size_t o, std::size_t b) { sum(buf + o, buf + o, op_.recvScratch + o, b); });
  }
  // The leader sends `buf` to every other rank of its node at once.
  void broadcastFromLeader(std::byte* buf, std::size_t bytes) {
    const auto& local = nodes_[myNode_];
    reqs_.clear();
    if (leader_) {
      for (std::size_t i = 1; i < local.size(); ++i)
        forEachPiece(bytes, elt_, [&](std::size_t o, std::size_t b) { reqs_.push_back(t_.isend(local[i], buf + o, b)); });
    } else {
      forEachPiece(bytes, elt_, [&](std::size_t o, std::size_t b) { reqs_.push_back(t_.irecv(local.front(), buf + o, b)); });
    }
    waitAll();
  }
  void postSend(int peer, const std::byte* p, std::size_t b) {
    forEachPiece(b, elt_, [&](std::size_t o, std::size_t l) { reqs_.push_back(t_.isend(peer, p + o, l)); });
  }
  void postRecv(int peer, std::byte* p, std::size_t b) {
    forEachPiece(b, elt_, [&](std::size_t o, std::size_t l) { reqs_.push_back(t_.irecv(peer, p + o, l)); });
  }
  void waitAll() {
    for (auto& q : reqs_) t_.wait(q, op_.deadline);
    reqs_.clear();
  }
  void sum(std::byte* dst, const std::byte* a, const std::byte* b, std::size_t bytes) {
    if (bytes) hostSum(dst, a, b, bytes / elt_, s_.dtype);
  }

  const HostOp& op_;
  Transport& t_;
  const CollShape& s_;
  HostAlgo inner_;
  int n_, r_;
  std::size_t elt_;
  std::vector<std::vector<int>> nodes_;
  std::vector<int> leaders_;
  int myNode_ = 0;
  bool leader_ = false;
  std::vector<Request> reqs_;
};

void Hier::runFlat(HostAlgo a, const HostOp& op) {
  Algo algo(op);
  switch (a) {
    case HostAlgo::kRecursiveDoubling: return algo.allReduceRecursiveDoubling();
    case HostAlgo::kRabenseifner: return algo.allReduceRabenseifner();
    case HostAlgo::kRing: return algo.allReduceRing();
    default: FB_THROW(Error, "hierarchical: no inner ", hostAlgoName(a), " for AllReduce");
  }
}

}  // namespace

std::string_view hostAlgoName(HostAlgo a) {
  switch (a) {
    case HostAlgo::kRing: return "ring";
    case HostAlgo::kRecursiveDoubling: return "recursive-doubling";
    case HostAlgo::kRabenseifner: return "rabenseifner";
    case HostAlgo::kBruck: return "bruck";
    case HostAlgo::kRecursiveHalving: return "recursive-halving";
    case HostAlgo::kHier: return "hierarchical";
  }
  return "?";
}

std::string hostChoiceName(const HostChoice& c) {
  if (c.algo != HostAlgo::kHier) return std::string(hostAlgoName(c.algo));
  return "hierarchical (" + std::string(hostAlgoName(c.inner)) + ")";
}

int HostPlacement::nodes() const {
  int m = 0;
  for (int v : nodeOf) m = std::max(m, v + 1);
  return std::max(m, 1);
}
std::vector<std::vector<int>> HostPlacement::members() const {
  std::vector<std::vector<int>> m(static_cast<std::size_t>(nodes()));
  for (int r = 0; r < nRanks; ++r) m[nodeOf.empty() ? 0 : static_cast<std::size_t>(nodeOf[r])].push_back(r);
  std::erase_if(m, [](const std::vector<int>& v) { return v.empty(); });
  return m;
}
int HostPlacement::maxPerNode() const {
  std::size_t g = 1;
  for (auto& v : members()) g = std::max(g, v.size());
  return static_cast<int>(g);
}
int HostPlacement::maxRingCrossings() const {
  if (nodeOf.empty()) return 0;
  std::vector<int> c(static_cast<std::size_t>(nodes()), 0);
  for (int r = 0; r < nRanks; ++r)
    if (nodeOf[r] != nodeOf[(r + 1) % nRanks]) ++c[nodeOf[r]];
  return *std::max_element(c.begin(), c.end());
}

std::vector<HostChoice> hostCandidates(CollKind k, const HostPlacement& p) {
  std::vector<HostChoice> v;
  for (HostAlgo a : {HostAlgo::kRing, HostAlgo::kRecursiveDoubling, HostAlgo::kRabenseifner, HostAlgo::kBruck,
                     HostAlgo::kRecursiveHalving})
    if (implementsFlat(a, k)) v.push_back({a, HostAlgo::kRing});
  if (p.nodes() > 1 && implementsFlat(HostAlgo::kHier, k)) {
    v.push_back({HostAlgo::kHier, HostAlgo::kRing});
    if (k == CollKind::kAllReduce) {
      v.push_back({HostAlgo::kHier, HostAlgo::kRecursiveDoubling});
      v.push_back({HostAlgo::kHier, HostAlgo::kRabenseifner});
    }
  }
  return v;
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
  auto flat = [](const std::optional<Forced>& f) { return f && f->c.algo != HostAlgo::kHier; };
  if (flat(o.per[static_cast<int>(k)])) return o.per[static_cast<int>(k)]->c.algo;
  if (flat(o.all) && implements(o.all->c, k)) return o.all->c.algo;
  return defaultAlgo(k, bytes, n);
}

HostChoice chooseHostAlgo(CollKind k, std::size_t bytes, const HostPlacement& p, const HostRanker* ranker) {
  if (k == CollKind::kP2PRing) return {};
  Override o = parseOverride();
  std::optional<Forced> f = o.per[static_cast<int>(k)];
  if (!f && o.all && implements(o.all->c, k)) f = o.all;
  // hier without an inner name: the ranker's best hierarchical schedule, else the ring.
  if (f && f->c.algo == HostAlgo::kHier && !f->innerSet && ranker && k == CollKind::kAllReduce) {
    if (auto c = (*ranker)(k, bytes, p); c && c->algo == HostAlgo::kHier) return *c;
  }
  if (f) return f->c;
  const bool oneNode = p.nodes() <= 1;
  if (oneNode) return {defaultAlgo(k, bytes, p.nRanks), HostAlgo::kRing};
  if (ranker)
    if (auto c = (*ranker)(k, bytes, p)) return *c;
  if (p.maxPerNode() > 1) return {HostAlgo::kHier, HostAlgo::kRing};
  return {defaultAlgo(k, bytes, p.nRanks), HostAlgo::kRing};
}

HostScratch hostAlgoScratch(const HostChoice& c, const CollShape& s, const HostPlacement& p) {
  const std::size_t elt = dtypeSize(s.dtype);
  switch (c.algo) {
    case HostAlgo::kRecursiveDoubling:
    case HostAlgo::kRabenseifner: return {s.recvCount * elt, 0};
    case HostAlgo::kRecursiveHalving: return {s.sendCount * elt, s.sendCount * elt};
    case HostAlgo::kHier:
      switch (s.kind) {
        case CollKind::kAllReduce: return {s.recvCount * elt, 0};
        case CollKind::kReduceScatter: return {s.sendCount * elt, s.sendCount * elt};
        default: return {};
      }
    case HostAlgo::kRing:
    case HostAlgo::kBruck: return {};
  }
  (void)p;
  return {};
}

void runHostAlgo(const HostChoice& c, const HostOp& op) {
  if (c.algo == HostAlgo::kHier) {
    HostPlacement one{{}, op.s.nRanks};
    HostOp withPlacement = op;
    if (!withPlacement.placement) withPlacement.placement = &one;
    Hier h(withPlacement, c.inner);
    switch (op.s.kind) {
      case CollKind::kAllReduce: return h.allReduce();
      case CollKind::kAllGather: return h.allGather();
      case CollKind::kReduceScatter: return h.reduceScatter();
      default: FB_THROW(Error, "runHostAlgo: no hierarchical ", collName(op.s.kind));
    }
  }
  Algo algo(op);
  switch (c.algo) {
    case HostAlgo::kRecursiveDoubling: return algo.allReduceRecursiveDoubling();
    case HostAlgo::kRabenseifner: return algo.allReduceRabenseifner();
    case HostAlgo::kBruck: return algo.allGatherBruck();
    case HostAlgo::kRecursiveHalving: return algo.reduceScatterRecursiveHalving();
    case HostAlgo::kRing:
    case HostAlgo::kHier: break;
  }
  FB_THROW(Error, "runHostAlgo: ", hostAlgoName(c.algo), " is run by the ring collective itself");
}

}  // namespace fb

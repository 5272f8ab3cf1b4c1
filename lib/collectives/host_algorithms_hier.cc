// The hierarchical host algorithm (host_algorithms.h): the node's ranks through their leader, the
// inner algorithm (host_algorithms_flat.cc) between the leaders over a GroupTransport.
#include <cstring>

#include "collectives/host_algorithms_parts.h"
#include "collectives/host_reduce.h"
#include "core/error.h"

namespace fb::hostalgo {
namespace {

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
  switch (a) {
    case HostAlgo::kRecursiveDoubling: return allReduceRecursiveDoubling(op);
    case HostAlgo::kRabenseifner: return allReduceRabenseifner(op);
    case HostAlgo::kRing: return allReduceRing(op);
    default: FB_THROW(Error, "hierarchical: no inner ", hostAlgoName(a), " for AllReduce");
  }
}

}  // namespace

void hierarchical(HostAlgo inner, const HostOp& op) {
  HostPlacement one{{}, op.s.nRanks};
  HostOp withPlacement = op;
  if (!withPlacement.placement) withPlacement.placement = &one;
  Hier h(withPlacement, inner);
  switch (op.s.kind) {
    case CollKind::kAllReduce: return h.allReduce();
    case CollKind::kAllGather: return h.allGather();
    case CollKind::kReduceScatter: return h.reduceScatter();
    default: FB_THROW(Error, "runHostAlgo: no hierarchical ", collName(op.s.kind));
  }
}

}  // namespace fb::hostalgo

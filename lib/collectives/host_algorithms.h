// Host collective algorithms chosen by size, written once over the Transport interface (tcp and
// verbs both run them; ring.cc owns the buffers and calls runHostAlgo for everything but the ring).
//
//   allreduce      recursive doubling (log2 p exchanges of the whole vector; small sizes),
//                  Rabenseifner (reduce-scatter by recursive halving, then all-gather by recursive
//                  doubling: 2 log2 p exchanges, 2(p-1)/p · S per rank; middle sizes), ring (large)
//   allgather      Bruck (ceil(log2 n) exchanges for any n; blocks addressed in place, no rotation),
//                  ring (large)
//   reducescatter  recursive halving (log2 p exchanges), ring (large)
//   p2pring        one exchange (send right, receive left): "ring"
//   hierarchical   (ranks on more than one node; any placement, uneven or interleaved): the ranks of
//                  a node reduce (AllReduce, ReduceScatter) or gather (AllGather) into the node's
//                  first rank, the leader; the leaders run the collective among themselves (inner
//                  algorithm: ring, or for AllReduce recursive doubling or Rabenseifner); each leader
//                  then broadcasts (AllReduce, AllGather) or scatters (ReduceScatter) inside its node.
//                  Only the leaders cross the node boundary: 2(N-1)/N S per node for AllReduce where a
//                  flat ring sends 2(n-1)/n S and Bruck/recursive doubling send from every rank at once.
// Rank counts that are not a power of two (recursive doubling/halving, Rabenseifner): with p the
// largest power of two <= n and rem = n - p, ranks 2i and 2i+1 (i < rem) first fold: the even
// one sends its vector to the odd one, which reduces and takes part as new rank i; ranks >= 2 rem
// take part as new rank r - rem. At the end each odd rank hands the even one its result.
//
// On one node the default switch points (defaultAlgo in host_algorithms.cc) come from measurements
// on loopback TCP (benchmarks/host_vs_mpi.sh). On more than one node a HostRanker (the cost model,
// lib/model/host_choice.h) ranks every candidate for the placement, when the caller gives one;
// without one, the hierarchical algorithm wherever a node holds more than one rank. FB_HOST_ALGO
// overrides both:
//   FB_HOST_ALGO=ring                       every collective uses the ring
//   FB_HOST_ALGO=allreduce=rd,allgather=ring  per collective; others keep the default
// Names: ring, rd (recursive-doubling), rabenseifner, bruck, rh (recursive-halving), hier (inner
// algorithm by the ranker, else ring), hier-ring, hier-rd, hier-rabenseifner. A plain name
// applies to the collectives it implements; `coll=name` for a collective it does not implement
// is a ConfigError.
#pragma once
#include <algorithm>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/spec.h"
#include "transport/transport.h"

namespace fb {

enum class HostAlgo { kRing, kRecursiveDoubling, kRabenseifner, kBruck, kRecursiveHalving, kHier };

std::string_view hostAlgoName(HostAlgo a);  // "ring", "recursive-doubling", ...
// The algorithm for one point on one node: FB_HOST_ALGO if it names a flat one for `k`, else by size
// and n. Throws ConfigError for a malformed FB_HOST_ALGO.
HostAlgo chooseHostAlgo(CollKind k, std::size_t bytes, int nRanks);

// Where the ranks run: nodeOf[r] = rank r's node (0..nodes-1); empty = one node.
struct HostPlacement {
  std::vector<int> nodeOf;
  int nRanks = 1;
  int nodes() const;
  int maxPerNode() const;
  std::vector<std::vector<int>> members() const;  // each node's ranks, ascending (first = leader)
  // Ranks r whose ring successor r+1 (mod n) is on another node, most on one node.
  int maxRingCrossings() const;
};
// An algorithm, and for kHier the one its leaders run among themselves.
struct HostChoice {
  HostAlgo algo = HostAlgo::kRing;
  HostAlgo inner = HostAlgo::kRing;
  bool operator==(const HostChoice&) const = default;
};
std::string hostChoiceName(const HostChoice& c);  // "ring", "hierarchical (ring)", ...
// The choice as the cost model's canonical algorithm name (lib/model's algoTable), for the row's
// typed "model_algo" detail: "ring", "recursive-doubling", ...; "hier" for any hierarchical choice
// (the inner algorithm is in hostChoiceName's text). tests/model checks each parses to its Algo.
std::string_view hostModelAlgo(const HostChoice& c);
// Candidates a ranker may choose from for `k` on `p` (flat ones, and hierarchical on > 1 node).
std::vector<HostChoice> hostCandidates(CollKind k, const HostPlacement& p);
// Ranks the candidates for one point (fastest first); nullopt = no opinion (use the defaults).
using HostRanker = std::function<std::optional<HostChoice>(CollKind, std::size_t bytes, const HostPlacement&)>;
// The choice for one point: FB_HOST_ALGO, else on one node chooseHostAlgo's table, else the ranker,
// else hierarchical (inner: ring) where some node holds more than one rank, else the table.
HostChoice chooseHostAlgo(CollKind k, std::size_t bytes, const HostPlacement& p, const HostRanker* ranker);
// Checks FB_HOST_ALGO and FB_HOST_PIECE without using them (option validation before any communication).
void validateHostAlgoEnv();

// Scratch an algorithm needs besides the send and receive buffers (bytes; registered by the caller).
struct HostScratch {
  std::size_t recv = 0;  // landing area for received partial sums
  std::size_t acc = 0;   // reducescatter: running sums of the whole input
};
HostScratch hostAlgoScratch(const HostChoice& a, const CollShape& s, const HostPlacement& p);

// One operation of `a` (not the ring: ring.cc runs that). `in` and `out` as the shape says
// (in-place: views into one buffer, nccl-tests offsets); scratch as hostAlgoScratch asked.
struct HostOp {
  Transport& t;
  const CollShape& s;
  const std::byte* in;
  std::byte* out;
  std::byte* recvScratch;
  std::byte* accScratch;
  Deadline deadline;
  const HostPlacement* placement = nullptr;  // kHier only
};
void runHostAlgo(const HostChoice& a, const HostOp& op);

// Send `sendBytes` to `sendPeer` while receiving `recvBytes` from `recvPeer` (either -1: none),
// cut into pieces of kHostPieceBytes (a multiple of `elt`), all posted at once; after each
// received piece onPiece(offsetBytes, bytes) runs (a reduction overlapping later pieces).
// `reqs` is reusable storage. Both sides cut the same way, so the pieces match.
constexpr std::size_t kHostPieceBytes = 1 << 20;
// The piece size in use: kHostPieceBytes, or FB_HOST_PIECE (a size, e.g. 256K; 4K..64M) for
// tuning experiments. Read once; a malformed value is a ConfigError.
std::size_t hostPieceBytes();
// How `bytes` are cut into pieces (hostPieceBytes(), a multiple of `elt`): f(offset, length) for
// each, at least once (a zero-byte message for an empty buffer). Both ends of a link cut with it,
// so their messages match.
inline std::size_t hostPieceFor(std::size_t elt) { return std::max<std::size_t>(elt, hostPieceBytes() / elt * elt); }
template <typename F>
void forEachPiece(std::size_t bytes, std::size_t elt, F&& f) {
  const std::size_t piece = hostPieceFor(elt);
  for (std::size_t off = 0;; off += piece) {
    f(off, std::min(piece, bytes - off));
    if (off + piece >= bytes) break;
  }
}
template <typename OnPiece>
void exchangePieces(Transport& t, int sendPeer, const std::byte* sendBuf, std::size_t sendBytes, int recvPeer,
                    std::byte* recvBuf, std::size_t recvBytes, std::size_t elt, Deadline deadline,
                    std::vector<Request>& reqs, OnPiece&& onPiece) {
  reqs.clear();
  std::size_t nRecv = 0;
  if (recvPeer >= 0)
    forEachPiece(recvBytes, elt, [&](std::size_t off, std::size_t len) {
      reqs.push_back(t.irecv(recvPeer, recvBuf + off, len));
      ++nRecv;
    });
  if (sendPeer >= 0)
    forEachPiece(sendBytes, elt, [&](std::size_t off, std::size_t len) {
      reqs.push_back(t.isend(sendPeer, sendBuf + off, len));
    });
  const std::size_t piece = hostPieceFor(elt);
  std::size_t off = 0;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    t.wait(reqs[i], deadline);
    if (i < nRecv) {
      std::size_t c = std::min(piece, recvBytes - off);
      if (c) onPiece(off, c);
      off += c;
    }
  }
}

}  // namespace fb

// What every host-memory implementation over a Transport (tcp, verbs) shares: the send and
// receive buffers laid out from the collective's shape (one buffer in place, at the
// descriptor's in-place offsets), their registration with the transport, GPU staging
// (--gpu-staging), the pattern fill and the element-by-element check, and a pipelined exchange
// with one peer. An algorithm (ring.cc; host_alltoall.cc, host_broadcast.cc ...) derives from
// HostCollective, says how much scratch it needs and runs one operation.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "collectives/collective.h"
#include "collectives/host_algorithms.h"

namespace fb {

// Page-aligned host memory, zeroed (pages touched before timing), never 0 bytes (registrable).
struct AlignedBuffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;      // asked for
  std::size_t allocated = 0;  // rounded up to pages
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();
  void resize(std::size_t n);
  std::byte* data() const { return static_cast<std::byte*>(ptr); }
};

class HostCollective : public Collective {
 public:
  HostCollective(std::shared_ptr<Transport> t, std::shared_ptr<DeviceStaging> staging);
  ~HostCollective() override;
  std::string impl() const override;
  PathInfo path() const override;
  void prepare(const CollShape& shape) override;
  double runBatch(int iters, Deadline deadline) override;
  std::int64_t check(int seed, Deadline deadline) override;

 protected:
  // Scratch the algorithm needs for `shape` (bytes): tmp_ and the two work_ slots.
  struct Scratch {
    std::size_t tmp = 0;
    std::size_t work = 0;  // each of work_[0], work_[1]
  };
  virtual Scratch scratchFor(const CollShape& shape) const = 0;
  // One operation from sendPtr_ into recvPtr_ (host memory).
  virtual void runOnce(Deadline deadline) = 0;

  // Send `sendElems` from sendBuf to `to` while receiving `recvElems` from `from` into recvBuf, in
  // pieces of hostPieceBytes() all posted at once (exchangePieces, host_algorithms.h); after each received piece, onPiece(offset, count)
  // runs (e.g. a reduction), so it overlaps the wire. to/from -1: that direction is idle.
  template <typename OnPiece>
  void pipelinedExchange(int to, const std::byte* sendBuf, std::size_t sendElems, int from, std::byte* recvBuf,
                         std::size_t recvElems, Deadline deadline, OnPiece&& onPiece);
  // The ring's case: send right, receive from the left.
  template <typename OnPiece>
  void pipelinedExchange(const std::byte* sendBuf, std::size_t sendElems, std::byte* recvBuf, std::size_t recvElems,
                         Deadline deadline, OnPiece&& onPiece) {
    pipelinedExchange(mod(t_->rank() + 1), sendBuf, sendElems, mod(t_->rank() - 1), recvBuf, recvElems, deadline,
                      std::forward<OnPiece>(onPiece));
  }

  std::byte* at(std::byte* base, std::size_t elem) const { return base + elem * elt_; }
  const std::byte* at(const std::byte* base, std::size_t elem) const { return base + elem * elt_; }
  int mod(int a) const { return ((a % s_.nRanks) + s_.nRanks) % s_.nRanks; }
  int rank() const { return t_->rank(); }


  std::shared_ptr<Transport> t_;
  CollShape s_{};
  std::size_t elt_ = 4;
  AlignedBuffer main_, aux_, tmp_, work_[2];
  std::byte* sendPtr_ = nullptr;
  std::byte* recvPtr_ = nullptr;

 private:
  void unregisterAll();
  void runStaged(Deadline deadline);
  void fillInput(int seed);

  std::vector<void*> registered_;
  std::vector<Request> reqs_;
  std::shared_ptr<DeviceStaging> stage_;
  std::byte* devSend_ = nullptr;
  std::byte* devRecv_ = nullptr;
  std::vector<void*> pinned_;
};

template <typename OnPiece>
void HostCollective::pipelinedExchange(int to, const std::byte* sendBuf, std::size_t sendElems, int from,
                                       std::byte* recvBuf, std::size_t recvElems, Deadline deadline,
                                       OnPiece&& onPiece) {
  exchangePieces(*t_, to, sendBuf, sendElems * elt_, from, recvBuf, recvElems * elt_, elt_, deadline, reqs_,
                 [&](std::size_t off, std::size_t bytes) { onPiece(off / elt_, bytes / elt_); });
}

std::unique_ptr<Collective> makeHostAllToAll(std::shared_ptr<Transport> transport,
                                             std::shared_ptr<DeviceStaging> staging);
std::unique_ptr<Collective> makeHostBroadcast(std::shared_ptr<Transport> transport,
                                              std::shared_ptr<DeviceStaging> staging);
// The ring algorithms of ring.cc (AllReduce, AllGather, ReduceScatter, P2P ring).
std::unique_ptr<Collective> makeHostRing(CollKind kind, std::shared_ptr<Transport> transport,
                                         std::shared_ptr<DeviceStaging> staging,
                                         std::shared_ptr<const HostRanker> ranker = nullptr);

}  // namespace fb

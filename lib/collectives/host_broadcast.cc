// Broadcast over a Transport (tcp, verbs), host memory: every rank gets the root's buffer.
// Pipelined chain in rank order starting at the root (root -> root+1 -> ... -> root-1): the
// buffer is cut into pieces; a rank forwards piece i to the next rank as soon as it has arrived,
// so all links carry data at once and each rank receives S once (busbw factor 1, nccl-tests).
// Out of place, the root also copies its send buffer into its receive buffer (as NCCL does).
#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/host_collective.h"

namespace fb {
namespace {

class HostBroadcast final : public HostCollective {
 public:
  using HostCollective::HostCollective;

 private:
  Scratch scratchFor(const CollShape&) const override { return {}; }

  void runOnce(Deadline deadline) override {
    const int n = s_.nRanks, r = rank(), root = s_.root;
    const std::size_t count = s_.paramCount;
    const int pos = mod(r - root);  // place in the chain
    const int next = pos + 1 < n ? mod(r + 1) : -1;
    const int prev = pos > 0 ? mod(r - 1) : -1;
    const std::size_t pieceElems = std::max<std::size_t>(1, hostPieceBytes() / elt_);
    const std::size_t pieces = std::max<std::size_t>(1, (count + pieceElems - 1) / pieceElems);
    auto piece = [&](std::size_t i) {
      std::size_t off = i * pieceElems;
      return std::make_pair(off, count > off ? std::min(pieceElems, count - off) : 0);
    };
    recv_.clear();
    send_.clear();
    if (prev >= 0)
      for (std::size_t i = 0; i < pieces; ++i) {
        auto [off, c] = piece(i);
        recv_.push_back(t_->irecv(prev, at(recvPtr_, off), c * elt_));
      }
    for (std::size_t i = 0; i < pieces; ++i) {
      auto [off, c] = piece(i);
      if (prev >= 0) t_->wait(recv_[i], deadline);
      if (next >= 0) send_.push_back(t_->isend(next, at(prev >= 0 ? recvPtr_ : sendPtr_, off), c * elt_));
    }
    // The root's own copy, while its pieces are on the wire.
    if (prev < 0 && sendPtr_ != recvPtr_ && count) std::memcpy(recvPtr_, sendPtr_, count * elt_);
    for (auto& s : send_) t_->wait(s, deadline);
  }

  std::vector<Request> recv_, send_;
};

}  // namespace

std::unique_ptr<Collective> makeHostBroadcast(std::shared_ptr<Transport> transport,
                                              std::shared_ptr<DeviceStaging> staging) {
  return std::make_unique<HostBroadcast>(std::move(transport), std::move(staging));
}

}  // namespace fb

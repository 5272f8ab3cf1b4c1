// AllToAll over a Transport (tcp, verbs), host memory: block b of rank r's send buffer goes to
// rank b and lands in block r of its receive buffer (blocks of paramCount elements).
// Pairwise schedule, n-1 steps: in step s rank r sends block r+s to rank r+s and receives block
// r-s from rank r-s, in pipelined pieces; its own block is a local copy. Each rank sends and
// receives (n-1)/n · S, the busbw factor. Out-of-place only (descriptor).
#include <cstring>

#include "collectives/host_collective.h"

namespace fb {
namespace {

class HostAllToAll final : public HostCollective {
 public:
  using HostCollective::HostCollective;

 private:
  Scratch scratchFor(const CollShape&) const override { return {}; }

  void runOnce(Deadline deadline) override {
    const int n = s_.nRanks, r = rank();
    const std::size_t c = s_.paramCount;
    const auto block = [&](int b) { return static_cast<std::size_t>(b) * c; };
    if (c) std::memcpy(at(recvPtr_, block(r)), at(sendPtr_, block(r)), c * elt_);
    for (int s = 1; s < n; ++s) {
      const int to = mod(r + s), from = mod(r - s);
      pipelinedExchange(to, at(sendPtr_, block(to)), c, from, at(recvPtr_, block(from)), c, deadline,
                        [](std::size_t, std::size_t) {});
    }
  }
};

}  // namespace

std::unique_ptr<Collective> makeHostAllToAll(std::shared_ptr<Transport> transport,
                                             std::shared_ptr<DeviceStaging> staging) {
  return std::make_unique<HostAllToAll>(std::move(transport), std::move(staging));
}

}  // namespace fb

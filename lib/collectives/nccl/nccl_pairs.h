// --accept's pair test over NCCL: ncclSend / ncclRecv between the two ranks of a pair, on one
// communicator over every rank, on the training path (nothing forced) or the --path given, with
// device buffers; every wait polls NCCL's asynchronous errors against a deadline. No CUDA or NCCL
// types here: lib/app includes it.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"
#include "collectives/collective.h"
#include "core/units.h"

namespace fb::nccl {

class PairChannel {
 public:
  virtual ~PairChannel() = default;
  // Both directions at once, `bytes` each way (at most the channel's maxBytes).
  virtual void exchange(int peer, std::size_t bytes, Deadline d) = 0;
  virtual void send(int peer, std::size_t bytes, Deadline d) = 0;
  virtual void recv(int peer, std::size_t bytes, Deadline d) = 0;
  virtual std::string label() const = 0;
};

// Collective over bs (every rank calls it). UnavailableError without a CUDA device.
std::unique_ptr<PairChannel> openPairChannel(Bootstrap& bs, const CollectiveOptions& opts, std::size_t maxBytes);

}  // namespace fb::nccl

// SelfMessages: one rank's messages to itself, for the tcp and verbs transports (header-only,
// as progress.h: no library between them).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>

namespace fb {

// Messages a rank sends to itself, as the Transport contract has them: the k-th isend to self
// fills the k-th irecv from self, sizes must agree. No network is involved: match() copies.
// Each transport keeps its own request bookkeeping under `id`.
class SelfMessages {
 public:
  void postSend(std::uint64_t id, const void* buf, std::size_t bytes) {
    sends_.push_back({id, const_cast<void*>(buf), bytes});
  }
  void postRecv(std::uint64_t id, void* buf, std::size_t bytes) { recvs_.push_back({id, buf, bytes}); }
  // Pairs what is posted, in posting order, copying the data, and calls
  // done(sendId, recvId, error): error is "" or the size mismatch (then nothing is copied).
  template <class Done>
  void match(std::string_view transport, int rank, Done&& done) {
    while (!sends_.empty() && !recvs_.empty()) {
      Msg s = sends_.front(), r = recvs_.front();
      sends_.pop_front();
      recvs_.pop_front();
      std::string error;
      if (s.bytes != r.bytes)
        error = std::string(transport) + ": size mismatch: isend of " + std::to_string(s.bytes) +
                " bytes to this rank (" + std::to_string(rank) + ") met an irecv of " + std::to_string(r.bytes) + " bytes";
      else if (s.bytes)
        std::memmove(r.buf, s.buf, s.bytes);
      done(s.id, r.id, error);
    }
  }

 private:
  struct Msg {
    std::uint64_t id;
    void* buf;
    std::size_t bytes;
  };
  std::deque<Msg> sends_, recvs_;
};

}  // namespace fb

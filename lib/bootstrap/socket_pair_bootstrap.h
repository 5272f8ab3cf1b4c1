// Two processes meeting over one TCP connection, the way perftest's server and client exchange
// their QP data: `fabricbench-verbs --server` listens, `fabricbench-verbs --peer HOST` connects.
// The client is rank 0 (it drives and prints, like perftest's client), the server rank 1.
// No MPI runtime runs next to the measured loop in this mode (no mpirun/orted, no PMIx threads).
// Every wait is bounded by timeout(): accept, connect (retried while the server is not up yet),
// and each exchange; a closed connection is an IoError naming the peer.
#pragma once
#include <string>

#include "bootstrap/bootstrap.h"

namespace fb::verbs {

class SocketPairBootstrap : public Bootstrap {
 public:
  // host empty: listen on `port` (any address) and accept one peer; else connect to host:port.
  SocketPairBootstrap(const std::string& host, int port, std::chrono::milliseconds timeout);
  ~SocketPairBootstrap() override;
  SocketPairBootstrap(const SocketPairBootstrap&) = delete;
  SocketPairBootstrap& operator=(const SocketPairBootstrap&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return 2; }
  std::string hostname() const override { return host_; }
  void barrier() override;
  std::vector<std::vector<std::byte>> allGather(std::span<const std::byte> mine) override;
  double allReduceMax(double v) override;
  std::int64_t allReduceSum(std::int64_t v) override;
  [[noreturn]] void abortJob(int code) override;

 private:
  void sendAll(const void* p, std::size_t n);
  void recvAll(void* p, std::size_t n);
  int fd_ = -1;
  int rank_ = 0;
  std::string host_;
};

}  // namespace fb::verbs

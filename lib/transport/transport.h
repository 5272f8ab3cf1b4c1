// Data plane between ranks (gloo's Pair + UnboundBuffer, merged). One Transport per process
// and communicator-sized group; created collectively by its backend's createTransport() (every
// rank calls it at the same point, it exchanges addresses through the Bootstrap and connects;
// fabricbench reaches it through its backend table entry, lib/app/backends.h openTransport).
//
// Naming: in the code a "transport" is this class, a host data plane that the ring collectives
// (lib/collectives/host_*.cc) drive: tcp/ and verbs/ only. The GPU helpers that the cuda and nccl
// collectives use (peer memory, NCCL communicators) move no data through this interface and live
// in lib/gpu/{cuda,nccl} (targets fb_gpu_cuda, fb_gpu_nccl). fabricbench's --transport flag keeps
// its nccl-tests-like meaning, "which implementation produces the rows" (lib/app/backends.h).
//
// Contract:
//  * Memory passed to isend/irecv must lie inside a region given to registerMemory() (a no-op
//    for tcp; an MR for verbs). Host memory only: the GPU rows stage through host memory
//    (--gpu-staging); GPUDirect RDMA is detected and refused with its reason (verbs).
//  * Messages between one (sender, receiver) pair are matched in posting order: the k-th isend
//    from A to B fills the k-th irecv on B posted for A. Sizes must agree (receiver's n == sender's n);
//    a mismatch is an fb::Error, never silent truncation.
//  * wait() drives progress for all outstanding requests of this transport and returns when the
//    given request is done; it throws IoError (naming the peer) when a peer is lost, TimeoutError
//    at the deadline. After an error the transport is dead.
//  * Only one thread uses a Transport at a time.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/units.h"

namespace fb {

struct Request {
  std::uint64_t id = 0;  // 0 = empty / already completed
  explicit operator bool() const { return id != 0; }
};

// How this transport reaches its peers, for the "path" column and run.json.
struct PathInfo {
  std::string label;                                       // short, e.g. "tcp lo 127.0.0.1"
  std::vector<std::pair<std::string, std::string>> details;  // key/value: interface, speed, GID...
  // The link's nominal rate (GB/s, busbw units) for the "% of nominal" column; -1 = none.
  double nominalGBps = -1;
  // Where a token bucket (tc tbf) shapes the link below its own rate: that rate (GB/s); bursts
  // within the bucket pass at it. -1 otherwise. The host algorithms' cost model reads it.
  double lineGBps = -1;
  // Sets nominalGBps and shows it, with its basis, among the details (nominal_GBps, nominal_basis).
  void setNominal(double gbps, const std::string& basis);
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string_view name() const = 0;  // "tcp", "verbs", ...
  virtual PathInfo path() const = 0;
  virtual void registerMemory(void* /*ptr*/, std::size_t /*bytes*/) {}  // host memory
  virtual void deregisterMemory(void* /*ptr*/) {}

  virtual Request isend(int peer, const void* buf, std::size_t bytes) = 0;
  virtual Request irecv(int peer, void* buf, std::size_t bytes) = 0;
  virtual void wait(Request& req, Deadline deadline) = 0;

  // Send `sendBytes` to rank+1 while receiving `recvBytes` from rank-1 (full duplex).
  // The default posts both and waits for both; a backend may do better.
  virtual void ringExchange(const void* sendBuf, std::size_t sendBytes, void* recvBuf,
                            std::size_t recvBytes, Deadline deadline);
  // Same, with explicit peers (either may be -1 for "none").
  void sendRecv(int sendPeer, const void* sendBuf, std::size_t sendBytes, int recvPeer, void* recvBuf,
                std::size_t recvBytes, Deadline deadline);

  // Throws IoError naming a peer this transport knows to be gone (its connection closed), without
  // consuming data; a no-op where the backend cannot tell. Registered as a Bootstrap liveness
  // probe, so a rank waiting in a barrier learns at once that a node died.
  virtual void checkPeersAlive() {}
  // This rank has failed and the job is ending: close every connection now, so peers blocked on
  // this rank see it at once (and join the failure verdict) instead of at their deadline.
  virtual void abandon() {}

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The node of every rank (0.., numbered in order of first appearance), for node-aware host
  // algorithms; empty = all on one node. openTransport (lib/app) sets it (nodePlacement).
  const std::vector<int>& nodeOf() const { return nodeOf_; }
  void setNodeOf(std::vector<int> v) { nodeOf_ = std::move(v); }

 protected:
  Transport(int rank, int size) : rank_(rank), size_(size) {}
  int rank_, size_;
  std::vector<int> nodeOf_;
};

// Every rank's node, from the bootstrap's hostnames (collective), or from FB_HOST_NODES: one label
// per rank, comma-separated ("0,0,1,1,2"; tests and experiments simulate a placement on one host).
// Throws ConfigError when FB_HOST_NODES does not name exactly one node per rank.
std::vector<int> nodePlacement(Bootstrap& bs);
// FB_HOST_NODES alone: checks it for n ranks (nullopt when unset).
std::optional<std::vector<int>> nodesFromEnv(int nRanks);

// Options any backend may read; each backend ignores what is not its own.
struct TransportOptions {
  std::string tcpInterface;      // --tcp-if: interface name or IPv4 address; "" = hostname's address
  std::string verbsDevice;       // --ib-dev: e.g. "mlx5_0", "rxe0"; "" = first active port
  int verbsPort = 0;             // 0 = first active port
  int gidIndex = -1;             // --gid-index; -1 = choose a RoCEv2 GID bound to a routable IPv4
  bool gpuDirect = false;        // --gpu-memory for verbs
  std::chrono::milliseconds connectTimeout{30000};
};

// Availability of a backend in this build and on this machine, for --list.
struct BackendStatus {
  std::string name;
  bool built = false;
  bool usable = false;
  std::string reason;  // why not usable, or what it found
};

}  // namespace fb

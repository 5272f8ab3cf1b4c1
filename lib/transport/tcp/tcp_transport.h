// Raw TCP sockets baseline: one full-duplex connection per peer pair, TCP_NODELAY, socket
// buffers sized for bandwidth, bound to one chosen interface, peers authenticated by a per-job
// token exchanged through the Bootstrap (a stranger that connects is dropped).
//
// Interface: TransportOptions::tcpInterface = an interface name ("lo", "eth0") or one of this
// host's IPv4 addresses; "" = the address Bootstrap::hostname() resolves to when it is a
// non-loopback address of an up interface, else the first non-loopback up interface, else
// 127.0.0.1. Each rank listens on that address only (ephemeral port).
//
// Set-up (collective): listen → rank 0 draws a 16-byte token, broadcast → all-gather
// (ip, port, host) → rank r connects to every rank below it and sends a hello
// {magic, rank, token}; the accepting rank checks token and rank (strangers, wrong tokens,
// unexpected or duplicate ranks are closed and it keeps waiting) and answers with its own
// hello, which the connecting rank checks the same way. Everything under connectTimeout. Each
// accepted connection must say hello within 3 s, and at most 64 wait at once (the oldest goes
// first), so idle strangers never take a peer's place.
//
// Wire format per message: a 16-byte header {magic, message index, payload bytes} then the
// payload. The receiver checks the header against what it posted (a size mismatch is an
// fb::Error). Sends and receives go straight between the user's buffer and the socket
// (sendmsg/readv with several queued messages per call; no copies).
//
// Environment: FB_TCP_SOCKBUF = bytes requested for SO_SNDBUF/SO_RCVBUF (default 1M;
// 0 = leave the kernel's autotuning alone). It is applied only when net.core.{w,r}mem_max
// allow that much, else autotuning is kept (path() reports what the kernel granted).
// FB_TCP_CHUNK = bytes one sendmsg/readv moves before the other direction (and the other peers)
// get a turn (default 1M, 4K..64M): sending and receiving advance together.
// FB_PROGRESS=auto|spin|yield|block (transport/progress.h): wait() busy-polls 200 us before sleeping in
// poll() only while the node's ranks have a core each; oversubscribed, it polls and yields the
// core between polls for up to 1 ms, then sleeps.
#pragma once
#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/tcp/socket.h"
#include "transport/transport.h"

namespace fb::tcp {

// Collective: every rank calls it at the same point.
std::unique_ptr<Transport> createTransport(Bootstrap& bootstrap, const TransportOptions& options);
BackendStatus probe(const TransportOptions& options);
// Bad-input checks of the tcp settings without opening anything (--tcp-if, FB_TCP_SOCKBUF):
// throws ConfigError. fabricbench calls it on every rank before the first exchange.
void checkOptions(const TransportOptions& options, const std::string& hostname);
std::size_t sockBufFromEnv();  // FB_TCP_SOCKBUF in bytes (default 1M); ConfigError when malformed
std::size_t chunkFromEnv();    // FB_TCP_CHUNK in bytes (default 1M, 4K..64M); ConfigError otherwise
// FB_TCP_CC: the sockets' congestion control. name "" = leave the host's default; `how` says why
// (for path()). Unset: cubic where the kernel has it; "system": the host's
// default; another name: that one (ConfigError if the kernel lacks it or refuses it).
struct CongestionChoice {
  std::string name;
  std::string how;
};
CongestionChoice congestionFromEnv();

// ---- For tests (tests/transport): a look inside the set-up. ----
constexpr std::size_t kTokenBytes = 16;
using Token = std::array<std::byte, kTokenBytes>;
struct SetupInfo {
  int rank = 0;
  std::vector<Endpoint> endpoints;  // every rank's listening address, by rank
  Token token{};
};
// Called on every rank after the addresses are exchanged and before any rank connects; it may
// use the bootstrap collectively (all ranks get the call).
using SetupHook = std::function<void(Bootstrap&, const SetupInfo&)>;
std::unique_ptr<Transport> createTransport(Bootstrap& bootstrap, const TransportOptions& options,
                                           const SetupHook& hook);
// The hello a connecting `rank` sends (and an accepting rank answers with).
std::vector<std::byte> helloMessage(int rank, const Token& token);

}  // namespace fb::tcp

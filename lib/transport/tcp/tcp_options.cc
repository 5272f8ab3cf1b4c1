// The tcp transport's tuning from the environment: socket buffer sizes (FB_TCP_SOCKBUF), the
// chunk per direction (FB_TCP_CHUNK), congestion control (FB_TCP_CC); checkOptions validates them.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/units.h"
#include "transport/tcp/tcp_transport.h"

namespace fb::tcp {
namespace {

// SO_SNDBUF/SO_RCVBUF requested (the kernel doubles it): a window for a 100 Gbit/s link up to
// ~80 us round trip; larger buffers were slower with ranks sharing cores (benchmarks/host_vs_mpi.sh).
constexpr std::size_t kDefaultSockBuf = 1u << 20;
// One sendmsg/readv moves at most this much before the other direction gets its turn, so both
// directions advance together; 1 MiB was ahead of 256/512 KiB and level with 2 MiB (host_vs_mpi.sh).
constexpr std::size_t kDefaultChunk = 1u << 20;
// Congestion control on the transport's sockets unless FB_TCP_CC says otherwise: Linux's own
// default, so rows compare across hosts whatever each one's default is (under bbr the loopback
// exchange slowed to 1.3-2 x Open MPI's time after its first seconds).
constexpr const char* kDefaultCongestion = "cubic";

}  // namespace

std::size_t sockBufFromEnv() {
  const char* e = std::getenv("FB_TCP_SOCKBUF");
  if (!e || !*e) return kDefaultSockBuf;
  try {
    return parseSize(e);
  } catch (const Error&) {
    FB_THROW(ConfigError, "FB_TCP_SOCKBUF='", e, "' is not a size (e.g. 4M, 0 = kernel autotuning)");
  }
}

std::size_t chunkFromEnv() { return sizeFromEnv("FB_TCP_CHUNK", kDefaultChunk, 4u << 10, 64u << 20, "1M"); }

CongestionChoice congestionFromEnv() {
  const std::string sys = systemCongestion();
  const char* e = std::getenv("FB_TCP_CC");
  const std::string want = e ? e : "";
  auto avail = availableCongestion();
  std::string list;
  for (const auto& a : avail) list += (list.empty() ? "" : " ") + a;
  // Can this process put `name` on a socket? (Unprivileged processes only get the kernel's
  // allowed list.)
  auto trySet = [](const std::string& name) {
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    return s.valid() ? setCongestion(s.fd(), name) : std::string("socket(): ") + detail::errnoText(errno);
  };
  if (want == "system") return {"", "the host's default, FB_TCP_CC=system"};
  if (want.empty()) {
    if (std::find(avail.begin(), avail.end(), kDefaultCongestion) == avail.end())
      return {"", std::string("the host's default; this kernel has no ") + kDefaultCongestion};
    if (auto err = trySet(kDefaultCongestion); !err.empty())
      return {"", std::string("the host's default; ") + kDefaultCongestion + " refused: " + err};
    return {kDefaultCongestion, "fabricbench's default; the host's is " + sys + ", kept with FB_TCP_CC=system"};
  }
  if (std::find(avail.begin(), avail.end(), want) == avail.end())
    FB_THROW(ConfigError, "FB_TCP_CC='", want, "' is not a congestion control this kernel offers (", list,
             "; or 'system' for the host's default, ", sys, ")");
  if (auto err = trySet(want); !err.empty())
    FB_THROW(ConfigError, "FB_TCP_CC='", want, "' cannot be set on a socket: ", err,
             " (an unprivileged process may use only net.ipv4.tcp_allowed_congestion_control)");
  return {want, "FB_TCP_CC; the host's default is " + sys};
}

void checkOptions(const TransportOptions& options, const std::string& hostname) {
  sockBufFromEnv();
  chunkFromEnv();
  congestionFromEnv();
  std::string how;
  chooseInterface(options.tcpInterface, hostname, &how);
}

}  // namespace fb::tcp

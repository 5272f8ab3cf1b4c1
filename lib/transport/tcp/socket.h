// Small POSIX socket helpers for the tcp backend: an owning fd, IPv4 endpoints, local
// interface discovery (getifaddrs) and the choice of the interface a rank listens on.
#pragma once
#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fb::tcp {

// Owns one file descriptor; closes it on destruction.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { reset(); }

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

// An IPv4 address + port in host-readable form and as sockaddr.
struct Endpoint {
  std::uint32_t addr = 0;  // network byte order
  std::uint16_t port = 0;  // host byte order
  sockaddr_in sockaddr() const;
  std::string ip() const;
  std::string str() const;  // "10.0.0.2:41234"
};

// One IPv4 address of a local interface.
struct Interface {
  std::string name;        // "eth0"
  std::uint32_t addr = 0;  // network byte order
  bool up = false;
  bool loopback = false;
  std::string ip() const;
};

// Every IPv4 address of every local interface (getifaddrs), in the kernel's order.
std::vector<Interface> localInterfaces();
// "lo 127.0.0.1, eth0 10.0.0.2" (plus names of interfaces without an IPv4 address).
std::string describeInterfaces();

// Picks the address to listen on (see tcp_transport.h): `spec` = interface name or IPv4
// address; "" = the IPv4 address `hostname` resolves to when it is a non-loopback address
// of an up local interface, else the first non-loopback up interface, else 127.0.0.1.
// Throws ConfigError for an unknown interface/address, naming it and listing what exists.
// `how` receives one phrase saying why this interface was chosen.
Interface chooseInterface(const std::string& spec, const std::string& hostname, std::string* how = nullptr);

// Socket setup.
void setNonBlocking(int fd);
void setNoDelay(int fd);
// Requests `bytes` for SO_SNDBUF and SO_RCVBUF when the kernel allows that much
// (net.core.{w,r}mem_max); otherwise leaves the kernel's autotuning alone for that direction.
// Returns "" when both were set, else a phrase saying which were left to autotuning and why.
std::string setBufferSizes(int fd, std::size_t bytes);
std::pair<int, int> grantedBufferSizes(int fd);
// What the kernel holds for a connection, for time-out messages: bytes readable (SIOCINQ), bytes
// not yet acknowledged by the peer (SIOCOUTQ), and from TCP_INFO the zero-window probes (the peer's
// window is full), retransmissions, back-off, rto and time since data last moved. "" if unreadable.
std::string kernelState(int fd);
// TCP congestion control (TCP_CONGESTION). setCongestion returns "" or the errno text;
// congestionOf reads back what the socket uses; availableCongestion lists what the kernel offers
// (net.ipv4.tcp_available_congestion_control), systemCongestion its default for new sockets.
std::string setCongestion(int fd, const std::string& name);
std::string congestionOf(int fd);
std::vector<std::string> availableCongestion();
std::string systemCongestion();  // {SO_SNDBUF, SO_RCVBUF} as the kernel reports

// First line of a small file (sysfs/procfs), "" when unreadable.
std::string readFirstLine(const std::string& path);

// Fills `n` bytes of cryptographically random data (getrandom / /dev/urandom).
void randomBytes(void* out, std::size_t n);

}  // namespace fb::tcp

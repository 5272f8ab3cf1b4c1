// Shared pieces of the transport conformance suite: which transport is under test, a
// registered host buffer, and a byte pattern that depends on (sender, receiver, message, offset).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/transport.h"

namespace fb::test {

// Set by main() from --transport / FB_TRANSPORT (default "tcp").
extern std::string g_transport;
extern TransportOptions g_options;

// openTransport(g_transport, ...) (the backend table, lib/app/backends.h) with the suite's options.
std::unique_ptr<Transport> connectAll(Bootstrap& bs);

// A host buffer registered with one transport for its lifetime.
class Buffer {
 public:
  Buffer(Transport& t, std::size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::byte* data() { return data_.get(); }
  std::size_t size() const { return bytes_; }

 private:
  Transport& t_;
  std::size_t bytes_;
  std::unique_ptr<std::byte[]> data_;
};

// Byte i of message `msg` from `sender` to `receiver`: a hash of all four, so a byte delivered
// to the wrong offset, message, or rank is caught.
void fillPattern(std::byte* buf, std::size_t n, int sender, int receiver, std::uint64_t msg);
// Number of bytes of buf that differ from the pattern.
std::size_t countWrong(const std::byte* buf, std::size_t n, int sender, int receiver, std::uint64_t msg);

// Seconds since an arbitrary epoch (steady clock).
double now();

}  // namespace fb::test

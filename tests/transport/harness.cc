#include "harness.h"

#include "app/backends.h"

#include <bit>
#include <chrono>
#include <cstring>

namespace fb::test {

static_assert(std::endian::native == std::endian::little, "countWrong assumes little-endian");

std::string g_transport = "tcp";
TransportOptions g_options;

std::unique_ptr<Transport> connectAll(Bootstrap& bs) { return openTransport(g_transport, bs, g_options); }

Buffer::Buffer(Transport& t, std::size_t bytes)
    : t_(t), bytes_(bytes), data_(new std::byte[bytes ? bytes : 1]) {
  // Poison so an unwritten receive buffer never matches a pattern by accident.
  std::memset(data_.get(), 0xA5, bytes ? bytes : 1);
  t_.registerMemory(data_.get(), bytes ? bytes : 1);
}

Buffer::~Buffer() { t_.deregisterMemory(data_.get()); }

namespace {
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}
std::uint64_t seedOf(int s, int r, std::uint64_t msg) {
  return mix((static_cast<std::uint64_t>(s) << 48) ^ (static_cast<std::uint64_t>(r) << 32) ^ (msg * 0x9E3779B97F4A7C15ULL));
}
// Word w of the pattern: cheap but offset-sensitive.
inline std::uint64_t word(std::uint64_t seed, std::uint64_t w) {
  std::uint64_t x = (seed ^ (w * 0x9E3779B97F4A7C15ULL)) * 0xff51afd7ed558ccdULL;
  return x ^ (x >> 29);
}
}  // namespace

void fillPattern(std::byte* buf, std::size_t n, int sender, int receiver, std::uint64_t msg) {
  std::uint64_t seed = seedOf(sender, receiver, msg);
  std::size_t words = n / 8;
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t v = word(seed, w);
    std::memcpy(buf + 8 * w, &v, 8);
  }
  if (n % 8) {
    std::uint64_t v = word(seed, words);
    std::memcpy(buf + 8 * words, &v, n % 8);
  }
}

std::size_t countWrong(const std::byte* buf, std::size_t n, int sender, int receiver, std::uint64_t msg) {
  std::uint64_t seed = seedOf(sender, receiver, msg);
  std::size_t wrong = 0;
  for (std::size_t off = 0; off < n; off += 8) {
    std::uint64_t v = word(seed, off / 8), got = 0;
    std::size_t k = n - off < 8 ? n - off : 8;
    std::memcpy(&got, buf + off, k);
    if (k < 8) v &= (1ULL << (8 * k)) - 1;  // little-endian: the low k bytes come first
    if (got != v)
      for (std::size_t b = 0; b < k; ++b) wrong += ((got >> (8 * b)) & 0xff) != ((v >> (8 * b)) & 0xff);
  }
  return wrong;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace fb::test

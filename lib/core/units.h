// Units used everywhere: sizes in bytes (std::size_t), bandwidth in GB/s with GB = 1e9 bytes,
// times in microseconds. Size suffixes follow nccl-tests: K = 1024, M = 1024^2, G = 1024^3.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fb {

constexpr double kGB = 1e9;  // bandwidth unit: GB/s = 1e9 bytes per second

// "8", "1K", "64M", "8G", "1k", "512B", "4KiB" → bytes. Throws ConfigError naming the input.
std::size_t parseSize(std::string_view text);
// A size from the environment variable `name`: `dflt` when unset or empty; ConfigError
// "NAME='text': expected a size from LO to HI (e.g. EXAMPLE)" when malformed or outside [lo, hi].
std::size_t sizeFromEnv(const char* name, std::size_t dflt, std::size_t lo, std::size_t hi, const char* example);
// 1024 → "1K", 67108864 → "64M", 1000 → "1000" (exact binary suffix only when it divides).
std::string formatSize(std::size_t bytes);

// nccl-tests' sweep: from min to max multiplying by factor (>1), or adding increment when
// factor == 0. Both ends included when reached. At most `limit` sizes are returned (callers that
// only count a sweep, to refuse a huge one, pass a small limit).
std::vector<std::size_t> sizeSweep(std::size_t minBytes, std::size_t maxBytes, double factor,
                                   std::size_t increment = 0, std::size_t limit = SIZE_MAX);

using Clock = std::chrono::steady_clock;
// Every wait in the suite has one of these.
struct Deadline {
  Clock::time_point at;
  static Deadline in(std::chrono::milliseconds d) { return {Clock::now() + d}; }
  bool expired() const { return Clock::now() >= at; }
  // Milliseconds left, clamped to [0, INT_MAX], for poll().
  int msLeft() const;
};

}  // namespace fb

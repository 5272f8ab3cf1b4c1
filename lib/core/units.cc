#include "core/units.h"

#include <cctype>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace fb {

std::size_t parseSize(std::string_view text) {
  auto bad = [&](const char* why) {
    throw ConfigError("invalid size '" + std::string(text) + "': " + why +
                      " (use a number with an optional K, M or G suffix, e.g. 8, 1K, 64M, 8G)");
  };
  if (text.empty()) bad("empty");
  std::size_t i = 0;
  unsigned long long value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    unsigned long long d = static_cast<unsigned long long>(text[i] - '0');
    if (value > (ULLONG_MAX - d) / 10) bad("too large");
    value = value * 10 + d;
    ++i;
  }
  if (i == 0) bad("no digits");
  std::string suffix;
  for (; i < text.size(); ++i) suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
  unsigned long long mult = 1;
  if (suffix.empty() || suffix == "B") mult = 1;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB") mult = 1ull << 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB") mult = 1ull << 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB") mult = 1ull << 30;
  else if (suffix == "T" || suffix == "TB" || suffix == "TIB") mult = 1ull << 40;
  else bad("unknown suffix");
  if (value > ULLONG_MAX / mult) bad("too large");
  return static_cast<std::size_t>(value * mult);
}

std::size_t sizeFromEnv(const char* name, std::size_t dflt, std::size_t lo, std::size_t hi, const char* example) {
  const char* e = std::getenv(name);
  if (!e || !*e) return dflt;
  std::size_t b = 0;
  try {
    b = parseSize(e);
  } catch (const std::exception&) {
    b = hi + 1;
  }
  if (b < lo || b > hi)
    throw ConfigError(std::string(name) + "='" + e + "': expected a size from " + formatSize(lo) + " to " +
                      formatSize(hi) + " (e.g. " + example + ")");
  return b;
}

std::string formatSize(std::size_t bytes) {
  const char* suffixes[] = {"", "K", "M", "G", "T"};
  int s = 0;
  while (s < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++s;
  }
  return std::to_string(bytes) + suffixes[s];
}

std::vector<std::size_t> sizeSweep(std::size_t minBytes, std::size_t maxBytes, double factor,
                                   std::size_t increment, std::size_t limit) {
  if (minBytes > maxBytes)
    throw ConfigError("min size " + std::to_string(minBytes) + " B is larger than max size " +
                      std::to_string(maxBytes) + " B");
  if (increment == 0 && !(factor > 1.0))
    throw ConfigError("step factor must be > 1 (got " + std::to_string(factor) + ")");
  std::vector<std::size_t> out;
  std::size_t s = minBytes;
  while (true) {
    out.push_back(s);
    if (out.size() >= limit) break;
    std::size_t next;
    if (increment) {
      next = s > SIZE_MAX - increment ? SIZE_MAX : s + increment;
    } else {
      double n = std::floor(static_cast<double>(s) * factor);
      next = n > static_cast<double>(SIZE_MAX) ? SIZE_MAX : static_cast<std::size_t>(n);
      if (next <= s) next = s + 1;  // min = 0 or tiny factors still advance
      if (s == 0) next = 1;
    }
    if (next > maxBytes || next <= s) break;
    s = next;
  }
  return out;
}

int Deadline::msLeft() const {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at - Clock::now()).count();
  if (left < 0) return 0;
  if (left > INT_MAX) return INT_MAX;
  return static_cast<int>(left);
}

}  // namespace fb

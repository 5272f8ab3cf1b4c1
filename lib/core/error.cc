#include "core/error.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>
#include <mutex>

namespace fb {
namespace {
std::mutex g_mu;
std::string g_identity;
std::string g_program = "fabricbench";
}  // namespace

void setProgramName(const std::string& name) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_program = name;
}

std::string programName() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_program;
}

void setIdentity(const std::string& host, int rank) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_identity = "[" + host + ":" + std::to_string(rank) + "]";
}

std::string identity() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_identity.empty() ? std::string("[fabricbench]") : g_identity;
}

namespace detail {
std::string where(const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  return std::string(" (") + (base ? base + 1 : file) + ":" + std::to_string(line) + ")";
}
std::string errnoText(int e) { return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")"; }

void writeStderrLine(const std::string& line) {
  std::size_t done = 0;
  while (done < line.size()) {
    ssize_t w = ::write(2, line.data() + done, line.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    done += static_cast<std::size_t>(w);
  }
}
}  // namespace detail

}  // namespace fb

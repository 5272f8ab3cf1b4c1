#include "bootstrap/bootstrap.h"

#include <set>

namespace fb {

std::vector<std::string> Bootstrap::allGatherStrings(const std::string& mine) {
  auto blobs = allGather(std::as_bytes(std::span<const char>(mine.data(), mine.size())));
  std::vector<std::string> out;
  out.reserve(blobs.size());
  for (auto& b : blobs) out.emplace_back(reinterpret_cast<const char*>(b.data()), b.size());
  return out;
}

std::vector<std::string> Bootstrap::hostnames() { return allGatherStrings(hostname()); }

int Bootstrap::localRank() {
  auto hosts = hostnames();
  int lr = 0;
  for (int r = 0; r < rank(); ++r)
    if (hosts[r] == hosts[rank()]) ++lr;
  return lr;
}

int Bootstrap::localSize() {
  auto hosts = hostnames();
  int n = 0;
  for (auto& h : hosts)
    if (h == hosts[rank()]) ++n;
  return n;
}

int Bootstrap::nodeCount() {
  auto hosts = hostnames();
  return static_cast<int>(std::set<std::string>(hosts.begin(), hosts.end()).size());
}

std::vector<std::byte> Bootstrap::broadcastFromRoot(std::span<const std::byte> rootData) {
  std::span<const std::byte> mine = rank() == 0 ? rootData : std::span<const std::byte>();
  return allGather(mine)[0];
}

}  // namespace fb

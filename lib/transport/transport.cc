#include "transport/transport.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/error.h"

namespace fb {

void PathInfo::setNominal(double gbps, const std::string& basis) {
  nominalGBps = gbps > 0 ? gbps : -1;
  if (nominalGBps > 0) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", nominalGBps);
    details.emplace_back("nominal_GBps", buf);
  }
  details.emplace_back("nominal_basis", basis);
}

void Transport::ringExchange(const void* sendBuf, std::size_t sendBytes, void* recvBuf,
                             std::size_t recvBytes, Deadline deadline) {
  int right = (rank_ + 1) % size_;
  int left = (rank_ - 1 + size_) % size_;
  sendRecv(right, sendBuf, sendBytes, left, recvBuf, recvBytes, deadline);
}

void Transport::sendRecv(int sendPeer, const void* sendBuf, std::size_t sendBytes, int recvPeer,
                         void* recvBuf, std::size_t recvBytes, Deadline deadline) {
  Request r, s;
  if (recvPeer >= 0) r = irecv(recvPeer, recvBuf, recvBytes);
  if (sendPeer >= 0) s = isend(sendPeer, sendBuf, sendBytes);
  if (s) wait(s, deadline);
  if (r) wait(r, deadline);
}

namespace {
std::vector<int> numberNodes(const std::vector<std::string>& labels) {
  std::map<std::string, int> id;
  std::vector<int> out;
  for (const auto& l : labels) out.push_back(id.emplace(l, static_cast<int>(id.size())).first->second);
  return out;
}
}  // namespace

std::optional<std::vector<int>> nodesFromEnv(int nRanks) {
  const char* e = std::getenv("FB_HOST_NODES");
  if (!e || !*e) return std::nullopt;
  std::vector<std::string> labels;
  std::string text = e, cur;
  for (char c : text + ",") {
    if (c != ',') {
      cur += c;
      continue;
    }
    if (cur.empty()) throw ConfigError("FB_HOST_NODES='" + text + "': empty node label");
    labels.push_back(cur);
    cur.clear();
  }
  if (static_cast<int>(labels.size()) != nRanks)
    throw ConfigError("FB_HOST_NODES='" + text + "' names " + std::to_string(labels.size()) + " ranks' nodes, the job has " +
                      std::to_string(nRanks) + " ranks");
  return numberNodes(labels);
}

std::vector<int> nodePlacement(Bootstrap& bs) {
  if (auto v = nodesFromEnv(bs.size())) return *v;
  return numberNodes(bs.hostnames());
}

}  // namespace fb

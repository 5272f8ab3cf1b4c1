#include "transport/transport.h"

#include <cstdio>

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

}  // namespace fb

#include "topology/nic_rate.h"

#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace fb::topo {
namespace {

std::string firstLine(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

std::string rateText(double bytesPerSec) {
  double bits = bytesPerSec * 8;
  std::ostringstream os;
  if (bits >= 1e9) os << bits / 1e9 << " Gbit/s";
  else os << bits / 1e6 << " Mbit/s";
  return os.str();
}

// One rtnetlink dump of the qdiscs; calls fn(tcmsg, attributes) for each reply.
template <typename Fn>
void dumpQdiscs(Fn fn) {
  int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return;
  timeval tv{1, 0};  // never wait long: this is a label, not a measurement
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  struct {
    nlmsghdr nh;
    tcmsg tc;
  } req{};
  req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(tcmsg));
  req.nh.nlmsg_type = RTM_GETQDISC;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.nh.nlmsg_seq = 1;
  req.tc.tcm_family = AF_UNSPEC;
  if (::send(fd, &req, req.nh.nlmsg_len, 0) < 0) {
    ::close(fd);
    return;
  }
  std::vector<char> buf(1 << 16);
  for (bool done = false; !done;) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    for (auto* nh = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(nh, static_cast<unsigned>(n));
         nh = NLMSG_NEXT(nh, n)) {
      if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) {
        done = true;
        break;
      }
      if (nh->nlmsg_type != RTM_NEWQDISC) continue;
      auto* tc = static_cast<tcmsg*>(NLMSG_DATA(nh));
      int len = static_cast<int>(nh->nlmsg_len) - static_cast<int>(NLMSG_LENGTH(sizeof(tcmsg)));
      fn(*tc, reinterpret_cast<rtattr*>(reinterpret_cast<char*>(tc) + NLMSG_ALIGN(sizeof(tcmsg))), len);
    }
  }
  ::close(fd);
}

}  // namespace

double tbfRootRate(const std::string& ifname, std::string* kind) {
  if (kind) kind->clear();
  unsigned idx = ::if_nametoindex(ifname.c_str());
  if (idx == 0) return 0;
  double rate = 0;
  dumpQdiscs([&](const tcmsg& tc, rtattr* rta, int len) {
    if (tc.tcm_ifindex != static_cast<int>(idx) || tc.tcm_parent != TC_H_ROOT) return;
    std::string k;
    rtattr* options = nullptr;
    int optLen = 0;
    for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
      if (rta->rta_type == TCA_KIND) k.assign(static_cast<const char*>(RTA_DATA(rta)), strnlen(static_cast<const char*>(RTA_DATA(rta)), RTA_PAYLOAD(rta)));
      if (rta->rta_type == TCA_OPTIONS) {
        options = static_cast<rtattr*>(RTA_DATA(rta));
        optLen = static_cast<int>(RTA_PAYLOAD(rta));
      }
    }
    if (kind) *kind = k;
    if (k != "tbf" || !options) return;
    for (rtattr* o = options; RTA_OK(o, optLen); o = RTA_NEXT(o, optLen)) {
      if (o->rta_type == TCA_TBF_PARMS && RTA_PAYLOAD(o) >= sizeof(tc_tbf_qopt)) {
        tc_tbf_qopt q{};
        std::memcpy(&q, RTA_DATA(o), sizeof(q));
        if (rate == 0) rate = q.rate.rate;
      }
      if (o->rta_type == TCA_TBF_RATE64 && RTA_PAYLOAD(o) >= sizeof(std::uint64_t)) {
        std::uint64_t r64 = 0;
        std::memcpy(&r64, RTA_DATA(o), sizeof(r64));
        rate = static_cast<double>(r64);
      }
    }
  });
  return rate;
}

NicRate nicRate(const std::string& ifname) {
  NicRate r;
  if (ifname == "lo" || (::if_nametoindex(ifname.c_str()) != 0 &&
                         firstLine("/sys/class/net/" + ifname + "/type") == "772")) {  // ARPHRD_LOOPBACK
    r.basis = ifname + ": loopback, no nominal rate";
    return r;
  }
  std::string speed = firstLine("/sys/class/net/" + ifname + "/speed");
  long mbps = 0;
  try {
    mbps = speed.empty() ? 0 : std::stol(speed);
  } catch (...) {
    mbps = 0;
  }
  std::string kind;
  double tbf = tbfRootRate(ifname, &kind);
  double link = mbps > 0 ? static_cast<double>(mbps) * 1e6 / 8 / 1e9 : -1;
  std::ostringstream os;
  if (tbf > 0 && (link < 0 || tbf / 1e9 < link)) {
    r.gbps = tbf / 1e9;
    r.lineGBps = link;
    os << ifname << ": tc tbf " << rateText(tbf) << " (shaped, link "
       << (mbps > 0 ? std::to_string(mbps) + " Mb/s" : std::string("speed unknown")) << ")";
  } else if (link > 0) {
    r.gbps = link;
    os << ifname << ": " << mbps << " Mb/s (sysfs link speed)";
    if (!kind.empty() && kind != "noqueue" && kind != "pfifo_fast" && kind != "fq_codel" && kind != "mq" &&
        kind != "fq" && kind != "tbf")
      os << "; root qdisc " << kind << " may shape below it";
  } else {
    os << ifname << ": link speed unknown (sysfs reports none), no nominal rate";
  }
  r.basis = os.str();
  return r;
}

}  // namespace fb::topo

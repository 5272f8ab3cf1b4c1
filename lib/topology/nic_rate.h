// The nominal rate of an Ethernet/IP interface, for "% of nominal" on tcp (and NCCL's socket
// path): the link speed the kernel reports (/sys/class/net/<if>/speed, what ethtool shows),
// lowered to the rate of a tc token-bucket (tbf) root qdisc on the interface when one shapes it
// (read over rtnetlink, as `tc qdisc show` does). Loopback and interfaces without a speed have
// no nominal rate; the basis says why.
#pragma once
#include <string>

namespace fb::topo {

struct NicRate {
  double gbps = -1;    // GB/s (1e9 bytes), one direction; -1 = unknown
  std::string basis;   // "eth0: 10000 Mb/s (sysfs)", "eth0: tc tbf 1 Gbit/s (shaped, link 10000 Mb/s)", ...
  // Where a tbf shapes below the link: the link's own rate (GB/s), at which bytes within the
  // token bucket pass; -1 otherwise.
  double lineGBps = -1;
};

NicRate nicRate(const std::string& ifname);

// Rate in bytes/s of a tbf root qdisc on `ifname`; 0 when there is none. `kind` gets the root
// qdisc's kind ("" when none could be read).
double tbfRootRate(const std::string& ifname, std::string* kind);

}  // namespace fb::topo

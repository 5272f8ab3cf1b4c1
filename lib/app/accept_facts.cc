#include "app/accept_facts.h"

#include "accept/accept.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "transport/tcp/socket.h"

namespace fb::acceptcmd {

namespace fs = std::filesystem;
using nlohmann::json;

// Counters and facts of this node, from sysfs / procfs.
std::string readLine(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

std::map<std::string, long long> readCounters() {
  std::map<std::string, long long> c;
  static const char* kIb[] = {"link_downed", "symbol_error", "port_rcv_errors", "port_rcv_remote_physical_errors",
                              "port_xmit_discards", "link_error_recovery", "local_link_integrity_errors",
                              "excessive_buffer_overrun_errors", "port_rcv_switch_relay_errors", "port_xmit_constraint_errors"};
  static const char* kNet[] = {"rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "rx_crc_errors", "rx_frame_errors",
                               "rx_missed_errors", "tx_carrier_errors", "collisions"};
  std::error_code ec;
  for (const auto& dev : fs::directory_iterator("/sys/class/infiniband", ec)) {
    std::error_code e2;
    for (const auto& port : fs::directory_iterator(dev.path() / "ports", e2))
      for (const char* k : kIb) {
        std::string v = readLine(port.path() / "counters" / k);
        if (!v.empty()) c[fmt::format("{}/{} {}", dev.path().filename().string(), port.path().filename().string(), k)] = std::atoll(v.c_str());
      }
  }
  for (const auto& dev : fs::directory_iterator("/sys/class/net", ec)) {
    std::string name = dev.path().filename().string();
    if (name == "lo") continue;
    for (const char* k : kNet) {
      std::string v = readLine(dev.path() / "statistics" / k);
      if (!v.empty()) c[name + " " + k] = std::atoll(v.c_str());
    }
  }
  // TCP retransmissions (node-wide): packet loss on a path shows here first.
  std::ifstream snmp("/proc/net/snmp");
  std::string head, vals;
  while (std::getline(snmp, head) && std::getline(snmp, vals)) {
    if (head.rfind("Tcp:", 0) != 0) continue;
    std::istringstream hk(head), hv(vals);
    std::string k, v;
    while (hk >> k && hv >> v)
      if (k == "RetransSegs") c["tcp RetransSegs"] = std::atoll(v.c_str());
  }
  for (const auto& [k, v] : accept::cpuContentionCounters()) c[k] = v;  // a CPU hog
  return c;
}

json readFacts(const Options& o, const std::string& host) {
  json f = json::object();
  try {
    std::string how;
    auto i = tcp::chooseInterface(o.coll.transport.tcpInterface, host, &how);
    f["tcp_interface"] = i.name;
    std::string mtu = readLine("/sys/class/net/" + i.name + "/mtu");
    if (!mtu.empty()) f["mtu"] = mtu;
    std::string sp = readLine("/sys/class/net/" + i.name + "/speed");
    if (!sp.empty()) f["speed_Mbps"] = sp;
  } catch (const std::exception& e) {
    f["tcp_interface"] = std::string("(none: ") + e.what() + ")";
  }
  std::error_code ec;
  for (const auto& dev : fs::directory_iterator("/sys/class/infiniband", ec)) {
    std::error_code e2;
    for (const auto& port : fs::directory_iterator(dev.path() / "ports", e2)) {
      std::string k = dev.path().filename().string() + "/" + port.path().filename().string();
      f["rdma " + k + " rate"] = readLine(port.path() / "rate");
      f["rdma " + k + " state"] = readLine(port.path() / "state");
    }
  }
  std::string la = readLine("/proc/loadavg");
  f["loadavg1"] = la.substr(0, la.find(' '));
  return f;
}

}  // namespace fb::acceptcmd

// RDMA checks: port state/rate/link layer, active MTU vs netdev MTU, RoCE GID, PFC/ECN, firmware.
#include <map>

#include "doctor/doctor.h"
#include "doctor/util.h"

namespace fb::doctor {
using namespace util;

namespace {

struct Gid {
  int index;
  std::string gid, type, netdev;
};

struct Port {
  std::string dev;
  int port = 0;
  std::string state, phys, rate, linkLayer, netdev;
  std::vector<Gid> gids;
  bool ethernet() const { return linkLayer == "Ethernet"; }
  std::string name() const { return dev + "/" + std::to_string(port); }
};

std::vector<Port> ports(const std::vector<topo::RdmaDeviceFacts>& devs) {
  std::vector<Port> out;
  for (const auto& d : devs)
    for (const auto& f : d.ports) {
      Port p;
      p.dev = d.name;
      p.port = f.port;
      p.state = f.state;
      p.phys = f.physState;
      p.rate = f.rate;
      p.linkLayer = f.linkLayer;
      p.netdev = f.netdev;
      for (const auto& g : f.gids) p.gids.push_back({g.index, g.gid, g.type, g.netdev});
      out.push_back(p);
    }
  return out;
}

// ibv_devinfo: hca_id -> port -> {active_mtu, max_mtu}
std::map<std::string, std::map<int, std::pair<int, int>>> parseDevinfo(const std::string& text) {
  std::map<std::string, std::map<int, std::pair<int, int>>> out;
  std::string hca;
  int port = 0;
  for (const auto& l : lines(text)) {
    std::string t = trim(l);
    auto colon = t.find(':');
    if (colon == std::string::npos) continue;
    std::string k = trim(t.substr(0, colon)), v = trim(t.substr(colon + 1));
    auto num = [](const std::string& s) { return std::atoi(s.c_str()); };
    if (k == "hca_id") hca = v, port = 0;
    else if (k == "port") port = num(v);
    else if (k == "active_mtu" && !hca.empty() && port > 0) out[hca][port].first = num(v);
    else if (k == "max_mtu" && !hca.empty() && port > 0) out[hca][port].second = num(v);
  }
  return out;
}

// ::ffff:a.b.c.d as sysfs writes it: 0000:0000:0000:0000:0000:ffff:AABB:CCDD
std::string mappedIpv4(const std::string& g) {
  if (!startsWith(g, "0000:0000:0000:0000:0000:ffff:") || g.size() < 39) return "";
  unsigned a = std::stoul(g.substr(30, 2), nullptr, 16), b = std::stoul(g.substr(32, 2), nullptr, 16),
           c = std::stoul(g.substr(35, 2), nullptr, 16), d = std::stoul(g.substr(37, 2), nullptr, 16);
  return std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(c) + "." + std::to_string(d);
}
// not IPv4-mapped, not link-local (fe80::/10), not ::1
bool globalIpv6(const std::string& g) {
  if (g.size() < 39 || !mappedIpv4(g).empty() || startsWith(g, "0000:0000:0000:0000:0000:ffff:")) return false;
  unsigned first = std::stoul(g.substr(0, 4), nullptr, 16);
  if ((first & 0xffc0) == 0xfe80) return false;
  return g != "0000:0000:0000:0000:0000:0000:0000:0001";
}
bool routable(const std::string& ip) {
  return !ip.empty() && !startsWith(ip, "0.") && !startsWith(ip, "127.") && !startsWith(ip, "169.254.");
}

const char* kNoDevice = "no RDMA device (/sys/class/infiniband is empty or absent)";

}  // namespace

void checkRdma(const Machine& m, NodeReport& r) {
  const auto devs = topo::readRdma(m);
  auto ps = ports(devs);
  if (ps.empty()) {
    for (const char* id : {"rdma.port", "rdma.mtu", "rdma.gid", "rdma.flow_control", "rdma.firmware"})
      add(r, id, Verdict::kSkip, kNoDevice, "/sys/class/infiniband");
    return;
  }

  // ---- state, physical state, rate, link layer
  {
    std::vector<std::string> all, down;
    int active = 0;
    for (const auto& p : ps) {
      all.push_back(p.name() + " " + p.state + ", " + p.phys + ", " + p.rate + ", " + p.linkLayer);
      bool up = p.state.find("ACTIVE") != std::string::npos && p.phys.find("LinkUp") != std::string::npos;
      if (up) ++active;
      else down.push_back(p.name());
      r.facts["rate." + p.name()] = p.rate;
      r.factSources["rate." + p.name()] = "/sys/class/infiniband/" + p.dev + "/ports/*/rate";
    }
    std::string src = "/sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}";
    if (active == 0)
      add(r, "rdma.port", Verdict::kFail, "no ACTIVE port: " + join(all, "; "), src,
          "check cables and the switch port (ibstat); InfiniBand needs a running subnet manager (opensm)");
    else if (!down.empty())
      add(r, "rdma.port", Verdict::kWarn, "not ACTIVE/LinkUp: " + join(down, ", ") + " (all: " + join(all, "; ") + ")", src,
          "unused ports are fine; otherwise check cables/switch (ibstat) and that jobs do not pick them (NCCL_IB_HCA)");
    else
      add(r, "rdma.port", Verdict::kPass, join(all, "; ") + " (rates: compared between nodes)", src);
  }

  // ---- active MTU against the netdev MTU
  {
    auto dv = m.run({"ibv_devinfo"});
    std::string src = "ibv_devinfo (active_mtu, max_mtu) + /sys/class/net/<netdev>/mtu";
    if (!dv.found) {
      add(r, "rdma.mtu", Verdict::kSkip, "ibv_devinfo not found: the active MTU is not in sysfs", src,
          "apt-get install ibverbs-utils");
    } else if (!dv.ok) {
      add(r, "rdma.mtu", Verdict::kSkip, "ibv_devinfo failed: " + dv.error, src);
    } else {
      auto info = parseDevinfo(dv.out);
      std::vector<std::string> all, low;
      bool roceLow = false;
      for (const auto& p : ps) {
        auto it = info.find(p.dev);
        if (it == info.end() || !it->second.count(p.port)) continue;
        auto [act, mx] = it->second.at(p.port);
        std::string nd = p.netdev.empty() ? "" : m.line("/sys/class/net/" + p.netdev + "/mtu");
        std::string t = p.name() + " active " + std::to_string(act) + " (max " + std::to_string(mx) + ")" +
                        (p.netdev.empty() ? "" : ", " + p.netdev + " MTU " + (nd.empty() ? "?" : nd));
        all.push_back(t);
        r.facts["mtu." + p.name()] = std::to_string(act);
        r.factSources["mtu." + p.name()] = "ibv_devinfo";
        if (act < 4096 && p.state.find("ACTIVE") != std::string::npos) {
          low.push_back(t);
          roceLow = roceLow || p.ethernet();
        }
      }
      if (all.empty())
        add(r, "rdma.mtu", Verdict::kSkip, "ibv_devinfo lists none of the sysfs ports", src);
      else if (!low.empty())
        add(r, "rdma.mtu", Verdict::kWarn, "active MTU below 4096: " + join(low, "; ") + " (perftest issue 252)", src,
            roceLow ? "RoCE: the active MTU follows the netdev MTU: ip link set dev <netdev> mtu 9000 (>= 4200 gives 4096; "
                      "switch ports too)"
                    : "InfiniBand: set the partition/subnet MTU to 4096 in the subnet manager (opensm)");
      else
        add(r, "rdma.mtu", Verdict::kPass, join(all, "; "), src);
    }
  }

  // ---- RoCE GID
  {
    std::string src = "/sys/class/infiniband/*/ports/*/{gids,gid_attrs/types,gid_attrs/ndevs}/<index>";
    auto want = m.env("NCCL_IB_GID_INDEX");
    std::vector<std::string> ok, bad, ib;
    for (const auto& p : ps) {
      if (!p.ethernet()) {
        ib.push_back(p.name());
        continue;
      }
      const auto& gs = p.gids;
      // the rule of fabricbench's verbs backend (and NCCL's auto choice): the first RoCEv2 GID on a
      // routable IPv4 address, else the first RoCEv2 GID on a global IPv6 address
      const Gid* best = nullptr;
      for (const auto& g : gs)
        if (g.type == "RoCE v2" && routable(mappedIpv4(g.gid))) {
          best = &g;
          break;
        }
      if (!best)
        for (const auto& g : gs)
          if (g.type == "RoCE v2" && globalIpv6(g.gid)) {
            best = &g;
            break;
          }
      std::string list;
      for (const auto& g : gs)
        list += (list.empty() ? "" : ", ") + std::to_string(g.index) + " " + (g.type.empty() ? "?" : g.type) +
                (mappedIpv4(g.gid).empty() ? "" : " " + mappedIpv4(g.gid)) + (g.netdev.empty() ? "" : " " + g.netdev);
      if (!best) {
        bad.push_back(p.name() + ": no RoCEv2 GID bound to a routable IPv4 or global IPv6 address (GIDs: " +
                      (list.empty() ? "none" : list) + ")");
        continue;
      }
      r.facts["gid_index." + p.name()] = std::to_string(best->index);
      r.factSources["gid_index." + p.name()] = "first RoCE v2 GID with a routable IPv4 (sysfs gid_attrs)";
      std::string addr = mappedIpv4(best->gid).empty() ? best->gid : mappedIpv4(best->gid);
      std::string t = p.name() + ": RoCEv2 GID " + std::to_string(best->index) + " " + addr +
                      (best->netdev.empty() ? "" : " (" + best->netdev + ")");
      if (want) {
        int w = std::atoi(want->c_str());
        const Gid* chosen = nullptr;
        for (const auto& g : gs)
          if (g.index == w) chosen = &g;
        if (!chosen || chosen->type != "RoCE v2" || !(routable(mappedIpv4(chosen->gid)) || globalIpv6(chosen->gid))) {
          bad.push_back(p.name() + ": NCCL_IB_GID_INDEX=" + *want + " is " +
                        (chosen ? std::string(chosen->type) + " " + (mappedIpv4(chosen->gid).empty() ? chosen->gid : mappedIpv4(chosen->gid))
                                : std::string("not populated")) +
                        ", not a RoCEv2 GID on a routable address (" + t + ")");
          continue;
        }
      }
      ok.push_back(t);
    }
    std::string ibNote = ib.empty() ? "" : "; InfiniBand ports (LID addressing, no GID to choose): " + join(ib, ", ");
    if (ok.empty() && bad.empty())
      add(r, "rdma.gid", Verdict::kSkip, "no RoCE (Ethernet) port" + ibNote, src);
    else if (!bad.empty())
      add(r, "rdma.gid", Verdict::kFail, join(bad, "; ") + (ok.empty() ? "" : "; ok: " + join(ok, "; ")) + ibNote, src,
          "give the netdev an IPv4 address (ip addr add A.B.C.D/N dev <netdev>) and use its RoCEv2 GID index "
          "(NCCL_IB_GID_INDEX, fabricbench --gid-index), the same on every node");
    else
      add(r, "rdma.gid", Verdict::kPass,
          join(ok, "; ") + (want ? " (NCCL_IB_GID_INDEX=" + *want + ")" : "") + " (index compared between nodes)" + ibNote,
          src);
  }

  // ---- PFC / ECN (RoCE)
  {
    std::string src = "/sys/class/net/<netdev>/ecn/roce_{np,rp}/enable/<prio> (mlx5), mlnx_qos -i <netdev> (PFC)";
    std::vector<std::string> on, off, unread, ib;
    for (const auto& p : ps) {
      if (!p.ethernet()) {
        ib.push_back(p.name());
        continue;
      }
      if (p.netdev.empty()) {
        unread.push_back(p.name() + " (no netdev)");
        continue;
      }
      std::string ecnBase = "/sys/class/net/" + p.netdev + "/ecn/";
      bool readable = false, ecn = false, pfc = false;
      std::string ecnText, pfcText;
      for (const char* side : {"roce_np", "roce_rp"}) {
        std::string prios;
        for (int prio = 0; prio < 8; ++prio) {
          std::string v = m.line(ecnBase + side + "/enable/" + std::to_string(prio));
          if (v.empty()) continue;
          readable = true;
          if (v == "1") {
            ecn = true;
            prios += std::to_string(prio);
          }
        }
        if (!prios.empty()) ecnText += std::string(" ") + side + " on prio " + prios;
      }
      auto q = m.run({"mlnx_qos", "-i", p.netdev});
      if (q.ok) {
        for (const auto& l : lines(q.out)) {
          std::string t = trim(l);
          if (!startsWith(t, "enabled")) continue;
          readable = true;
          auto f = split(t.substr(7), ' ');
          std::string prios;
          for (std::size_t i = 0; i < f.size(); ++i)
            if (f[i] == "1") prios += std::to_string(i);
          if (!prios.empty()) {
            pfc = true;
            pfcText = " PFC on prio " + prios;
          }
          break;
        }
      }
      std::string t = p.name() + " (" + p.netdev + "):";
      if (!readable)
        unread.push_back(p.name() + " (" + p.netdev + ": no " + ecnBase + " and " +
                         (q.found ? "mlnx_qos failed" : "no mlnx_qos") + ")");
      else if (ecn || pfc)
        on.push_back(t + ecnText + pfcText);
      else
        off.push_back(t + " ECN off on every priority" + (q.ok ? ", PFC off" : " (PFC not readable: no mlnx_qos)"));
    }
    std::string ibNote = ib.empty() ? "" : "; InfiniBand ports (credit-based flow control): " + join(ib, ", ");
    if (!off.empty())
      add(r, "rdma.flow_control", Verdict::kWarn,
          join(off, "; ") + ": RoCE without PFC/ECN loses badly under congestion (NVIDIA/nccl issue 378)" + ibNote, src,
          "enable ECN (echo 1 > /sys/class/net/<netdev>/ecn/roce_np/enable/<prio>, same for roce_rp) and/or PFC "
          "(mlnx_qos -i <netdev> --pfc 0,0,0,1,0,0,0,0) on the priority RoCE uses, matching the switches");
    else if (!on.empty())
      add(r, "rdma.flow_control", Verdict::kPass, join(on, "; ") + ibNote, src);
    else if (!unread.empty())
      add(r, "rdma.flow_control", Verdict::kSkip, "not readable: " + join(unread, "; ") + ibNote, src);
    else
      add(r, "rdma.flow_control", Verdict::kSkip, "no RoCE port" + ibNote, src);
  }

  // ---- firmware
  {
    std::string src = "/sys/class/infiniband/*/{fw_ver,hca_type,board_id}";
    std::vector<std::string> all, old;
    for (const auto& d : devs) {
      const std::string& dev = d.name;
      const std::string& fw = d.fwVer;
      const std::string& type = d.hcaType;
      const std::string& board = d.boardId;
      std::string t = dev + " " + (type.empty() ? "" : type + " ") + "fw " + (fw.empty() ? "(none reported)" : fw) +
                      (board.empty() ? "" : " (" + board + ")");
      all.push_back(t);
      r.facts["fw." + dev] = fw;
      r.factSources["fw." + dev] = "/sys/class/infiniband/" + dev + "/fw_ver";
      // ConnectX-6 firmware is 20.x (6 Dx: 22.x, 6 Lx: 26.x); 20.31.1014 is the minimum doc/doctor.md gives.
      bool cx6 = startsWith(fw, "20.") || type == "MT4123" || type == "MT4124";
      if (cx6 && startsWith(fw, "20.") && compareVersions(fw, "20.31.1014") < 0) old.push_back(t);
    }
    if (!old.empty())
      add(r, "rdma.firmware", Verdict::kFail,
          "ConnectX-6 below firmware 20.31.1014 (the seed guide's minimum for its setup): " + join(old, "; "), src,
          "update: mlxfwmanager --online -u (or mlxfwmanager -i <device> -f <image>), then reboot or mlxfwreset");
    else
      add(r, "rdma.firmware", Verdict::kPass,
          join(all, "; ") + " (ConnectX-6 minimum 20.31.1014 checked; compared between nodes)", src);
  }
}

}  // namespace fb::doctor

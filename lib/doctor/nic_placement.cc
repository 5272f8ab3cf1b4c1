#include "doctor/nic_placement.h"

#include <algorithm>
#include <cctype>

#include "doctor/util.h"

namespace fb::doctor {
using namespace util;

namespace {

// The place of the device whose sysfs folder `link` resolves to ("" hostBridge when not PCI).
PciPlace placeOf(const Machine& m, const std::string& link) {
  PciPlace p;
  std::string path = m.resolve(link);
  std::vector<std::string> bdfs;
  for (const auto& part : split(path, '/')) {
    if (startsWith(part, "pci") && p.hostBridge.empty()) p.hostBridge = part;
    if (isBdf(part)) bdfs.push_back(lower(part));
  }
  if (bdfs.empty()) return {};
  p.bdf = bdfs.back();
  bdfs.pop_back();
  p.bridges = bdfs;
  std::string n = m.line(link + "/numa_node");
  if (!n.empty() && (std::isdigit(static_cast<unsigned char>(n[0])) != 0)) p.numa = std::atoi(n.c_str());
  return p;
}

int distanceRank(const std::string& d) {
  if (d == "PIX") return 1;
  if (d == "PXB") return 2;
  if (d == "PHB") return 3;
  if (d == "NODE") return 4;
  if (d == "SYS" || d == "NODE/SYS") return 5;
  return 99;
}

std::string describe(const PciPlace& p) {
  return "below " + p.hostBridge + (p.numa >= 0 ? " NUMA " + std::to_string(p.numa) : std::string());
}

}  // namespace

PcieMap readPcieMap(const Machine& m) {
  PcieMap map;
  for (const auto& bdf : m.list("/sys/bus/pci/devices")) {
    std::string dir = "/sys/bus/pci/devices/" + bdf;
    std::string cls = m.line(dir + "/class");
    if (m.line(dir + "/vendor") != "0x10de" || !(startsWith(cls, "0x0300") || startsWith(cls, "0x0302"))) continue;
    PciPlace p = placeOf(m, dir);
    if (!p.hostBridge.empty()) map.gpus[p.bdf] = p;
  }
  for (const auto& d : topo::readRdma(m)) {
    PciPlace p = placeOf(m, "/sys/class/infiniband/" + d.name + "/device");
    if (!p.hostBridge.empty()) map.nics[d.name] = p;  // rxe, siw: no PCI function of their own
    for (const auto& port : d.ports) {
      if (!port.active()) continue;
      const std::string& ll = port.linkLayer;
      map.activeRdmaPorts.push_back(d.name + " port " + std::to_string(port.port) + (ll.empty() ? "" : " (" + ll + ")"));
    }
  }
  if (m.exists("/sys/module/nvidia_peermem")) {
    std::string v = m.line("/sys/module/nvidia_peermem/version");
    map.peerMemory = "nvidia_peermem" + (v.empty() ? "" : " " + v);
  } else {
    for (const char* p : {"nv_mem", "nv_mem_nc"})
      if (m.exists(std::string("/sys/kernel/mm/memory_peers/") + p + "/version")) map.peerMemory = "nv_peer_mem";
  }
  return map;
}

std::string pcieDistance(const PciPlace& a, const PciPlace& b) {
  if (a.hostBridge.empty() || b.hostBridge.empty()) return "";
  if (a.hostBridge != b.hostBridge) {
    if (a.numa < 0 || b.numa < 0) return "NODE/SYS";
    return a.numa == b.numa ? "NODE" : "SYS";
  }
  std::size_t common = 0;
  while (common < a.bridges.size() && common < b.bridges.size() && a.bridges[common] == b.bridges[common]) ++common;
  if (common == 0) return "PHB";
  bool sameParent = common == a.bridges.size() && common == b.bridges.size();
  return sameParent ? "PIX" : "PXB";
}

std::vector<std::string> ncclPlacementWarnings(const topo::NcclAttestation& a, const std::string& host,
                                               const PcieMap& map, int nodes, const std::string& gdrLevel) {
  std::vector<std::string> out;
  auto push = [&](std::string w) {
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(std::move(w));
  };
  const bool rdma = a.netConnections > 0 && a.interKind != "socket";
  for (const auto& [rank, r] : a.ranks) {
    if (!rdma || r.nics.empty() || r.busId.empty() || (!host.empty() && r.host != host)) continue;
    auto g = map.gpus.find(r.busId);
    if (g == map.gpus.end()) continue;  // a GPU of another node, or not in this tree
    const std::vector<topo::NcclNic>* listed = nullptr;
    if (auto it = a.nicsListed.find(r.host); it != a.nicsListed.end()) listed = &it->second;
    else if (!a.nicsListed.empty()) listed = &a.nicsListed.begin()->second;
    const std::string who = "GPU " + r.busId + " (rank " + std::to_string(rank) + ")";
    for (int idx : r.nics) {
      // The PCI devices behind NET device idx: the listed one, or every listed port when NCCL made a
      // virtual NIC of them (NCCL_IB_MERGE_NICS); the nearest decides.
      std::vector<std::string> devs;
      std::string label;
      if (listed)
        for (const auto& nic : *listed)
          if (nic.index == idx) devs.push_back(nic.name.substr(0, nic.name.find(':'))), label = nic.name;
      if (devs.empty() && listed) {
        for (const auto& nic : *listed) devs.push_back(nic.name.substr(0, nic.name.find(':')));
        label = "virtual NIC " + std::to_string(idx);
      }
      std::string dist, dev;
      for (const auto& d : devs) {
        auto n = map.nics.find(d);
        if (n == map.nics.end()) continue;
        std::string x = pcieDistance(g->second, n->second);
        if (dev.empty() || distanceRank(x) < distanceRank(dist)) dist = x, dev = d;
      }
      if (dev.empty()) continue;  // NIC not in this tree (no PCI function, or another node's)
      if (distanceRank(dist) >= 4) {
        std::string nearest, nearestDist;
        for (const auto& [name, place] : map.nics) {
          std::string x = pcieDistance(g->second, place);
          if (distanceRank(x) < distanceRank(nearestDist.empty() ? dist : nearestDist)) nearest = name, nearestDist = x;
        }
        push(who + " sends through " + label + " (" + dev + ") across PCIe root complexes (" + dist + ": GPU " +
             describe(g->second) + ", NIC " + describe(map.nics.at(dev)) + ")" +
             (nearest.empty() ? "; no RDMA NIC of this node is nearer"
                              : "; nearest RDMA NIC: " + nearest + " (" + nearestDist + "), check NCCL_IB_HCA"));
      }
      if (r.noGdr && !map.peerMemory.empty() && distanceRank(dist) <= 2)
        push("GPUDirect RDMA possible for " + who + " and " + dev + " (" + dist + ", " + map.peerMemory +
             " loaded) but NCCL's NET connections of that GPU were not GDRDMA: " +
             (gdrLevel.empty() ? std::string("check NCCL_NET_GDR_LEVEL / NCCL_NET_GDR_READ and the log's GDR lines")
                               : "the site sets NCCL_NET_GDR_LEVEL=" + gdrLevel));
    }
  }
  if (nodes > 1 && a.netConnections > 0 && a.interKind == "socket" && !map.activeRdmaPorts.empty())
    push("NCCL fell back to NET/Socket (TCP) between nodes while RDMA port " + map.activeRdmaPorts.front() +
         " is up: check NCCL_IB_DISABLE, NCCL_NET, the net plugin and libibverbs (--doctor)");
  return out;
}

}  // namespace fb::doctor

#include "topology/nccl_attest.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <regex>
#include <sstream>

#include "core/text.h"
#include "topology/nccl_log.h"

namespace fb::topo {
namespace {

// NCCL's algorithm and protocol indices (src/include/device.h), for logs that print numbers.
std::string algoName(const std::string& a) {
  static const char* k[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
  if (!a.empty() && std::all_of(a.begin(), a.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    int i = std::stoi(a);
    return i >= 0 && i < 7 ? k[i] : a;
  }
  return a;
}
std::string protoName(const std::string& p) {
  static const char* k[] = {"LL", "LL128", "SIMPLE"};
  if (!p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    int i = std::stoi(p);
    return i >= 0 && i < 3 ? k[i] : p;
  }
  return p;
}

int nvlsRank(const std::string& s) {
  if (s == "used") return 5;
  if (s == "set up") return 4;
  if (s == "available") return 3;
  if (s == "disabled") return 2;
  if (s == "not available") return 1;
  if (s == "not set up") return 0;
  return -1;
}
void raiseNvls(std::string& cur, const std::string& v) {
  if (nvlsRank(v) > nvlsRank(cur)) cur = v;
}

void finishNics(NcclAttestation& a) {
  a.hcas.clear();
  a.railsPerNode = -1;
  std::set<std::string> kinds;
  for (const auto& [host, used] : a.nicsUsed) {
    if (used.empty()) continue;
    int n = static_cast<int>(used.size());
    a.railsPerNode = a.railsPerNode < 0 ? n : std::min(a.railsPerNode, n);
    // The NIC list of this host; else any host's (a log of one host names the other's NICs the same).
    const std::vector<NcclNic>* list = nullptr;
    if (auto it = a.nicsListed.find(host); it != a.nicsListed.end()) list = &it->second;
    else if (!a.nicsListed.empty()) list = &a.nicsListed.begin()->second;
    for (int idx : used) {
      std::string name, kind;
      if (list)
        for (const auto& nic : *list)
          if (nic.index == idx) name = nic.name, kind = nic.kind;
      if (name.empty()) {
        if (a.interKind == "efa" || a.interKind == "ofi") {
          name = a.net + "/" + std::to_string(idx);
          kind = a.interKind;
        } else {
          name = "netdev " + std::to_string(idx) + " (not listed: virtual NIC)";
          // A device NCCL made of listed ports (NCCL_IB_MERGE_NICS): their kind if they agree.
          std::set<std::string> k;
          if (list)
            for (const auto& nic : *list) k.insert(nic.kind);
          kind = k.size() == 1 ? *k.begin() : "unknown";
        }
      }
      kinds.insert(kind);
      if (std::find(a.hcas.begin(), a.hcas.end(), name) == a.hcas.end()) a.hcas.push_back(name);
    }
  }
  if (a.interKind == "efa" || a.interKind == "ofi" || a.netConnections == 0) return;
  if (a.net == "Socket" || kinds.count("socket")) {
    a.interKind = "socket";
  } else if (kinds.count("ib") && kinds.count("roce")) {
    a.interKind = "ib+roce";
  } else if (kinds.size() == 1 && *kinds.begin() != "unknown") {
    a.interKind = *kinds.begin();
  } else {
    a.interKind = "unknown";
  }
}

}  // namespace

std::string NcclAttestation::gdr() const {
  if (netConnections == 0) return "";
  if (gdrConnections == netConnections) return "yes";
  if (gdrConnections == 0) return "no";
  return "partial (" + std::to_string(gdrConnections) + " of " + std::to_string(netConnections) + ")";
}

std::string NcclAttestation::intraText() const {
  if (intra.empty()) return nvls == "used" ? "NVLS" : "none";
  std::string out;
  for (const auto& t : intra) {
    out += (out.empty() ? "" : " + ") + t;
    if (t.rfind("P2P", 0) == 0 && !intraLink.empty()) out += " over " + intraLink;
  }
  return out;
}

std::string NcclAttestation::hcasText() const {
  std::string out;
  for (const auto& h : hcas) out += (out.empty() ? "" : ",") + h;
  return out;
}

std::string NcclAttestation::netText() const {
  if (netConnections == 0) return "none";
  std::string out = "NET/" + net + " (" + interKind + ")";
  if (!hcas.empty()) out += " " + hcasText();
  if (railsPerNode > 0) out += " " + std::to_string(railsPerNode) + (railsPerNode == 1 ? " rail" : " rails") + "/node";
  out += gdrConnections == netConnections ? " GDRDMA" : gdrConnections == 0 ? " no GDRDMA" : " GDRDMA " + gdr();
  if (pxn) out += " PXN";
  return out;
}

std::string ncclBusIdToBdf(const std::string& hex) {
  unsigned long long x = 0;
  auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), x, 16);
  if (hex.empty() || ec != std::errc() || p != hex.data() + hex.size()) return hex;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04llx:%02llx:%02llx.%llx", x >> 20, (x >> 12) & 0xff, (x >> 4) & 0xff, x & 0xf);
  return buf;
}

NcclAttestation attestNcclLog(std::string_view text) {
  NcclAttestation a;
  static const std::regex kIbNic(R"(\[(\d+)\]([^\s/\[\]]+)/(IB|RoCE))");
  static const std::regex kSockNic(R"(\[(\d+)\]([^:\s\[\]]+):)");
  static const std::regex kTuning(R"(^(\w+): (\d+) Bytes -> Algo (\S+) proto (\S+)(?: channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}| nchannels (\d+))?)");
  static const std::regex kSym(R"(^(\w+) \[Symmetric\]: (\d+) Bytes -> Kernel (\S+) nchannels (\d+))");
  static const std::regex kPlugin(R"(Loaded net plugin (.+)$)");
  static const std::regex kRank(R"(rank (\d+) nranks \d+ cudaDev \d+(?: nvmlDev \d+)? busId ([0-9a-fA-F]+))");
  std::smatch m;
  // One walk of the text (parseNcclLog): the lines it does not read as connections come here.
  auto onLine = [&](const std::string& host, const std::string& msg) {
    if (msg.rfind("NET/IB : Using", 0) == 0) {
      auto& list = a.nicsListed[host];
      list.clear();
      for (std::sregex_iterator it(msg.begin(), msg.end(), kIbNic), end; it != end; ++it)
        list.push_back({std::stoi((*it)[1]), (*it)[2], (*it)[3] == "IB" ? "ib" : "roce"});
      return;
    }
    if (msg.rfind("NET/Socket : Using", 0) == 0) {
      auto& list = a.nicsListed[host];
      list.clear();
      for (std::sregex_iterator it(msg.begin(), msg.end(), kSockNic), end; it != end; ++it)
        list.push_back({std::stoi((*it)[1]), (*it)[2], "socket"});
      return;
    }
    if (msg.rfind("Using network ", 0) == 0) {
      a.net = text::trim(msg.substr(14));
      return;
    }
    if (std::regex_search(msg, m, kPlugin)) {
      a.netPlugin = text::trim(m[1].str());
      return;
    }
    if (msg.rfind("NET/OFI Selected Provider is ", 0) == 0) {
      std::string prov = text::trim(msg.substr(29));
      a.netPlugin = "aws-ofi-nccl (provider " + prov + ")";
      a.interKind = prov == "efa" ? "efa" : "ofi";
      return;
    }
    if (std::regex_search(msg, m, kTuning)) {
      NcclTuning t;
      t.func = m[1];
      t.bytes = std::stoll(m[2]);
      t.algo = algoName(m[3]);
      t.proto = protoName(m[4]);
      if (m[5].matched) t.channels = std::stoi(m[6]) - std::stoi(m[5]) + 1;
      else if (m[7].matched) t.channels = std::stoi(m[7]);
      if (t.algo.rfind("NVLS", 0) == 0) raiseNvls(a.nvls, "used");
      a.tuning.push_back(std::move(t));
      return;
    }
    if (std::regex_search(msg, m, kSym)) {
      NcclTuning t;
      t.func = m[1];
      t.bytes = std::stoll(m[2]);
      t.algo = "symmetric/" + m[3].str();
      t.channels = std::stoi(m[4]);
      a.tuning.push_back(std::move(t));
      return;
    }
    if (std::regex_search(msg, m, kRank)) {
      auto& r = a.ranks[std::stoi(m[1])];
      if (!host.empty()) r.host = host;
      r.busId = ncclBusIdToBdf(m[2]);
      return;
    }
    if (msg.find("NVLS multicast support is available") != std::string::npos) raiseNvls(a.nvls, "available");
    else if (msg.find("NVLS multicast support is not available") != std::string::npos) raiseNvls(a.nvls, "not available");
    else if (msg.rfind("NVLS Head", 0) == 0 || msg.rfind("NVLS comm", 0) == 0) raiseNvls(a.nvls, "set up");
    else if (msg.rfind("NCCL_NVLS_ENABLE set by environment to 0", 0) == 0) raiseNvls(a.nvls, "disabled");
    else if (msg.find("use ring PXN 1") != std::string::npos) a.pxn = true;
  };
  auto log = parseNcclLog(text, onLine);
  a.version = log.version;
  a.warnings = log.warnings;
  a.nvlsChannels = log.nvlsChannels;
  for (const auto& g : log.graphTypes) {
    std::string intra = g.substr(0, g.find('/'));
    if (intra == "NVL") a.intraLink = "NVLink";
    else if (a.intraLink.empty() && (intra == "PIX" || intra == "PXB" || intra == "PHB" || intra == "SYS" || intra == "PCI"))
      a.intraLink = "PCIe";
  }
  if (log.nvlsChannels > 0) raiseNvls(a.nvls, "set up");
  else if (log.nvlsChannels == 0) raiseNvls(a.nvls, "not set up");
  static const std::regex kNetVia(R"(^NET/(.+?)/(\d+)(?:\((\d+)\))?((?:/[A-Za-z]+)*)$)");
  for (const auto& c : log.connections) {
    const std::string& via = c.via;
    const std::string& host = c.host;
    if (via.rfind("NET/", 0) == 0) {
      ++a.netConnections;
      std::smatch v;
      if (std::regex_match(via, v, kNetVia)) {
        if (a.net.empty()) a.net = v[1];
        a.nicsUsed[host].insert(std::stoi(v[2]));
        if (v[3].matched) a.pxn = true;
        bool gdr = v[4].str().find("/GDRDMA") != std::string::npos;
        if (gdr) ++a.gdrConnections;
        // The rank whose GPU's NIC carried it: this side of the connection (the sender of a send,
        // the receiver of a receive), or the PXN proxy rank named in brackets.
        int local = c.direction == "receive" ? c.to : c.from;
        int owner = v[3].matched ? std::stoi(v[3]) : local;
        auto& r = a.ranks[owner];
        if (r.host.empty() && !host.empty()) r.host = host;
        r.nics.insert(std::stoi(v[2]));
        (gdr ? r.gdr : r.noGdr) = true;
      } else {
        a.nicsUsed[host];
        if (usesGdrdma(via)) ++a.gdrConnections;
      }
    } else if (via.rfind("CollNet", 0) == 0) {
      // CollNet (SHARP) connections: neither intra-node nor a NET/... rail.
    } else {
      ++a.intraConnections;
      std::string key;
      if (via.rfind("SHM", 0) == 0 || via.find("shared memory") != std::string::npos) {
        key = "SHM";
      } else if (via.rfind("P2P", 0) == 0) {
        auto second = via.find('/', 4);
        key = second == std::string::npos ? via : via.substr(0, second);
      } else {
        key = via;
      }
      a.intra.insert(key);
    }
  }
  // Lines of two processes printed into one (an output table row glued to an INFO line) give a
  // host such as "-1gcn151": fold it into the host whose name it ends with.
  for (auto it = a.nicsUsed.begin(); it != a.nicsUsed.end();) {
    std::string into;
    for (const auto& [h, s] : a.nicsUsed)
      if (h != it->first && !h.empty() && it->first.size() > h.size() &&
          it->first.compare(it->first.size() - h.size(), h.size(), h) == 0)
        into = h;
    if (into.empty()) {
      ++it;
      continue;
    }
    a.nicsUsed[into].insert(it->second.begin(), it->second.end());
    it = a.nicsUsed.erase(it);
  }
  finishNics(a);
  return a;
}

void mergeNicUse(NcclAttestation& into, const std::map<std::string, std::set<int>>& nicsUsed) {
  for (const auto& [host, idx] : nicsUsed) into.nicsUsed[host].insert(idx.begin(), idx.end());
  finishNics(into);
}

bool isAttestRequirement(const std::string& r) {
  return r == "ib" || r == "roce" || r == "gdr" || r == "nvlink" || r.rfind("rails=", 0) == 0;
}

std::string requirementFormError(const std::string& r) {
  if (r == "ib" || r == "roce" || r == "gdr" || r == "nvlink") return {};
  if (r.rfind("rails=", 0) == 0) {
    std::string n = r.substr(6);
    int v = 0;
    auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
    if (n.empty() || ec != std::errc() || p != n.data() + n.size() || v < 1)
      return "--require " + r + ": N must be a whole number >= 1 (distinct NICs per node)";
    return {};
  }
  return "--require: unknown '" + r + "'";
}

std::string requirementError(const std::string& r, const NcclAttestation& a, int nvlinkBetweenGpus) {
  const std::string head = "--require " + r + ": ";
  if (r == "ib" || r == "roce") {
    const std::string want = r == "ib" ? "InfiniBand" : "RoCE";
    if (a.netConnections == 0)
      return head + "NCCL made no inter-node (NET) connection (intra-node: " + a.intraText() +
             "), so no " + want + " traffic; run on more than one node";
    if (a.interKind == r) return {};
    if (a.interKind == "socket")
      return head + "NCCL used NET/Socket (TCP) between nodes, not " + want +
             (a.hcas.empty() ? std::string() : " (interfaces " + a.hcasText() + ")");
    return head + "NCCL used NET/" + a.net + " (" + a.interKind + ") between nodes, not " + want +
           (a.hcas.empty() ? std::string() : " (NICs " + a.hcasText() + ")");
  }
  if (r == "gdr") {
    if (a.netConnections == 0) return head + "NCCL made no inter-node (NET) connection, so GPUDirect RDMA was not used";
    if (a.gdrConnections == a.netConnections) return {};
    return head + "GPUDirect RDMA on " + std::to_string(a.gdrConnections) + " of " + std::to_string(a.netConnections) +
           " NET connections (NET/" + a.net + ", " + a.interKind + ")";
  }
  if (r == "nvlink") {
    if (a.intraConnections == 0)
      return head + "NCCL made no intra-node connection (one GPU per node?), so NVLink carried nothing";
    for (const auto& t : a.intra)
      if (t.rfind("P2P", 0) != 0) return head + "NCCL used " + t + " inside a node (" + a.intraText() + "), not P2P over NVLink";
    bool nv = nvlinkBetweenGpus >= 0 ? nvlinkBetweenGpus == 1 : a.intraLink == "NVLink";
    if (!nv)
      return head + "NCCL used " + a.intraText() + (nvlinkBetweenGpus == 0 ? " but the GPUs have no NVLink between them (nvidia-smi topo -m)"
                                                                          : " and nothing shows it runs over NVLink");
    return {};
  }
  if (r.rfind("rails=", 0) == 0) {
    int want = std::stoi(r.substr(6));
    if (a.netConnections == 0) return head + "NCCL made no inter-node (NET) connection, so 0 rails were used";
    if (a.railsPerNode >= want) return {};
    return head + "NCCL used " + std::to_string(a.railsPerNode) + " distinct NIC" + (a.railsPerNode == 1 ? "" : "s") +
           " per node (" + a.hcasText() + "), fewer than " + std::to_string(want);
  }
  return requirementFormError(r);
}

}  // namespace fb::topo

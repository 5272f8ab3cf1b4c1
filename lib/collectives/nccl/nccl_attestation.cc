#include "collectives/nccl/nccl_attestation.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include <cuda_runtime_api.h>

#include "bootstrap/agree.h"
#include "core/error.h"
#include "core/text.h"
#include "doctor/nic_placement.h"
#include "topology/nccl_attest.h"
#include "topology/nccl_log.h"
#include "topology/nic_rate.h"

namespace fb::nccl {
namespace {

// This node's PCIe tree (GPUs, RDMA NICs, their bridges), read from sysfs once per process as
// topo::localTopology() is: every size's attestation compares against it.
const doctor::PcieMap& localPcieMap() {
  static const doctor::PcieMap map = doctor::readPcieMap(doctor::Machine("/"));
  return map;
}

}  // namespace

const topo::GpuInfo* smiGpuFor(int dev) {
  const auto& t = topo::localTopology();
  char bus[64] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), dev) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  std::string b = text::lower(bus);  // "0000:18:00.0"
  for (const auto& g : t.gpus) {
    std::string s = text::lower(g.busId);  // "00000000:18:00.0"
    if (s.size() >= 12 && b.size() >= 12 && s.substr(s.size() - 12) == b.substr(b.size() - 12)) return &g;
  }
  return nullptr;
}

namespace {

struct NominalRate {
  double gbps = -1;
  std::string basis;
};

NominalRate nominalFor(const std::string& path, int device, const std::vector<topo::RdmaPort>& rdma) {
  NominalRate n;
  const topo::GpuInfo* g = smiGpuFor(device);
  std::ostringstream os;
  if (path == "nvlink") {
    if (g && !g->nvlinkGBps.empty()) {
      n.gbps = g->nvlinkTotalGBps();
      os << g->nvlinkGBps.size() << " NVLink links x " << g->nvlinkGBps.front() << " GB/s ("
         << (topo::localTopology().nvlink.source == "nvml" ? "NVML" : "nvidia-smi nvlink -s") << ")";
    }
  } else if (path == "pcie" || path == "shm") {
    if (g && g->pcieGenMax > 0) {
      n.gbps = topo::pcieNominalGBps(g->pcieGenMax, g->pcieWidthMax);
      os << "PCIe Gen" << g->pcieGenMax << " x" << g->pcieWidthMax
         << (path == "shm" ? " (GPU to host memory and back: each GPU's PCIe link)" : "");
    }
  } else if (path == "ib" || path == "roce") {
    for (const auto& p : rdma)
      if (p.active() && p.linkLayer == (path == "ib" ? "InfiniBand" : "Ethernet")) {
        n.gbps = topo::rdmaRateGBps(p.rate);
        os << p.device << " port " << p.port << " " << p.rate;
        break;
      }
  } else {
    os << "no nominal rate (TCP sockets)";
  }
  n.basis = os.str();
  if (n.gbps <= 0) n.gbps = -1;
  return n;
}

}  // namespace

PathInfo attestPath(Bootstrap& bs, const CollectiveOptions& opts, const PathProfile& profile, int device,
                    NcclComm& comm, const CollShape& shape) {
  if (profile.name == "local") {  // one rank: no connection to attest, no link to rate
    PathInfo p;
    p.label = "local (1 rank, no link)";
    p.details = {{"profile", "local"},
                 {"attested", "not needed: one rank connects to nothing"},
                 {"nccl_version", ncclRuntimeVersion()},
                 {"cuda_device", std::to_string(device)}};
    p.setNominal(-1, "one rank: no link crossed, no nominal rate");
    return p;
  }
  std::string text = comm.logSinceInit();
  auto log = topo::parseNcclLog(text);
  const int rank = bs.rank();
  bool nvlink = false;
  {
    // NVLink between this rank's GPU and its ring neighbours' GPUs (same host).
    const auto& t = topo::localTopology();
    const topo::GpuInfo* me = smiGpuFor(device);
    auto all = bs.allGatherStrings(me ? std::to_string(me->index) + "@" + bs.hostname() : "?");
    nvlink = me != nullptr;
    for (int peer : {(rank + 1) % bs.size(), (rank - 1 + bs.size()) % bs.size()}) {
      const auto& s = all[peer];
      auto at = s.find('@');
      if (!me || at == std::string::npos || s.substr(at + 1) != bs.hostname()) {
        nvlink = false;
        continue;
      }
      int idx = std::stoi(s.substr(0, at));
      if (idx != me->index && !t.nvlinkBetween(me->index, idx)) nvlink = false;
    }
  }
  std::string err;
  if (text.empty())
    err = "forced path " + profile.name + " but NCCL wrote no INFO log to " +
          (comm.logPath().empty() ? std::string("(no NCCL_DEBUG_FILE)") : comm.logPath()) +
          ", so the path cannot be attested";
  else
    err = attestationError(profile, log, rank, nvlink);
  agreeOn(bs, "nccl path attestation", err.empty() ? StepVerdict::kOk : StepVerdict::kFailed,
          identity() + " " + err + " (NCCL log " + comm.logPath() + ")");

  // The attestation: how NCCL moved the data (intra-node, NET, NICs/rails, GDRDMA, PXN, NVLS).
  const auto& topoInfo = topo::localTopology();
  auto att = topo::attestNcclLog(text);
  // Rails: the NICs every rank of a node used, from every rank's own log.
  {
    std::string mine = bs.hostname() + "|";
    for (const auto& [host, idx] : att.nicsUsed)
      for (int i : idx) mine += std::to_string(i) + ",";
    std::map<std::string, std::set<int>> used;
    for (const auto& s : bs.allGatherStrings(mine)) {
      auto bar = s.find('|');
      auto& set = used[s.substr(0, bar)];
      std::stringstream ss(s.substr(bar + 1));
      for (std::string x; std::getline(ss, x, ',');)
        if (!x.empty()) set.insert(std::stoi(x));
    }
    att.nicsUsed.clear();
    for (auto& [h, set] : used)
      if (!set.empty()) att.nicsUsed[h] = set;
    topo::mergeNicUse(att, {});
  }
  // NVLink between this rank's GPU and the other GPUs of its node (nvidia-smi), for the P2P link.
  int nvlinkLocal = -1;
  {
    const topo::GpuInfo* me = smiGpuFor(device);
    auto all = bs.allGatherStrings(me ? std::to_string(me->index) + "@" + bs.hostname() : "?");
    for (int peer = 0; peer < bs.size(); ++peer) {
      if (peer == rank) continue;
      const auto& s = all[peer];
      auto at = s.find('@');
      if (!me || at == std::string::npos || s.substr(at + 1) != bs.hostname()) continue;
      int idx = std::stoi(s.substr(0, at));
      bool nv = idx == me->index || topoInfo.nvlinkBetween(me->index, idx);
      nvlinkLocal = nvlinkLocal == 0 ? 0 : (nv ? 1 : 0);
    }
  }
  if (nvlinkLocal >= 0 && att.intraLink.empty()) att.intraLink = nvlinkLocal == 1 ? "NVLink" : "PCIe";
  // --require (and ib/roce on more than one node): the attestation must hold on every rank.
  {
    std::vector<std::string> reqs = opts.require;
    if (!profile.requireNet.empty() &&
        std::find(reqs.begin(), reqs.end(), profile.requireNet) == reqs.end())
      reqs.insert(reqs.begin(), profile.requireNet);
    std::string why;
    for (const auto& r : reqs) {
      why = topo::requirementError(r, att, nvlinkLocal);
      if (!why.empty()) {
        if (!profile.requireNet.empty() && r == profile.requireNet && r != "" &&
            std::find(opts.require.begin(), opts.require.end(), r) == opts.require.end())
          why = "--require " + r + " (implied by --path " + profile.name + ")" + why.substr(why.find(':'));
        break;
      }
    }
    auto all = bs.allGatherStrings(why);
    for (int r = 0; r < bs.size(); ++r)
      if (!all[r].empty())
        FB_THROW(UnavailableError, all[r], " (rank ", r, "; NCCL log ", comm.logPath(), ")");
  }

  auto nominal = nominalFor(profile.name, device, topoInfo.rdma);
  std::string warning;
  if (profile.training) {
    nominal = {-1, "no nominal rate (NCCL chose the links)"};
    if (att.netConnections > 0 && att.interKind != "socket") {
      // One rail: the slowest of the RDMA ports NCCL used that this host has.
      double rate = -1;
      std::string basis;
      for (const auto& h : att.hcas)
        for (const auto& port : topoInfo.rdma)
          if (h == port.device + ":" + std::to_string(port.port) && (rate < 0 || topo::rdmaRateGBps(port.rate) < rate)) {
            rate = topo::rdmaRateGBps(port.rate);
            basis = "one rail: " + port.device + " port " + std::to_string(port.port) + " " + port.rate;
          }
      if (rate > 0) nominal = {rate, basis};
    }
    // Every rank checks its own GPU's NIC against this node's PCIe tree (GPUs crossing root
    // complexes, GPUDirect RDMA possible but unused, sockets while an RDMA port is up); the row
    // names what any rank found.
    const char* gdrLevel = std::getenv("NCCL_NET_GDR_LEVEL");
    std::string mine;
    for (const auto& w : doctor::ncclPlacementWarnings(att, "", localPcieMap(),
                                                       bs.nodeCount(), gdrLevel ? gdrLevel : ""))
      mine += w + "\n";
    std::vector<std::string> seen;
    for (const auto& s : bs.allGatherStrings(mine)) {
      std::stringstream ss(s);
      for (std::string w; std::getline(ss, w);)
        if (!w.empty() && std::find(seen.begin(), seen.end(), w) == seen.end()) seen.push_back(w);
    }
    for (const auto& w : seen) warning += (warning.empty() ? "" : "; ") + w;
  }
  if (profile.name == "socket") {
    // NCCL's sockets: through loopback when every rank is on this host, else the NICs NCCL uses.
    if (bs.nodeCount() == 1) {
      nominal = {-1, "same host (loopback path), no nominal rate"};
    } else {
      nominal = {-1, "NCCL's socket interface not found in its log"};
      double sum = 0;
      std::string basis;
      for (const auto& ifname : log.socketInterfaces) {
        auto r = topo::nicRate(ifname);
        basis += (basis.empty() ? "" : " + ") + r.basis;
        sum = r.gbps > 0 && sum >= 0 ? sum + r.gbps : -1;
      }
      if (!log.socketInterfaces.empty()) nominal = {sum > 0 ? sum : -1, basis};
    }
  }
  // Algorithm, protocol and channels of this size's warm-up: our profiler plugin, else NCCL's
  // TUNING lines (rank 0's log).
  std::string algo, proto, algoChannels, algoSource;
  {
    bool loaded = false;
    std::string rec = takeProfilerRecords(rank, &loaded);
    std::string last, lastP2p;
    int p2pChannels = -1;
    std::stringstream ss(rec);
    for (std::string l; std::getline(ss, l);) {
      if (l.find(" coll ") != std::string::npos) last = l;
      if (l.find(" p2p ") != std::string::npos) {
        lastP2p = l;
        auto k = l.find("nchannels ");
        if (k != std::string::npos) p2pChannels = std::max(p2pChannels, std::stoi(l.substr(k + 10)));
      }
    }
    auto field = [](const std::string& l, const std::string& key) {
      auto k = l.find(" " + key + " ");
      if (k == std::string::npos) return std::string();
      auto b = k + key.size() + 2;
      return l.substr(b, l.find(' ', b) - b);
    };
    if (!last.empty()) {
      algo = field(last, "algo");
      proto = field(last, "proto");
      algoChannels = field(last, "nchannels");
      algoSource = "profiler plugin (NCCL collective event)";
    } else if (!lastP2p.empty()) {
      algo = "p2p";
      proto = "";
      algoChannels = std::to_string(p2pChannels);
      algoSource = "profiler plugin (NCCL send/recv events: no algorithm or protocol)";
    } else if (!att.tuning.empty()) {
      const topo::NcclTuning* t = &att.tuning.back();
      for (const auto& x : att.tuning)
        if (x.bytes == static_cast<long long>(shape.paramCount * dtypeSize(shape.dtype))) t = &x;
      algo = t->algo;
      proto = t->proto;
      algoChannels = t->channels >= 0 ? std::to_string(t->channels) : "";
      algoSource = "NCCL TUNING debug line";
    } else {
      algoSource = loaded ? "none: the plugin recorded nothing for this operation"
                          : "none (" + profilerStatus() + (rank != 0 ? "; TUNING lines are rank 0's only" : "") + ")";
    }
  }

  PathInfo p;
  const int channels = log.connectedChannels(rank);
  std::set<std::string> vias;
  for (const auto& c : log.connectionsOf(rank)) vias.insert(c.via);
  std::string viaText;
  for (const auto& v : vias) viaText += (viaText.empty() ? "" : "+") + v;
  p.label = profile.name + " " + viaText + " x" + std::to_string(channels) + "ch";
  auto add = [&](const std::string& k, const std::string& v) { p.details.emplace_back(k, v); };
  add("profile", profile.name);
  std::string envs;
  for (const auto& [k, v] : profile.env) envs += (envs.empty() ? "" : " ") + k + "=" + v;
  if (profile.training) envs = "(nothing forced: the site's NCCL_* settings as they are)";
  // NVLS is the site's choice: shown as the environment had it, never set by fabricbench.
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  add("profile_env", envs + (nvls ? std::string(" NCCL_NVLS_ENABLE=") + nvls + " (site)" : std::string()));
  add("site_env", siteNcclEnv());
  if (profile.training)
    add("attested", "yes: NCCL's own choice, as a training job (" + std::string(opts.require.empty() && profile.requireNet.empty() ? "no --require" : "every --require holds") + ")");
  else
    add("attested", "yes: every connection of rank " + std::to_string(rank) + " via " + profile.family);
  add("transports", log.transportsText(rank));
  // Attestation columns (table.csv / run.json): intra, inter, nics, rails, gdr, pxn, nvls.
  add("intra", att.intraText());
  add("inter", att.netConnections > 0 ? att.interKind : "none");
  add("inter_detail", att.netText());
  if (!att.netPlugin.empty()) add("net_plugin", att.netPlugin);
  add("nics", att.hcasText());
  add("rails", att.railsPerNode > 0 ? std::to_string(att.railsPerNode) : "");
  add("gdr", att.gdr());
  add("pxn", att.netConnections > 0 ? (att.pxn ? "yes" : "no") : "");
  add("nvls", att.nvls);
  if (!warning.empty()) add("warning", warning);
  add("algo", algo);
  add("proto", proto);
  add("algo_channels", algoChannels);
  add("algo_source", algoSource);
  add("channels", std::to_string(channels));
  if (log.collChannels >= 0) add("coll_channels", std::to_string(log.collChannels));
  if (log.p2pChannels >= 0) add("p2p_channels", std::to_string(log.p2pChannels));
  if (!log.graphTypes.empty()) {
    std::string g;
    for (const auto& x : log.graphTypes) g += (g.empty() ? "" : ",") + x;
    add("graph_types", g);
  }
  if (!log.network.empty()) add("network", att.net.empty() ? log.network : att.net);
  add("nccl_version", log.version.empty() ? ncclRuntimeVersion() : log.version);
  p.setNominal(nominal.gbps, nominal.basis);
  add("cuda_device", std::to_string(device));
  if (const auto* g = smiGpuFor(device)) add("gpu", g->name + " " + g->busId);
  add("nccl_log", comm.logPath());
  return p;
}

}  // namespace fb::nccl

#include "gpu/nccl/path_profile.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <unistd.h>

#include "core/error.h"

namespace fb::nccl {
namespace {

std::mutex gMutex;
std::string gActive;
std::vector<std::pair<std::string, std::string>> gActiveEnv;
std::string gLogPath;
bool gLogInit = false;

const topo::RdmaPort* pickPort(const std::vector<topo::RdmaPort>& rdma, const std::string& layer) {
  for (const auto& p : rdma)
    if (p.linkLayer == layer && p.active()) return &p;
  return nullptr;
}

}  // namespace

const std::vector<std::string>& pathNames() {
  // "local": one rank on one GPU (no link crossed; NCCL's kernels and launch cost alone).
  static const std::vector<std::string> k = {"nvlink", "pcie", "shm", "socket", "ib", "roce", "local"};
  return k;
}

bool isPathName(const std::string& name) {
  for (const auto& n : pathNames())
    if (n == name) return true;
  return false;
}

PathProfile makeProfile(const std::string& name, const std::vector<topo::RdmaPort>& rdma) {
  PathProfile p;
  p.name = name;
  if (name == "nvlink" || name == "pcie") {
    // P2P between the GPUs; whether it runs over NVLink or PCIe is the hardware's wiring, which
    // the attestation checks against the topology. SHM and NET stay allowed so that a silent
    // fallback is visible in the log (and fails the row) instead of being hidden.
    p.env = {{"NCCL_P2P_LEVEL", "SYS"}};
    p.family = "P2P";
  } else if (name == "shm") {
    p.env = {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "0"}};
    p.family = "SHM";
  } else if (name == "socket") {
    p.env = {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}, {"NCCL_NET", "Socket"},
             {"NCCL_IB_DISABLE", "1"}};
    p.family = "NET/Socket";
  } else if (name == "ib" || name == "roce") {
    const auto* port = pickPort(rdma, name == "ib" ? "InfiniBand" : "Ethernet");
    if (!port)
      FB_THROW(UnavailableError, "path ", name, ": no active RDMA port with link layer ",
               name == "ib" ? "InfiniBand" : "Ethernet");
    p.env = {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}, {"NCCL_NET", "IB"},
             {"NCCL_IB_DISABLE", "0"},
             {"NCCL_IB_HCA", "=" + port->device + ":" + std::to_string(port->port)}};
    if (name == "roce") {
      if (port->roceV2GidIndex < 0)
        FB_THROW(UnavailableError, "path roce: ", port->device, " port ", port->port,
                 " has no RoCE v2 GID with an IPv4 address");
      p.env.push_back({"NCCL_IB_GID_INDEX", std::to_string(port->roceV2GidIndex)});
    }
    p.family = "NET/IB";
  } else if (name == "local") {
    p.family = "local";  // nothing forced: one rank connects to nothing
  } else {
    FB_THROW(ConfigError, "unknown NCCL path '", name, "' (expected auto, nvlink, pcie, shm, socket, ib, roce or local)");
  }
  return p;
}

std::string enableNcclLogging(const std::string& logDir) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gLogInit) return gLogPath;
  gLogInit = true;
  setenv("NCCL_DEBUG", "INFO", 1);
  // 2.28 prints channel connections under INIT/P2P, SHM and NET details under their own
  // subsystems, the graph search under GRAPH and the variables it read under ENV.
  setenv("NCCL_DEBUG_SUBSYS", "INIT,GRAPH,ENV,NET,P2P,SHM", 1);
  const char* user = getenv("NCCL_DEBUG_FILE");
  std::string pattern;
  if (user && *user) {
    pattern = user;
  } else {
    std::string dir = logDir;
    if (dir.empty()) dir = (std::filesystem::temp_directory_path() / "fabricbench-nccl").string();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    pattern = dir + "/nccl.%h.%p.log";
    setenv("NCCL_DEBUG_FILE", pattern.c_str(), 1);
  }
  // Resolve %h and %p as NCCL does (hostname up to the first '.', pid).
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string h = host;
  if (auto dot = h.find('.'); dot != std::string::npos) h = h.substr(0, dot);
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[i + 1];
      if (c == 'h') { out += h; ++i; continue; }
      if (c == 'p') { out += std::to_string(getpid()); ++i; continue; }
      if (c == '%') { out += '%'; ++i; continue; }
    }
    out += pattern[i];
  }
  gLogPath = out;
  return gLogPath;
}

void activateProfile(const PathProfile& p) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gActive.empty()) {
    if (gActive == p.name) return;
    FB_THROW(UnavailableError, "NCCL path ", p.name, " cannot be forced in this process: NCCL reads its path settings once "
             "per process and this one already forced ", gActive, "; run --path=", p.name, " in its own fabricbench run");
  }
  for (const auto& [k, v] : p.env) setenv(k.c_str(), v.c_str(), 1);
  gActive = p.name;
  gActiveEnv = p.env;
}

std::string activeProfileName() {
  std::lock_guard<std::mutex> lock(gMutex);
  return gActive;
}

std::string attestationError(const PathProfile& p, const topo::NcclLogSummary& log, int rank,
                             bool nvlinkBetweenGpus) {
  auto conns = log.connectionsOf(rank);
  if (conns.empty())
    return "forced path " + p.name + " but NCCL's log shows no channel connection for rank " + std::to_string(rank);
  std::string used;
  for (const auto& c : conns) {
    if (topo::transportFamily(c.via) != p.family) {
      used = c.via;
      break;
    }
  }
  if (!used.empty()) return "forced path " + p.name + " but NCCL used " + used + " (" + log.transportsText(rank) + ")";
  if (p.name == "nvlink" && !nvlinkBetweenGpus)
    return "forced path nvlink but NCCL used P2P over PCIe (no NVLink between the GPUs: nvidia-smi topo -m)";
  if (p.name == "pcie" && nvlinkBetweenGpus)
    return "forced path pcie but NCCL used P2P over NVLink (the GPUs are NVLink-connected: nvidia-smi topo -m)";
  return {};
}

}  // namespace fb::nccl

// The run fingerprint, read from /proc, /sys, /etc (under a root a test can fake), from the machine
// inventory (RDMA devices, GPUs: lib/topology/inventory.h) and from ethtool and git when present
// (each under a time-out).
#include "core/text.h"
#include "report/fingerprint.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/config.h"
#include "core/process.h"
#include "topology/inventory.h"

extern char** environ;

#ifndef FB_GIT_REV
#define FB_GIT_REV ""
#endif
#ifndef FB_BUILD_TYPE
#define FB_BUILD_TYPE ""
#endif

namespace fb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Whole file, or "" when it can't be read (sysfs attributes such as speed fail with EINVAL on
// a link that is down: that is "unknown", not an error).
std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return "";
  return ss.str();
}
std::string readLine(const fs::path& p) { return text::trim(readFile(p)); }

fs::path under(const std::string& root, const std::string& abs) {
  if (root.empty() || root == "/") return fs::path(abs);
  return fs::path(root) / abs.substr(1);
}

json intOrNull(const std::string& s) {
  if (s.empty()) return json();
  try {
    std::size_t pos = 0;
    long long v = std::stoll(s, &pos);
    if (pos != s.size()) return json(s);
    return json(v);
  } catch (...) {
    return json(s);
  }
}

json readCpu(const std::string& root) {
  std::ifstream in(under(root, "/proc/cpuinfo"));
  json cpu = json::object();
  int logical = 0;
  std::set<std::string> sockets;
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, model, physId;
  std::map<std::string, std::string> firstBlock;  // ARM: "CPU implementer", "CPU part"
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string k = text::trim(line.substr(0, colon)), v = text::trim(line.substr(colon + 1));
    if (k == "processor") ++logical;
    else if (k == "model name" && model.empty()) model = v;
    else if (k == "physical id") {
      physId = v;
      sockets.insert(v);
    } else if (k == "core id") cores.insert({physId, v});
    if ((k == "CPU implementer" || k == "CPU part" || k == "Hardware") && !firstBlock.count(k)) firstBlock[k] = v;
  }
  if (model.empty() && !firstBlock.empty()) {
    for (auto& [k, v] : firstBlock) model += (model.empty() ? "" : " ") + k + " " + v;
  }
  cpu["model"] = model.empty() ? json() : json(model);
  cpu["logical_cpus"] = logical;
  if (!sockets.empty()) cpu["sockets"] = sockets.size();
  if (!cores.empty()) cpu["physical_cores"] = cores.size();
  return cpu;
}

json readMemBytes(const std::string& root) {
  std::ifstream in(under(root, "/proc/meminfo"));
  std::string k;
  long long v;
  std::string unit;
  while (in >> k >> v) {
    std::getline(in, unit);
    if (k == "MemTotal:") return json(v * 1024);
  }
  return json();
}

std::string readOs(const std::string& root) {
  std::ifstream in(under(root, "/etc/os-release"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "";
}

std::map<std::string, std::vector<std::string>> localIpv4() {
  std::map<std::string, std::vector<std::string>> out;
  ifaddrs* ifa = nullptr;
  if (::getifaddrs(&ifa) != 0) return out;
  for (ifaddrs* p = ifa; p; p = p->ifa_next) {
    if (!p->ifa_addr || p->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN];
    auto* sin = reinterpret_cast<sockaddr_in*>(p->ifa_addr);
    if (::inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf)) out[p->ifa_name].push_back(buf);
  }
  ::freeifaddrs(ifa);
  return out;
}

std::string ethtoolFirmware(const std::string& nic, const FingerprintOptions& o) {
  static const bool have = !findInPath("ethtool").empty();
  if (!have) return "";
  auto r = runCommand({"ethtool", "-i", nic}, std::min(o.commandTimeout, std::chrono::milliseconds(2000)));
  if (!r.ok()) return "";
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("firmware-version:", 0) == 0) return text::trim(line.substr(17));
  return "";
}

json readNics(const FingerprintOptions& o) {
  json nics = json::object();
  fs::path base = under(o.root, "/sys/class/net");
  std::error_code ec;
  if (!fs::is_directory(base, ec)) return nics;
  bool real = o.root.empty() || o.root == "/";
  auto ips = real ? localIpv4() : std::map<std::string, std::vector<std::string>>{};
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator(base, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    fs::path d = base / name;
    json n = json::object();
    n["operstate"] = readLine(d / "operstate");
    json speed = intOrNull(readLine(d / "speed"));
    if (speed.is_number() && speed.get<long long>() < 0) speed = json();  // -1: unknown
    n["speed_mbps"] = speed;
    n["mtu"] = intOrNull(readLine(d / "mtu"));
    n["mac"] = readLine(d / "address");
    bool isVirtual = !fs::exists(d / "device", ec);
    n["virtual"] = isVirtual;
    fs::path drv = d / "device" / "driver";
    if (fs::is_symlink(drv, ec)) {
      n["driver"] = fs::read_symlink(drv, ec).filename().string();
    } else {
      n["driver"] = json();
    }
    n["ipv4"] = ips.count(name) ? json(ips[name]) : json::array();
    std::string fw = readLine(d / "device" / "firmware_version");  // some drivers expose it
    if (fw.empty() && o.runCommands && !isVirtual && name != "lo") fw = ethtoolFirmware(name, o);
    n["firmware"] = fw.empty() ? json() : json(fw);
    nics[name] = n;
  }
  return nics;
}

json readRdma(const std::string& root) {
  json out = json::object();
  for (const auto& d : topo::readRdma(topo::Machine(root))) {
    json dev = json::object();
    dev["fw_ver"] = d.fwVer;
    dev["hca_type"] = d.hcaType;
    dev["board_id"] = d.boardId;
    dev["node_type"] = d.nodeType;
    json ports = json::object();
    for (const auto& p : d.ports)
      ports[std::to_string(p.port)] = {
          {"state", p.state}, {"phys_state", p.physState}, {"rate", p.rate}, {"link_layer", p.linkLayer}};
    dev["ports"] = ports;
    dev["netdevs"] = d.netdevs;
    out[d.name] = dev;
  }
  return out;
}

std::vector<std::string> splitCsvSimple(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  std::istringstream in(line);
  while (std::getline(in, cur, ',')) f.push_back(text::trim(cur));
  return f;
}

json gpuJson(const std::vector<std::string>& v);

void readGpus(const FingerprintOptions& o, json& fp) {
  fp["gpus"] = json::array();
  std::string proc = readLine(under(o.root, "/proc/driver/nvidia/version"));
  if (!proc.empty()) fp["nvidia_proc_version"] = proc.substr(0, proc.find('\n'));
  if (!o.runCommands) {
    fp["gpu_query"] = "not queried";
    return;
  }
  topo::GpuInventory inv = topo::readGpus(topo::Machine(o.root), topo::GpuSource::kAuto, o.commandTimeout);
  fp["gpu_source"] = inv.source.empty() ? "none" : inv.source;
  if (!inv.nvmlWhy.empty()) fp["gpu_source_why"] = "NVML: " + inv.nvmlWhy;
  if (inv.source.empty()) {
    fp["gpu_query"] = !inv.smiFound ? std::string("nvidia-smi not found") : "nvidia-smi failed: " + inv.smiError;
    return;
  }
  for (const auto& g : inv.gpus)
    fp["gpus"].push_back(gpuJson({g.index, g.name, g.uuid, g.busId, g.memoryMib, g.driverVersion, g.vbiosVersion,
                                  g.pcieGenMax, g.pcieWidthMax}));
  if (!fp["gpus"].empty()) fp["gpu_driver"] = fp["gpus"][0]["driver_version"];
  fp["gpu_query"] = inv.source;
}

// The nvidiaSmiQueryFields() values of one GPU -> its JSON object.
json gpuJson(const std::vector<std::string>& v) {
  return {{"index", intOrNull(v[0])},
          {"name", v[1]},
          {"uuid", v[2]},
          {"pci_bus_id", v[3]},
          {"memory_mib", intOrNull(v[4])},
          {"driver_version", v[5]},
          {"vbios_version", v[6]},
          {"pcie_gen_max", intOrNull(v[7])},
          {"pcie_width_max", intOrNull(v[8])}};
}

}  // namespace

std::string nvidiaSmiQueryFields() {
  return "index,name,uuid,pci.bus_id,memory.total,driver_version,vbios_version,pcie.link.gen.max,"
         "pcie.link.width.max";
}

json parseNvidiaSmiGpus(const std::string& csv) {
  json gpus = json::array();
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line)) {
    if (text::trim(line).empty()) continue;
    auto v = splitCsvSimple(line);
    if (v.size() != 9) continue;  // a GPU name with a comma would land here: skipped, not misread
    gpus.push_back(gpuJson(v));
  }
  return gpus;
}

namespace {

json readGit(const FingerprintOptions& o) {
  json g = json::object();
  if (o.runCommands && !findInPath("git").empty()) {
    auto rev = runCommand({"git", "-C", FB_SOURCE_DIR, "rev-parse", "HEAD"}, o.commandTimeout);
    if (rev.ok() && !text::trim(rev.out).empty()) {
      g["rev"] = text::trim(rev.out);
      // --no-optional-locks: a git status killed by the time-out must not leave .git/index.lock behind
      auto st = runCommand({"git", "--no-optional-locks", "-C", FB_SOURCE_DIR, "status", "--porcelain", "--untracked-files=no"},
                           o.commandTimeout);
      g["dirty"] = st.ok() ? json(!text::trim(st.out).empty()) : json();
      g["source"] = "git";
      return g;
    }
  }
  g["rev"] = std::string(FB_GIT_REV).empty() ? json() : json(FB_GIT_REV);
  g["dirty"] = json();
  g["source"] = "configure time (git not run)";
  return g;
}

}  // namespace

json filterEnvironment(const std::vector<std::pair<std::string, std::string>>& env) {
  static const char* kPrefixes[] = {"NCCL_", "OMPI_", "OPAL_", "PMIX_", "PMI_", "UCX_", "SLURM_", "CUDA_",
                                    "NVIDIA_", "FB_", "IBV_", "RDMAV_", "MLX5_", "HCOLL_"};
  static const char* kSecret[] = {"TOKEN", "SECRET", "KEY", "PASS", "CRED", "AUTH"};
  json out = json::object();
  for (const auto& [name, value] : env) {
    bool keep = name == "LD_LIBRARY_PATH";
    for (auto* p : kPrefixes)
      if (name.rfind(p, 0) == 0) keep = true;
    if (!keep) continue;
    std::string upper = name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    bool secret = false;
    for (auto* s : kSecret)
      if (upper.find(s) != std::string::npos) secret = true;
    if (!secret) out[name] = value;
  }
  return out;
}

json mergeRdmaDiscovery(json rdma, const json& discovery) {
  if (!rdma.is_object() || (rdma.contains("devices") && rdma["devices"].is_array())) rdma = json::object();
  if (!discovery.is_object() || !discovery.contains("devices") || !discovery["devices"].is_array()) return rdma;
  auto empty = [](const json& o, const char* k) {
    return !o.contains(k) || o[k].is_null() || (o[k].is_string() && o[k].get<std::string>().empty());
  };
  for (const auto& d : discovery["devices"]) {
    if (!d.is_object() || !d.contains("name") || !d["name"].is_string()) continue;
    json& e = rdma[d["name"].get<std::string>()];
    if (!e.is_object()) e = json::object();
    for (const char* k : {"fw_ver", "node_type", "board_id"})
      if (empty(e, k) && d.contains(k)) e[k] = d[k];
    for (const char* k : {"node_guid", "gpudirect"})
      if (d.contains(k)) e[k] = d[k];
    if (!e.contains("ports") || !e["ports"].is_object()) e["ports"] = json::object();
    if (!d.contains("ports") || !d["ports"].is_array()) continue;
    for (const auto& p : d["ports"]) {
      if (!p.is_object() || !p.contains("port")) continue;
      std::string key = p["port"].is_number() ? std::to_string(p["port"].get<long long>()) : p["port"].dump();
      json& pe = e["ports"][key];
      if (!pe.is_object()) pe = json::object();
      for (const char* k : {"state", "rate", "link_layer"})
        if (empty(pe, k) && p.contains(k)) pe[k] = p[k];
      for (const char* k : {"active_mtu", "max_mtu", "rate_gbps", "lid", "gid_table_len", "gids"})
        if (p.contains(k)) pe[k] = p[k];
    }
  }
  return rdma;
}

json collectLocalFingerprint(const FingerprintOptions& o) {
  json fp = json::object();
  bool real = o.root.empty() || o.root == "/";
  std::string host = readLine(under(o.root, "/proc/sys/kernel/hostname"));
  if (host.empty() && real) {
    char buf[256] = {0};
    if (::gethostname(buf, sizeof buf - 1) == 0) host = buf;
  }
  fp["hostname"] = host;
  std::string kernel = readLine(under(o.root, "/proc/sys/kernel/osrelease"));
  std::string machine;
  if (real) {
    utsname u{};
    if (::uname(&u) == 0) {
      if (kernel.empty()) kernel = u.release;
      machine = u.machine;
    }
  }
  fp["kernel"] = kernel;
  fp["kernel_version"] = readLine(under(o.root, "/proc/sys/kernel/version"));
  if (!machine.empty()) fp["machine"] = machine;
  fp["os"] = readOs(o.root);
  fp["cpu"] = readCpu(o.root);
  fp["memory_bytes"] = readMemBytes(o.root);
  fp["nics"] = readNics(o);
  fp["rdma"] = readRdma(o.root);
  if (o.rdmaDiscovery.is_object()) {
    fp["rdma"] = mergeRdmaDiscovery(fp["rdma"], o.rdmaDiscovery);
    json sel = json::object();
    for (const char* k : {"selected", "error"})
      if (o.rdmaDiscovery.contains(k)) sel[k] = o.rdmaDiscovery[k];
    fp["rdma_selection"] = sel;
  }
  readGpus(o, fp);
  fp["gpu_count"] = fp["gpus"].size();
  if (!fp.contains("gpu_driver")) fp["gpu_driver"] = json();
  fp["compiler"] = FB_CXX_COMPILER;
  fp["build"] = {{"fabricbench_version", FB_VERSION},
                 {"build_type", FB_BUILD_TYPE},
                 {"cuda", FB_HAVE_CUDA != 0},
                 {"nccl", FB_HAVE_NCCL != 0},
                 {"verbs", FB_HAVE_VERBS != 0},
                 {"cuda_compiler", FB_CUDA_COMPILER_VERSION}};
  fp["git"] = readGit(o);
  fp["mpi_version"] = o.mpiVersion.empty() ? json() : json(text::trim(o.mpiVersion));
  std::vector<std::pair<std::string, std::string>> env = o.env;
  if (env.empty())
    for (char** e = environ; e && *e; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
  fp["env"] = filterEnvironment(env);
  if (o.extra.is_object())
    for (auto& [k, v] : o.extra.items()) fp[k] = v;
  // Invalid UTF-8 (an environment value, a sysfs string) would make every later dump() throw:
  // replace it here, once, so callers can dump() the fingerprint with the defaults.
  return json::parse(fp.dump(-1, ' ', false, json::error_handler_t::replace));
}

json collectLocalFingerprint() { return collectLocalFingerprint(FingerprintOptions{}); }

}  // namespace fb

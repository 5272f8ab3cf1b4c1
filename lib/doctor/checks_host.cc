// Host checks: memlock, cgroup rdma.max, /dev/shm; software versions; NCCL_*/OMPI_* variables.
#include <arpa/inet.h>

#include <regex>

#include "doctor/doctor.h"
#include "doctor/util.h"

namespace fb::doctor {
using namespace util;

namespace {

std::string bytesText(std::uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", b / double(1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%llu KiB", static_cast<unsigned long long>(b >> 10));
  return buf;
}

bool inCidr(const std::string& ip, const std::string& cidr) {
  auto slash = cidr.find('/');
  if (slash == std::string::npos) return false;
  in_addr a{}, n{};
  if (inet_pton(AF_INET, ip.c_str(), &a) != 1 || inet_pton(AF_INET, cidr.substr(0, slash).c_str(), &n) != 1) return false;
  int bits = std::atoi(cidr.c_str() + slash + 1);
  std::uint32_t mask = bits <= 0 ? 0 : bits >= 32 ? 0xffffffffu : ~((1u << (32 - bits)) - 1);
  return (ntohl(a.s_addr) & mask) == (ntohl(n.s_addr) & mask);
}

}  // namespace

void checkLimits(const Machine& m, NodeReport& r) {
  bool rdma = !rdmaDevices(m).empty();
  // ---- memlock
  {
    std::string src = "/proc/self/limits (Max locked memory = ulimit -l of this rank)";
    auto t = m.read("/proc/self/limits");
    std::string soft;
    if (t)
      for (const auto& l : lines(*t))
        if (startsWith(l, "Max locked memory")) {
          auto f = split(l.substr(17), ' ');
          if (!f.empty()) soft = f[0];
        }
    if (soft.empty()) {
      add(r, "limits.memlock", Verdict::kSkip, "/proc/self/limits unreadable", src);
    } else if (soft == "unlimited") {
      add(r, "limits.memlock", Verdict::kPass, "memlock unlimited", src);
    } else {
      std::uint64_t b = std::stoull(soft);
      bool root = m.uid() == 0;
      std::string ev = "memlock " + bytesText(b) + " (" + soft + " bytes)" +
                       (root ? "; running as root (CAP_IPC_LOCK usually lifts the limit for registration)" : "");
      std::string fix = "ulimit -l unlimited for jobs: /etc/security/limits.conf '* - memlock unlimited', Slurm "
                        "PropagateResourceLimits / slurmd LimitMEMLOCK=infinity, containers --ulimit memlock=-1";
      if (rdma && !root && b < (64ull << 20))
        add(r, "limits.memlock", Verdict::kFail, ev + ": RDMA registration of larger buffers fails", src, fix);
      else
        add(r, "limits.memlock", Verdict::kWarn,
            ev + (rdma ? ": RDMA registration is capped" : ": caps RDMA registration once an RDMA NIC is used"), src, fix);
    }
  }
  // ---- cgroup rdma.max along the job's cgroup path
  {
    std::string src = "/proc/self/cgroup -> /sys/fs/cgroup/<path>/rdma.{max,current} (v2) or /sys/fs/cgroup/rdma/<path> (v1)";
    auto t = m.read("/proc/self/cgroup");
    if (!t) {
      add(r, "limits.cgroup_rdma", Verdict::kSkip, "/proc/self/cgroup unreadable", src);
    } else {
      std::vector<std::string> files;
      for (const auto& l : lines(*t)) {
        auto f = split(l, ':');
        std::string path = l.substr(l.rfind(':') + 1);
        std::string base;
        if (startsWith(l, "0::")) base = "/sys/fs/cgroup";
        else if (l.find(":rdma:") != std::string::npos) base = "/sys/fs/cgroup/rdma";
        else continue;
        // the cgroup and each ancestor
        std::string p = path;
        while (true) {
          std::string f2 = base + (p == "/" ? "" : p) + "/rdma.max";
          if (m.exists(f2)) files.push_back(f2);
          if (p == "/" || p.empty()) break;
          p = p.substr(0, p.rfind('/'));
          if (p.empty()) p = "/";
        }
      }
      std::vector<std::string> limits, seen;
      for (const auto& f : files) {
        std::string c = trim(m.read(f).value_or(""));
        seen.push_back(f + (c.empty() ? " (empty: no limit)" : ": " + c));
        for (const auto& l : lines(c))
          if (l.find("hca_handle=max") == std::string::npos || l.find("hca_object=max") == std::string::npos)
            if (!trim(l).empty() && trim(l) != "max") limits.push_back(f + ": " + trim(l));
      }
      if (files.empty())
        add(r, "limits.cgroup_rdma", Verdict::kPass,
            "no rdma.max in this process's cgroup or its ancestors (rdma controller not applied): no RDMA limit", src);
      else if (!limits.empty())
        add(r, "limits.cgroup_rdma", rdma ? Verdict::kFail : Verdict::kWarn,
            "RDMA limits in the job's cgroup: " + join(limits, "; ") + " (QP/MR creation fails beyond them)", src,
            "raise them: echo '<dev> hca_handle=max hca_object=max' > <cgroup>/rdma.max (or the container/Slurm "
            "setting that writes it)");
      else
        add(r, "limits.cgroup_rdma", Verdict::kPass, join(seen, "; "), src);
    }
  }
  // ---- /dev/shm
  {
    std::string src = "statvfs(/dev/shm)";
    auto s = m.fsSize("/dev/shm");
    if (!s)
      add(r, "limits.shm", Verdict::kFail, "/dev/shm is missing or unreadable: NCCL's SHM transport cannot work", src,
          "mount a tmpfs on /dev/shm (containers: --shm-size=16g or --ipc=host)");
    else if (s->first < (1ull << 30))
      add(r, "limits.shm", Verdict::kWarn,
          "/dev/shm " + bytesText(s->first) + " (" + bytesText(s->second) + " free): too small for NCCL's SHM buffers "
          "with several GPUs (Docker's default is 64 MiB)",
          src, "containers: --shm-size=16g or --ipc=host; and set RemoveIPC=no in logind.conf (NCCL docs)");
    else
      add(r, "limits.shm", Verdict::kPass, "/dev/shm " + bytesText(s->first) + " (" + bytesText(s->second) + " free)", src);
  }
}

void checkSoftware(const Machine& m, const Hooks& h, NodeReport& r) {
  // ---- versions (compared between nodes by aggregate)
  {
    auto set = [&](const std::string& k, const std::string& v, const std::string& src) {
      if (v.empty()) return;
      r.facts["version." + k] = v;
      r.factSources["version." + k] = src;
    };
    GpuList gl = gpuList(m);
    std::string drv = gl.driver;
    std::string dsrc = gl.nvml ? "NVML nvmlSystemGetDriverVersion" : "nvidia-smi --query-gpu=driver_version";
    if (drv.empty()) {
      std::string p = m.line("/proc/driver/nvidia/version");
      static const std::regex k(R"(Kernel Module\s+(?:for \S+\s+)?([0-9.]+))");
      std::smatch mm;
      if (std::regex_search(p, mm, k)) drv = mm[1], dsrc = "/proc/driver/nvidia/version";
    }
    set("gpu_driver", drv, dsrc);
    for (const auto& [k, v] : h.versions)
      set(k, v, k == "mpi" ? "MPI_Get_library_version" : k == "nccl" ? "ncclGetVersion" :
                k == "cuda_driver" ? "cudaDriverGetVersion" : k == "cuda_runtime" ? "cudaRuntimeGetVersion" : "the binary");
    // rdma-core: libibverbs.so.1 -> libibverbs.so.1.14.<rdma-core version>
    for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                            "/lib/x86_64-linux-gnu", "/lib64"}) {
      std::string p = m.resolve(std::string(dir) + "/libibverbs.so.1");
      static const std::regex k(R"(libibverbs\.so\.1\.\d+\.(\d+\.\d+)$)");
      std::smatch mm;
      if (!p.empty() && m.exists(std::string(dir) + "/libibverbs.so.1") && std::regex_search(p, mm, k)) {
        set("rdma_core", mm[1], std::string(dir) + "/libibverbs.so.1 -> " + p.substr(p.rfind('/') + 1));
        break;
      }
    }
    std::string kern = m.line("/proc/sys/kernel/osrelease");
    set("kernel", kern, "/proc/sys/kernel/osrelease");
    std::vector<std::string> list;
    for (const auto& [k, v] : r.facts)
      if (startsWith(k, "version.")) list.push_back(k.substr(8) + " " + v);
    std::vector<std::string> srcs;
    for (const auto& [k, v] : r.factSources)
      if (startsWith(k, "version.")) srcs.push_back(k.substr(8) + ": " + v);
    add(r, "software.versions", list.empty() ? Verdict::kSkip : Verdict::kPass,
        list.empty() ? "no version readable" : join(list, ", ") + " (compared between nodes: software.same)",
        join(srcs, "; "));
  }

  // ---- interface / HCA variables that name something missing or down
  {
    std::string src = "environment vs getifaddrs (interfaces: up, IPv4) and /sys/class/infiniband (HCAs, port state)";
    auto ifs = m.interfaces();
    const auto rdma = topo::readRdma(m);
    std::vector<std::string> hcas;
    for (const auto& h : rdma) hcas.push_back(h.name);
    std::vector<std::string> bad, ok;
    auto matchIf = [&](const std::string& var, const std::string& value, bool ncclSyntax) {
      std::string v = value;
      bool exclude = false, exact = false;
      if (ncclSyntax && !v.empty() && v[0] == '^') exclude = true, v = v.substr(1);
      if (ncclSyntax && !v.empty() && v[0] == '=') exact = true, v = v.substr(1);
      if (exclude) {
        ok.push_back(var + "=" + value + " (an exclusion list: not checked)");
        return;
      }
      for (const auto& name : split(v, ',')) {
        std::vector<std::string> hits;
        bool anyUp = false;
        for (const auto& i : ifs) {
          bool hit = false;
          if (!ncclSyntax && name.find('/') != std::string::npos) {
            for (const auto& a : i.ipv4) hit = hit || inCidr(a, name);
          } else {
            hit = exact || !ncclSyntax ? i.name == name : startsWith(i.name, name);
          }
          if (hit) {
            hits.push_back(i.name + (i.up ? "" : " (down)"));
            anyUp = anyUp || (i.up && !i.ipv4.empty());
          }
        }
        if (hits.empty())
          bad.push_back(var + "=" + value + ": no interface " + (ncclSyntax && !exact ? "starting with '" : "'") + name +
                        "' on this node");
        else if (!anyUp)
          bad.push_back(var + "=" + value + ": " + join(hits, ", ") + " not up with an IPv4 address");
        else
          ok.push_back(var + "=" + value + " -> " + join(hits, ", "));
      }
    };
    for (const char* var : {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"})
      if (auto v = m.env(var)) matchIf(var, *v, true);
    for (const char* var : {"OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_oob_tcp_if_include"})
      if (auto v = m.env(var)) matchIf(var, *v, false);
    if (auto v = m.env("NCCL_IB_HCA")) {
      std::string s = *v;
      bool exclude = !s.empty() && s[0] == '^';
      bool exact = !s.empty() && s[0] == '=';
      if (exclude) {
        ok.push_back("NCCL_IB_HCA=" + s + " (an exclusion list: not checked)");
      } else {
        if (exact) s = s.substr(1);
        for (const auto& item : split(s, ',')) {
          std::string dev = item.substr(0, item.find(':'));
          int port = item.find(':') == std::string::npos ? 0 : std::atoi(item.c_str() + item.find(':') + 1);
          std::vector<std::string> hits;
          bool active = false;
          for (const auto& h : rdma) {
            const std::string& hname = h.name;
            if (exact ? hname != dev : !startsWith(hname, dev)) continue;
            for (const auto& p : h.ports) {
              if (port && port != p.port) continue;
              hits.push_back(hname + "/" + std::to_string(p.port) + " " + p.state);
              active = active || p.active();
            }
          }
          if (hits.empty())
            bad.push_back("NCCL_IB_HCA=" + *v + ": no RDMA device/port matching '" + item + "' on this node" +
                          (hcas.empty() ? " (no RDMA device at all)" : " (devices: " + join(hcas, ", ") + ")"));
          else if (!active)
            bad.push_back("NCCL_IB_HCA=" + *v + ": " + join(hits, ", ") + " not ACTIVE");
          else
            ok.push_back("NCCL_IB_HCA=" + *v + " -> " + join(hits, ", "));
        }
      }
    }
    if (!bad.empty())
      add(r, "env.interfaces", Verdict::kFail, join(bad, "; ") + (ok.empty() ? "" : "; ok: " + join(ok, "; ")), src,
          "name interfaces/HCAs that exist and are up on every node (ip -br addr; ibstat), or unset the variable "
          "and let NCCL/Open MPI choose");
    else if (ok.empty())
      add(r, "env.interfaces", Verdict::kPass,
          "none of NCCL_SOCKET_IFNAME, NCCL_IB_HCA, OMPI_MCA_btl_tcp_if_include, OMPI_MCA_oob_tcp_if_include set "
          "(automatic choice)",
          src);
    else
      add(r, "env.interfaces", Verdict::kPass, join(ok, "; "), src);
  }

  // ---- variables that switch paths off
  {
    std::vector<std::string> set;
    for (const char* var : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE"})
      if (auto v = m.env(var); v && *v != "0" && !v->empty()) set.push_back(std::string(var) + "=" + *v);
    if (auto v = m.env("NCCL_NET"); v && lower(*v) == "socket") set.push_back("NCCL_NET=" + *v);
    if (set.empty())
      add(r, "env.disabled", Verdict::kPass, "NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, NCCL_IB_DISABLE, NCCL_NET=Socket: none set",
          "environment");
    else
      add(r, "env.disabled", Verdict::kWarn, join(set, ", ") + " set: NCCL silently uses a slower path", "environment",
          "unset them unless a measurement shows they are needed (they are often left over from debugging)");
  }
}

}  // namespace fb::doctor

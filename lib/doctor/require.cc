// --doctor --require: the devices and paths a site says this job must have, one finding per item
// on every node ("require.gpu" ...). A node without the required device fails the row (exit 1),
// instead of the checks about that device being skipped and the doctor passing.
#include <algorithm>

#include "doctor/doctor.h"
#include "doctor/util.h"

namespace fb::doctor {
using namespace util;

const std::vector<std::string>& requirableItems() {
  static const std::vector<std::string> k = {"gpu", "cuda", "nccl", "rdma", "verbs", "tcp", "mpi"};
  return k;
}

namespace {

// Active RDMA ports: "mlx5_0/1 (ACTIVE, 200 Gb/sec (4X HDR), InfiniBand)".
std::vector<std::string> activePorts(const Machine& m, std::vector<std::string>& inactive) {
  std::vector<std::string> out;
  for (const auto& d : topo::readRdma(m))
    for (const auto& p : d.ports) {
      std::string txt = d.name + "/" + std::to_string(p.port) + " (" + p.state + ", " + p.rate + ", " + p.linkLayer + ")";
      if (p.active()) out.push_back(txt);
      else inactive.push_back(txt);
    }
  return out;
}

}  // namespace

void checkRequired(const Machine& m, const Hooks& h, const std::vector<std::string>& required, NodeReport& r) {
  for (const auto& item : required) {
    std::string id = "require." + item;
    if (item == "gpu" || item == "cuda" || item == "nccl") {
      GpuList gl = gpuList(m);
      const std::string src = gl.source("nvidia-smi --query-gpu") + " (the GPUs this node's driver lists)";
      if (!gl.ok || gl.gpus.empty()) {
        add(r, id, Verdict::kFail, "--require " + item + ": no GPU on this node (" + (gl.why.empty() ? "none listed" : gl.why) + ")",
            src, "run on nodes with GPUs (Slurm: --gres=gpu:N), or drop --require " + item);
        continue;
      }
      std::vector<std::string> names;
      for (const auto& g : gl.gpus) names.push_back("GPU" + std::to_string(g.index) + " " + g.name);
      if (item == "nccl" && !h.versions.count("nccl")) {
        add(r, id, Verdict::kFail, "--require nccl: " + join(names, ", ") + " present, but this build has no NCCL",
            "the NCCL this binary links (ncclGetVersion)", "build fabricbench with NCCL (cmake finds it through NCCL_ROOT)");
        continue;
      }
      add(r, id, Verdict::kPass, std::to_string(gl.gpus.size()) + " GPU(s): " + join(names, ", "), src);
    } else if (item == "rdma" || item == "verbs") {
      std::vector<std::string> inactive;
      auto act = activePorts(m, inactive);
      const std::string src = "/sys/class/infiniband/*/ports/*/state";
      if (act.empty())
        add(r, id, Verdict::kFail,
            "--require " + item + ": no active RDMA port" +
                (inactive.empty() ? " (/sys/class/infiniband is empty or absent)" : ": " + join(inactive, "; ")),
            src, "check the HCA, its driver (ibstat) and cabling, or drop --require " + item);
      else add(r, id, Verdict::kPass, join(act, "; "), src);
    } else if (item == "tcp") {
      std::vector<std::string> up;
      for (const auto& i : m.interfaces())
        if (i.up && !i.ipv4.empty() && i.name != "lo") up.push_back(i.name + " " + i.ipv4[0]);
      if (up.empty())
        add(r, id, Verdict::kFail, "--require tcp: no interface up with an IPv4 address besides lo", "getifaddrs",
            "bring the cluster network interface up");
      else add(r, id, Verdict::kPass, join(up, ", "), "getifaddrs");
    } else if (item == "mpi") {
      auto v = h.versions.find("mpi");
      if (v == h.versions.end() || v->second.empty())
        add(r, id, Verdict::kFail, "--require mpi: this binary reports no MPI library", "MPI_Get_library_version");
      else add(r, id, Verdict::kPass, v->second, "MPI_Get_library_version");
    } else {
      add(r, id, Verdict::kFail, "--require: unknown item '" + item + "'", "--require");
    }
  }
}

}  // namespace fb::doctor

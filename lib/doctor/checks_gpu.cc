// GPU checks: topology per pair, P2P (advertised and a real copy), GeForce, MIG, GPU-NIC
// affinity, GPUDirect RDMA.
#include <map>
#include <regex>

#include "doctor/doctor.h"
#include "doctor/util.h"
#include "topology/topology.h"

namespace fb::doctor {
using namespace util;

namespace {

// NV# < PIX < PXB < PHB < NODE < SYS (closer first); -1 unknown.
int pathRank(const std::string& c) {
  if (startsWith(c, "NV")) return 0;
  static const std::vector<std::string> order = {"PIX", "PXB", "PHB", "NODE", "SYS"};
  for (std::size_t i = 0; i < order.size(); ++i)
    if (c == order[i]) return static_cast<int>(i) + 1;
  return -1;
}

constexpr const char* kTopoSource = "nvidia-smi topo -m";
constexpr const char* kP2pSource = "nvidia-smi topo -p2p r";

}  // namespace

void checkGpuTopology(const Machine& m, const Hooks& h, NodeReport& r) {
  GpuList gl = gpuList(m);
  const std::string qsrc = gl.source("nvidia-smi --query-gpu=index,name,pci.bus_id,mig.mode.current");
  if (!gl.ok || gl.gpus.empty()) {
    for (const char* id : {"gpu.topology", "gpu.p2p", "gpu.geforce", "gpu.mig"})
      add(r, id, Verdict::kSkip, gl.why, qsrc);
    return;
  }
  const int n = static_cast<int>(gl.gpus.size());

  // ---- GeForce: P2P disabled by the driver, no NVLink connector on recent ones.
  std::vector<std::string> geforce, names;
  for (const auto& g : gl.gpus) {
    names.push_back("GPU" + std::to_string(g.index) + " " + g.name);
    std::string l = lower(g.name);
    if (l.find("geforce") != std::string::npos || l.find("titan") != std::string::npos)
      geforce.push_back("GPU" + std::to_string(g.index) + " " + g.name);
  }
  if (geforce.empty())
    add(r, "gpu.geforce", Verdict::kPass, "no GeForce card: " + join(names, ", "), qsrc);
  else
    add(r, "gpu.geforce", Verdict::kWarn,
        join(geforce, ", ") + ": GeForce driver disables GPU P2P (and the RTX 4090 has no NVLink connector): GPU-to-GPU "
        "copies and NCCL go through host memory",
        qsrc, "none in software: use data-center GPUs where P2P/NVLink matters; measure with --transport cuda,nccl");

  // ---- MIG: no CUDA IPC and no NVLink P2P between MIG instances.
  std::vector<std::string> migOn, migText;
  for (const auto& g : gl.gpus) {
    migText.push_back("GPU" + std::to_string(g.index) + " " + g.mig);
    if (lower(g.mig) == "enabled") migOn.push_back("GPU" + std::to_string(g.index));
  }
  if (migOn.empty())
    add(r, "gpu.mig", Verdict::kPass, "MIG off: " + join(migText, ", "), qsrc);
  else
    add(r, "gpu.mig", Verdict::kFail,
        "MIG mode enabled on " + join(migOn, ", ") + ": MIG instances have no CUDA IPC and no NVLink P2P",
        qsrc, "nvidia-smi -i <gpu> -mig 0 (as root, GPU idle; may need a GPU reset)");

  // ---- link class of every pair (NVML, else the topo -m text)
  topo::GpuLinkMatrix links;
  if (n >= 2) links = topo::readGpuLinks(m, topo::GpuSource::kAuto, std::chrono::seconds(10));
  const std::string lsrc =
      links.source == "nvml" ? "NVML NVLink states and common PCI ancestors (libnvidia-ml.so.1)" : kTopoSource;
  if (n < 2) {
    add(r, "gpu.topology", Verdict::kPass, "1 GPU (" + names[0] + "): no GPU pair", kTopoSource);
  } else if (links.source.empty()) {
    add(r, "gpu.topology", Verdict::kSkip, "nvidia-smi topo -m failed: " + links.smiError, kTopoSource);
  } else {
    std::vector<std::string> pairs, notNv, sys;
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b) {
        std::string ga = "GPU" + std::to_string(gl.gpus[a].index), gb = "GPU" + std::to_string(gl.gpus[b].index);
        std::string c = links.cell(gl.gpus[a].index, gl.gpus[b].index);
        if (c.empty()) c = "?";
        pairs.push_back(ga + "-" + gb + " " + c);
        if (!startsWith(c, "NV")) notNv.push_back(ga + "-" + gb + " " + c);
        if (c == "SYS") sys.push_back(ga + "-" + gb);
      }
    if (notNv.empty())
      add(r, "gpu.topology", Verdict::kPass, "NVLink between every pair: " + join(pairs, ", "), lsrc);
    else
      add(r, "gpu.topology", Verdict::kWarn,
          "no NVLink for " + join(notNv, ", ") + " (all pairs: " + join(pairs, ", ") + ")" +
              (sys.empty() ? "" : "; SYS = across the CPU interconnect, the slowest P2P path"),
          lsrc,
          "expected where the GPUs have no NVLink (PCIe cards); otherwise check the NVLink bridges / "
          "fabric manager (nvidia-smi nvlink -s); PIX is best for PCIe P2P (move cards under one switch)");
  }

  // ---- P2P: advertised (NVML, else topo -p2p r) and a real copy (the P2P sanity check)
  if (n < 2) {
    add(r, "gpu.p2p", Verdict::kPass, "1 GPU: no pair to check", kP2pSource);
    return;
  }
  auto p2p = topo::readGpuP2p(m, topo::GpuSource::kAuto, std::chrono::seconds(10));
  const bool p2pOk = !p2p.source.empty();
  std::vector<std::string> advertised, notAdvertised;
  if (p2pOk) {
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) {
        if (a == b) continue;
        std::string ga = "GPU" + std::to_string(gl.gpus[a].index), gb = "GPU" + std::to_string(gl.gpus[b].index);
        std::string c = p2p.cell(gl.gpus[a].index, gl.gpus[b].index);
        (c == "OK" ? advertised : notAdvertised).push_back(ga + "->" + gb + " " + (c.empty() ? "?" : c));
      }
  }
  std::string src = std::string(p2p.source == "nvml" ? "NVML nvmlDeviceGetP2PStatus (libnvidia-ml.so.1)" : kP2pSource) +
                    (h.p2p ? " + a real copy between every pair (copy engine and SM, checked element by element, "
                             "under a time-out)"
                           : "");
  Hooks::P2P real;
  if (h.p2p) real = h.p2p();
  std::string adv = p2pOk ? (notAdvertised.empty() ? "P2P read advertised OK for all " +
                                                         std::to_string(advertised.size()) + " ordered pairs"
                                                   : "P2P read NOT advertised: " + join(notAdvertised, ", "))
                          : "nvidia-smi topo -p2p r failed: " + p2p.smiError;
  if (real.ran && !real.ok && !real.brokenPairs.empty()) {
    add(r, "gpu.p2p", Verdict::kFail, adv + "; real copy: " + real.summary, src,
        "P2P advertised but broken: NCCL would hang or corrupt data; check ACS/IOMMU (pcie.acs, pcie.iommu), "
        "update the driver; NCCL_P2P_DISABLE=1 as a stop-gap");
  } else if (!notAdvertised.empty() || (real.ran && !real.ok)) {
    add(r, "gpu.p2p", Verdict::kWarn, adv + (real.ran ? "; real copy: " + real.summary : ""), src,
        geforce.empty() ? "P2P not supported between these GPUs (topology/ACS/IOMMU/driver): copies go through "
                          "host memory; see pcie.acs and pcie.iommu"
                        : "GeForce: the driver disables P2P (no fix in software)");
  } else if (!p2pOk && !real.ran) {
    add(r, "gpu.p2p", Verdict::kSkip, adv + "; no real copy (this build has no CUDA)", src);
  } else {
    add(r, "gpu.p2p", Verdict::kPass,
        adv + (real.ran ? "; real copy: " + real.summary : "; no real copy made (this build has no CUDA)"), src);
  }
}

void checkGpuNicAffinity(const Machine& m, NodeReport& r) {
  const std::string id = "gpu.nic_affinity";
  auto devs = rdmaDevices(m);
  GpuList gl = gpuList(m);
  if (!gl.ok || gl.gpus.empty()) {
    add(r, id, Verdict::kSkip, gl.why, kTopoSource);
    return;
  }
  if (devs.empty()) {
    add(r, id, Verdict::kSkip, "no RDMA NIC on this node (/sys/class/infiniband is empty or absent)",
        "/sys/class/infiniband");
    return;
  }
  auto topo = topo::gpuTopoMatrix(m, std::chrono::seconds(10));
  if (!topo.ok) {
    add(r, id, Verdict::kSkip, "nvidia-smi topo -m failed: " + topo.error, kTopoSource);
    return;
  }
  auto mat = topo::parseTopoMatrix(topo.out);
  std::map<std::string, std::string> nicName;  // NIC0 -> mlx5_0
  static const std::regex kNic(R"(^\s*(NIC\d+)\s*:\s*(\S+))");
  for (const auto& l : lines(topo.out)) {
    std::smatch mm;
    if (std::regex_search(l, mm, kNic)) nicName[mm[1]] = mm[2];
  }
  std::vector<std::string> nics;
  for (const auto& c : mat.columns)
    if (startsWith(c, "NIC") || startsWith(c, "mlx")) nics.push_back(c);
  if (nics.empty()) {
    add(r, id, Verdict::kSkip,
        "nvidia-smi topo -m lists no NIC although /sys/class/infiniband has " + join(devs, ", "), kTopoSource);
    return;
  }
  std::vector<std::string> per, far;
  for (const auto& g : gl.gpus) {
    std::string row = "GPU" + std::to_string(g.index);
    int best = 99;
    std::string bestNic, bestClass;
    for (const auto& nic : nics) {
      std::string c = mat.at(row, nic);
      int rk = pathRank(c);
      if (rk >= 0 && rk < best) {
        best = rk;
        bestNic = nicName.count(nic) ? nicName[nic] : nic;
        bestClass = c;
      }
    }
    if (bestNic.empty()) {
      per.push_back(row + ": ?");
      continue;
    }
    per.push_back(row + " -> " + bestNic + " " + bestClass);
    if (best > 2) far.push_back(row + " (" + bestClass + ")");
  }
  if (far.empty())
    add(r, id, Verdict::kPass, "nearest RDMA NIC per GPU: " + join(per, ", ") + " (PXB or closer: GPUDirect RDMA by default)",
        kTopoSource);
  else
    add(r, id, Verdict::kWarn,
        "nearest RDMA NIC per GPU: " + join(per, ", ") + "; " + join(far, ", ") +
            ": NCCL will not use GPUDirect RDMA by default (it does at PXB or closer) and stages through host memory",
        kTopoSource,
        "put NIC and GPU under one PCIe switch; or NCCL_NET_GDR_LEVEL=PHB/SYS if measured faster; bind each rank "
        "to the NIC near its GPU (NCCL_IB_HCA)");
}

void checkGpuDirect(const Machine& m, const Hooks& h, NodeReport& r) {
  const std::string id = "gpu.gpudirect_rdma";
  const std::string src =
      "/sys/module/nvidia_peermem, /sys/kernel/mm/memory_peers/nv_mem{,_nc}/version (the paths NCCL reads)";
  GpuList gl = gpuList(m);
  if (!gl.ok || gl.gpus.empty()) {
    add(r, id, Verdict::kSkip, gl.why, src);
    return;
  }
  std::vector<std::string> loaded;
  if (m.exists("/sys/module/nvidia_peermem")) {
    std::string v = m.line("/sys/module/nvidia_peermem/version");
    loaded.push_back("nvidia_peermem" + (v.empty() ? "" : " " + v));
  }
  for (const char* p : {"nv_mem", "nv_mem_nc"}) {
    std::string f = std::string("/sys/kernel/mm/memory_peers/") + p + "/version";
    if (m.exists(f)) loaded.push_back(std::string("nv_peer_mem (") + p + ") " + m.line(f));
  }
  auto devs = rdmaDevices(m);
  if (!loaded.empty()) {
    add(r, id, Verdict::kPass, join(loaded, ", ") + " loaded: RDMA NICs can read and write GPU memory", src);
    return;
  }
  std::string none = "neither nvidia_peermem nor nv_peer_mem is loaded";
  if (devs.empty()) {
    add(r, id, Verdict::kWarn, none + "; no RDMA device on this node either (GPUDirect RDMA matters once a NIC is used)",
        src, "modprobe nvidia_peermem (ships with the NVIDIA driver), or use dma-buf (open kernel modules, Linux >= 5.12)");
    return;
  }
  if (h.dmabuf) {
    auto [ok, why] = h.dmabuf(devs[0]);
    if (ok) {
      add(r, id, Verdict::kPass, none + "; dma-buf works: " + why, src + " + a dma-buf registration probe");
      return;
    }
    add(r, id, Verdict::kWarn, none + "; dma-buf: " + why + ": NCCL stages GPU data through host memory", src + " + a dma-buf registration probe",
        "modprobe nvidia_peermem, or use NVIDIA's open kernel modules with Linux >= 5.12 for dma-buf");
    return;
  }
  add(r, id, Verdict::kWarn, none + "; dma-buf not probed (this build has no CUDA+verbs): NCCL may stage through host memory",
      src, "modprobe nvidia_peermem, or use NVIDIA's open kernel modules with Linux >= 5.12 for dma-buf");
}

}  // namespace fb::doctor

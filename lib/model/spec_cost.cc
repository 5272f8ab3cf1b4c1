// The link spec table, the training-step estimate and the fabric cost (leaf/spine).
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "model/model.h"

namespace fb::model {

// Line rates per direction in GB/s (1e9 B/s). Efficiency and per-hop latency are DEFAULTS, each from a
// public source named beside it (an NVIDIA engineer's figure in a GitHub thread, NCCL's own topology or
// tuning constants, a published measurement): every projection from a spec prints them as defaults;
// replace them with a measurement (--inter RUN:SERIES) or your own (--inter spec:ib-hdr,eff=0.9,lat=4).
const std::vector<Spec>& specTable() {
  static const std::string netLat =
      "per-hop latency 14 us: NCCL's network per-hop latency for Ring Simple (NVIDIA/nccl src/graph/tuning.cc "
      "hwLatencies NET, 2.18-2.29)";
  static const std::string tcpLat =
      "latency 55 us: half the 110 us TCP round trip of a 100-byte socket ping-pong between two Linux hosts "
      "over Intel 1G NICs (serverfault.com/questions/791539; 220 us on 3.x kernels)";
  static const std::string nvlinkRing =
      "; latency 3.4 us: NCCL's NVLink per-hop, Ring Simple (tuning.cc hwLatencies NVLINK)";
  static const std::string pciEff =
      "efficiency 0.76: NCCL's own PCIe link model, width x GT/s / 80 (NVIDIA/nccl src/graph/topo.cc: "
      "Gen3 x16 = 12 GB/s of 15.75, Gen4 24 of 31.5, Gen5 48 of 63); latency 5.7 us: NCCL's PCIe per-hop, "
      "Ring Simple (tuning.cc hwLatencies PCI)";
  static const std::vector<Spec> t = {
      {"eth-1g", "inter", 0.125, "1 Gb/s (1000BASE-T)", 0.94, 55,
       "IEEE 802.3ab 1000BASE-T: 1 Gb/s",
       "efficiency 0.94: TCP payload in 1500-B frames (1448 of 1538 bytes on the wire); " + tcpLat},
      {"eth-10g", "inter", 1.25, "10 Gb/s (10GBASE)", 0.94, 55,
       "IEEE 802.3ae 10GBASE: 10 Gb/s",
       "efficiency 0.94: TCP payload in 1500-B frames; " + tcpLat +
           " (the kernel path, not the wire: a 100-byte frame takes < 1 us at 1 Gb/s, so the 1G figure stands for 10G)"},
      {"ib-edr", "inter", 12.5, "100 Gb/s (4x 25G)", 0.96, 14,
       "InfiniBand Trade Association, EDR 4x: 100 Gb/s",
       "efficiency 0.96: 12 GB/s NCCL busbw per 100G NIC (NVIDIA/nccl-tests issue 119, sjeaugey; 12.2 GB/s "
       "on a 4x EDR card in nccl-tests issue 29); " + netLat},
      {"ib-hdr", "inter", 25.0, "200 Gb/s (4x 50G PAM4)", 0.96, 14,
       "InfiniBand Trade Association, HDR 4x: 200 Gb/s (4 lanes x 50G PAM4)",
       "efficiency 0.96: 24 GB/s NCCL busbw per 200G NIC (NVIDIA/nccl-tests issue 119 and NVIDIA/nccl issue 412, "
       "sjeaugey); " + netLat},
      {"ib-ndr", "inter", 50.0, "400 Gb/s (4x 100G PAM4)", 0.94, 14,
       "InfiniBand Trade Association, NDR 4x: 400 Gb/s",
       "efficiency 0.94: 46-48 GB/s NCCL busbw per NDR NIC (NVIDIA/nccl-tests issue 290, AddyLaddy); 8 NICs: "
       "392.7 GB/s busbw for a 2 x 8 H100 ring, 49 a NIC (nccl-tests issue 309, tests/data/public-nccl-tests/"
       "h100-ib400-gjaion-2x8-ring-minctas24.log); " + netLat},
      {"roce-100g", "inter", 12.5, "100 GbE", 0.96, 14,
       "IEEE 802.3 100GBASE (RoCEv2 over 100 Gb Ethernet)",
       "efficiency 0.96: 12 GB/s NCCL busbw per 100G NIC (NVIDIA/nccl-tests issue 119, sjeaugey); " + netLat},
      {"roce-200g", "inter", 25.0, "200 GbE", 0.96, 14,
       "IEEE 802.3bs 200GBASE (RoCEv2 over 200 Gb Ethernet)",
       "efficiency 0.96: 24 GB/s NCCL busbw per 200G NIC (NVIDIA/nccl-tests issue 119, sjeaugey: a NIC's "
       "figure, IB or RoCE); " + netLat},
      {"roce-400g", "inter", 50.0, "400 GbE", 0.96, 14,
       "IEEE 802.3bs 400GBASE (RoCEv2 over 400 Gb Ethernet)",
       "efficiency 0.96: 48-49 GB/s per ConnectX-7 at 400 Gb/s, said of a RoCE cluster of 8 x 400G H100 nodes "
       "(NVIDIA/nccl-tests issue 267, AddyLaddy); " + netLat},
      {"pcie-gen3-x16", "intra", 15.75, "PCIe 3.0 x16 (8 GT/s, 128b/130b)", 0.76, 5.7,
       "PCI-SIG PCIe 3.0: 8 GT/s x 16 lanes, 128b/130b = 15.75 GB/s per direction", pciEff},
      {"pcie-gen4-x16", "intra", 31.5, "PCIe 4.0 x16 (16 GT/s)", 0.76, 5.7,
       "PCI-SIG PCIe 4.0: 16 GT/s x 16, 128b/130b = 31.5 GB/s per direction", pciEff},
      {"pcie-gen5-x16", "intra", 63.0, "PCIe 5.0 x16 (32 GT/s)", 0.76, 5.7,
       "PCI-SIG PCIe 5.0: 32 GT/s x 16, 128b/130b = 63 GB/s per direction", pciEff},
      {"nvlink3-a100", "intra", 300.0, "NVLink 3: 12 links x 25 GB/s", 0.80, 3.4,
       "NVIDIA A100 datasheet: 12 NVLink3 links, 600 GB/s total (300 GB/s per direction)",
       "efficiency 0.80: NCCL's NVLink3 figure, 20.0 GB/s a link of 25 (NVIDIA/nccl src/graph/topo.h "
       "SM80_NVLINK_BW); measured: ~160 GB/s intra-node busbw on 8-link A800 (NVIDIA/nccl issue 412, sjeaugey)" +
           nvlinkRing},
      {"nvlink4-h100", "intra", 450.0, "NVLink 4: 18 links x 25 GB/s", 0.82, 3.4,
       "NVIDIA H100/H200 datasheet: 18 NVLink4 links, 900 GB/s total (nvidia-smi reports 26.56 GB/s per link)",
       "efficiency 0.82: NCCL's NVLink4 figure, 20.6 GB/s a link of 25 (NVIDIA/nccl src/graph/topo.h "
       "SM90_NVLINK_BW; 18 links = 370.8 GB/s); measured: 365-370 GB/s Ring busbw on 8 x H100 (NVIDIA/nccl "
       "issue 1455), ~370 (NVIDIA/nccl-tests issue 212, sjeaugey)" + nvlinkRing},
      {"nvlink5-b200", "intra", 900.0, "NVLink 5: 18 links x 50 GB/s", 0.80, 3.4,
       "NVIDIA B200 datasheet: 18 NVLink5 links, 1.8 TB/s total",
       "efficiency 0.80: NCCL's NVLink5 figure, 40.1 GB/s a link of 50 (NVIDIA/nccl src/graph/topo.h "
       "SM100_NVLINK_BW; 18 links = 721.8 GB/s, the maxBw NCCL prints on B200 in NVIDIA/nccl issue 1807)" +
           nvlinkRing},
  };
  return t;
}

const Spec& findSpec(const std::string& name) {
  for (const auto& s : specTable())
    if (s.name == name) return s;
  std::string names;
  for (const auto& s : specTable()) names += (names.empty() ? "" : ", ") + s.name;
  throw InputError(fmt::format("unknown link spec '{}' (known: {})", name, names));
}

// ---- training step ---------------------------------------------------------------------------

StepEstimate trainingStep(const TrainModel& m, const Shape& cl, const Inputs& in) {
  if (!(m.params > 0)) throw InputError("--params must be > 0");
  if (!(m.gradBytesPerParam > 0)) throw InputError("gradient dtype size must be > 0");
  if (m.tp < 1 || cl.perNode % m.tp != 0)
    throw InputError(fmt::format("tensor-parallel degree {} must divide the {} GPUs per node", m.tp, cl.perNode));
  if (!(m.bucketBytes > 0)) throw InputError("--bucket must be > 0 bytes");
  if (!(m.computeMs >= 0)) throw InputError("--compute-ms must be >= 0");
  if (!(m.overlap >= 0 && m.overlap <= 1)) throw InputError("--overlap must be in [0, 1]");
  if (cl.nodes < 1) throw InputError("N = 0 nodes");
  StepEstimate e;
  e.gradBytesPerRank = m.params / m.tp * m.gradBytesPerParam;
  e.dpShape.nodes = cl.nodes;
  e.dpShape.perNode = cl.perNode / m.tp;            // one DP group = G/TP ranks per node
  e.dpShape.nicsPerNode = cl.nics() / m.tp;         // TP groups share the node's NICs
  e.buckets = static_cast<int>(std::ceil(e.gradBytesPerRank / m.bucketBytes));
  e.lastBucketBytes = e.gradBytesPerRank - (e.buckets - 1) * m.bucketBytes;
  double us = 0;
  if (e.dpShape.ranks() > 1) {
    auto full = project("allreduce", e.dpShape, std::min(m.bucketBytes, e.gradBytesPerRank), in);
    e.algo = full.algo;
    us = (e.buckets - 1) * full.timeUs + project("allreduce", e.dpShape, e.lastBucketBytes, in).timeUs;
    if (e.buckets == 1) us = full.timeUs;
  }
  e.commMs = us / 1e3;
  e.exposedMs = e.commMs * (1 - m.overlap);
  e.stepMs = m.computeMs + e.exposedMs;
  return e;
}

// ---- prices and cost -------------------------------------------------------------------------

namespace {
double num(const nlohmann::json& o, const char* key, const std::string& where, bool positive, bool required = true) {
  if (!o.is_object() || !o.contains(key)) {
    if (!required) return 0;
    throw InputError(fmt::format("{}: missing '{}'", where, key));
  }
  const auto& v = o[key];
  if (!v.is_number()) throw InputError(fmt::format("{}: '{}' must be a number", where, key));
  double d = v.get<double>();
  if (!std::isfinite(d) || d < 0 || (positive && d == 0))
    throw InputError(fmt::format("{}: '{}' = {} must be {}", where, key, d, positive ? "> 0" : ">= 0"));
  return d;
}
// Refuse any key of `o` not in `known`, naming the file's entry and the key.
void onlyKeys(const nlohmann::json& o, std::initializer_list<const char*> known, const std::string& where) {
  if (!o.is_object()) throw InputError(fmt::format("{}: expected an object", where));
  for (auto& [k, v] : o.items()) {
    bool ok = false;
    std::string list;
    for (const char* n : known) {
      ok = ok || k == n;
      list += (list.empty() ? "" : ", ") + std::string(n);
    }
    if (!ok) throw InputError(fmt::format("{}: unknown key '{}' (known: {})", where, k, list));
  }
}
}  // namespace

std::map<std::string, FabricPrice> parsePrices(const nlohmann::json& j, const std::string& src) {
  if (!j.is_object() || !j.contains("fabrics") || !j["fabrics"].is_object() || j["fabrics"].empty())
    throw InputError(fmt::format("{}: expected {{\"fabrics\": {{\"NAME\": {{...}}}}}}", src));
  onlyKeys(j, {"about", "fabrics"}, src);
  std::map<std::string, FabricPrice> out;
  for (auto& [name, f] : j["fabrics"].items()) {
    std::string w = fmt::format("{}: fabric '{}'", src, name);
    if (!f.is_object()) throw InputError(w + ": expected an object");
    onlyKeys(f, {"note", "nic", "switch", "cable", "optics", "per_gpu_usd", "per_node_usd"}, w);
    if (f.contains("note") && !f["note"].is_string()) throw InputError(w + ": 'note' must be a string");
    FabricPrice p;
    p.name = name;
    if (f.contains("note") && f["note"].is_string()) p.note = f["note"].get<std::string>();
    if (!f.contains("nic")) throw InputError(w + ": missing 'nic'");
    if (!f.contains("switch")) throw InputError(w + ": missing 'switch'");
    if (!f.contains("cable")) throw InputError(w + ": missing 'cable'");
    onlyKeys(f["nic"], {"usd", "per_node"}, w + " nic");
    onlyKeys(f["switch"], {"usd", "ports"}, w + " switch");
    onlyKeys(f["cable"], {"usd"}, w + " cable");
    p.nicUsd = num(f["nic"], "usd", w + " nic", false);
    p.nicsPerNode = num(f["nic"], "per_node", w + " nic", true);
    p.switchUsd = num(f["switch"], "usd", w + " switch", false);
    double ports = num(f["switch"], "ports", w + " switch", true);
    if (ports != std::floor(ports) || ports < 2) throw InputError(w + " switch: 'ports' must be a whole number >= 2");
    p.switchPorts = static_cast<int>(ports);
    p.cableUsd = num(f["cable"], "usd", w + " cable", false);
    if (f.contains("optics")) {
      onlyKeys(f["optics"], {"usd", "per_cable"}, w + " optics");
      p.opticsUsd = num(f["optics"], "usd", w + " optics", false);
      p.opticsPerCable = num(f["optics"], "per_cable", w + " optics", true);
    }
    p.perGpuUsd = num(f, "per_gpu_usd", w, false, false);
    p.perNodeUsd = num(f, "per_node_usd", w, false, false);
    out[name] = p;
  }
  return out;
}

std::map<std::string, FabricPrice> loadPrices(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("price file '{}' cannot be read", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("price file '{}' is not valid JSON: {}", path, e.what()));
  }
  return parsePrices(j, path);
}

CostEstimate fabricCost(const FabricPrice& p, int nodes, int gpusPerNode) {
  if (nodes < 1) throw InputError("N = 0 nodes: no fabric to price");
  CostEstimate c;
  double nicsNode = p.nicsPerNode;
  c.endpoints = static_cast<int>(std::ceil(nodes * nicsNode));
  int P = p.switchPorts;
  if (c.endpoints <= P) {
    c.leaves = 1;
    c.spines = 0;
    c.cables = c.endpoints;
    c.topology = "single switch";
  } else {
    int down = P / 2;
    c.leaves = (c.endpoints + down - 1) / down;
    if (c.leaves <= P) {
      c.spines = (c.leaves * down + P - 1) / P;
      c.cables = c.endpoints + c.leaves * down;
      c.topology = "two-tier leaf/spine, non-blocking";
    } else {
      // three-tier folded Clos: leaves and aggregation switches half down / half up, cores all down
      long maxEndpoints = static_cast<long>(P) * P * P / 4;
      if (c.endpoints > maxEndpoints)
        throw InputError(fmt::format("{} ports exceed a three-tier non-blocking Clos of {}-port switches ({} ports)",
                                     c.endpoints, P, maxEndpoints));
      c.spines = c.leaves;                  // aggregation: one per leaf's worth of uplinks
      c.cores = (c.spines * down + P - 1) / P;
      c.cables = c.endpoints + c.leaves * down + c.spines * down;
      c.topology = "three-tier folded Clos, non-blocking";
    }
  }
  c.nicUsd = c.endpoints * p.nicUsd;
  c.switchUsd = (c.leaves + c.spines + c.cores) * p.switchUsd;
  c.cableUsd = c.cables * p.cableUsd;
  c.opticsUsd = c.cables * p.opticsPerCable * p.opticsUsd;
  c.gpuUsd = p.perGpuUsd * nodes * gpusPerNode;
  c.nodeUsd = p.perNodeUsd * nodes;
  c.totalUsd = c.nicUsd + c.switchUsd + c.cableUsd + c.opticsUsd + c.gpuUsd + c.nodeUsd;
  c.includes = "NICs, switches, cables";
  if (p.opticsUsd > 0) c.includes += ", optics";
  if (p.perGpuUsd > 0) c.includes += ", GPUs";
  if (p.perNodeUsd > 0) c.includes += ", nodes (servers without GPUs)";
  c.wholeCluster = p.perGpuUsd > 0 || p.perNodeUsd > 0;
  if (!c.wholeCluster) c.includes += " (fabric only: the price file gives no per_gpu_usd or per_node_usd)";
  c.perNodeUsd = c.totalUsd / nodes;
  return c;
}

}  // namespace fb::model

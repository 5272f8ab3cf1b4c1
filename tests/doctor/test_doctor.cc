// The doctor's checks on recorded machines (tests/data/doctor/*, see make_fixtures.py): for every
// check a fixture where it passes and one where it warns or fails, with the evidence it must name.
#include <catch2/catch.hpp>

#include "doctor/doctor.h"
#include "doctor/run.h"

#include <set>

using namespace fb::doctor;

namespace {

Machine fixture(const std::string& name) { return Machine(std::string(FB_TEST_DATA) + "/" + name); }

NodeReport node(const std::string& name, const Hooks& h = {}) { return checkNode(fixture(name), h, name); }

const Finding& find(const NodeReport& r, const std::string& id) {
  for (const auto& f : r.findings)
    if (f.id == id) return f;
  FAIL("no finding " << id << " for " << r.host);
  static Finding none;
  return none;
}

void expect(const NodeReport& r, const std::string& id, Verdict v, const std::string& evidencePart = "") {
  const Finding& f = find(r, id);
  INFO(r.host << " " << id << ": " << verdictName(f.verdict) << " | " << f.evidence << " | " << f.fix);
  CHECK(f.verdict == v);
  if (!evidencePart.empty()) CHECK(f.evidence.find(evidencePart) != std::string::npos);
  CHECK(!f.source.empty());  // every check says how it read what it read
  if (v == Verdict::kWarn || v == Verdict::kFail) CHECK(!f.fix.empty());
}

}  // namespace

TEST_CASE("every check runs on every fixture and says how it read") {
  for (const char* name : {"h200x2", "rtx4090x2", "a100_mig", "roce_ok", "roce_bad", "roce_v6", "ib_down"}) {
    auto r = node(name);
    std::set<std::string> ids;
    for (const auto& f : r.findings) {
      INFO(name << " " << f.id);
      CHECK(!f.source.empty());
      CHECK(!f.evidence.empty());
      ids.insert(f.id);
    }
    CHECK(ids.size() == 20);
    CHECK(ids.size() == r.findings.size());  // one finding per check
  }
}

TEST_CASE("2xH200: NV18, P2P ok, MIG off, no peermem -> warn, PCIe at max, no RDMA") {
  Hooks h;
  h.p2p = [] { return Hooks::P2P{true, true, "P2P ok for all 2 ordered pairs of 2 GPUs", {}}; };
  auto r = node("h200x2", h);
  expect(r, "gpu.topology", Verdict::kPass, "GPU0-GPU1 NV18");
  expect(r, "gpu.p2p", Verdict::kPass, "P2P ok for all 2 ordered pairs");
  expect(r, "gpu.geforce", Verdict::kPass, "NVIDIA H200");
  expect(r, "gpu.mig", Verdict::kPass, "MIG off");
  expect(r, "gpu.gpudirect_rdma", Verdict::kWarn, "neither nvidia_peermem nor nv_peer_mem");
  expect(r, "gpu.nic_affinity", Verdict::kSkip, "no RDMA NIC");
  expect(r, "pcie.acs", Verdict::kPass, "no PCIe bridge");
  expect(r, "pcie.link", Verdict::kPass, "32.0 GT/s PCIe x16 (max 32.0 GT/s PCIe x16)");
  expect(r, "pcie.iommu", Verdict::kPass, "IOMMU off");
  expect(r, "rdma.port", Verdict::kSkip, "no RDMA device");
  expect(r, "env.disabled", Verdict::kPass);
  CHECK(r.facts.at("version.gpu_driver") == "580.159.04");
  CHECK(r.facts.at("version.rdma_core") == "44.0");
}

TEST_CASE("P2P advertised but broken by the real copy -> fail; without a real copy -> advertised only") {
  Hooks h;
  h.p2p = [] {
    return Hooks::P2P{true, false, "P2P FAILED for 1 of 2 ordered pairs", {"GPU 0 <- GPU 1: P2P DATA WRONG"}};
  };
  expect(node("h200x2", h), "gpu.p2p", Verdict::kFail, "P2P FAILED");
  expect(node("h200x2"), "gpu.p2p", Verdict::kPass, "no real copy made");
}

TEST_CASE("GeForce pair behind a switch: PHB, no P2P, ACS SrcValid+, link x8, IOMMU translating") {
  auto r = node("rtx4090x2");
  expect(r, "gpu.topology", Verdict::kWarn, "GPU0-GPU1 PHB");
  expect(r, "gpu.geforce", Verdict::kWarn, "GeForce driver disables GPU P2P");
  expect(r, "gpu.p2p", Verdict::kWarn, "GPU0->GPU1 CNS");
  expect(r, "gpu.mig", Verdict::kPass, "[N/A]");
  expect(r, "pcie.acs", Verdict::kFail, "0000:02:08.0 above GPU 0000:03:00.0: ACSCtl SrcValid+ (0x001d)");
  CHECK(find(r, "pcie.acs").evidence.find("0000:02:10.0") == std::string::npos);  // ACS off there
  expect(r, "pcie.link", Verdict::kFail, "GPU 0000:03:00.0 32.0 GT/s PCIe x8 (max 32.0 GT/s PCIe x16)");
  // the idle GPU at 2.5 GT/s is not a failure by itself, but is named
  CHECK(find(r, "pcie.link").evidence.find("0000:04:00.0") == std::string::npos);
  expect(r, "pcie.iommu", Verdict::kWarn, "intel_iommu=on");
}

TEST_CASE("A100 with MIG, peermem loaded, NIC at PXB, InfiniBand HDR") {
  auto r = node("a100_mig");
  expect(r, "gpu.mig", Verdict::kFail, "MIG mode enabled on GPU0");
  expect(r, "gpu.topology", Verdict::kPass, "GPU0-GPU1 NV12");
  expect(r, "gpu.gpudirect_rdma", Verdict::kPass, "nvidia_peermem 535.129.03 loaded");
  expect(r, "gpu.nic_affinity", Verdict::kPass, "GPU0 -> mlx5_0 PXB, GPU1 -> mlx5_0 PXB");
  expect(r, "pcie.acs", Verdict::kPass, "none with SrcValid+");
  expect(r, "rdma.port", Verdict::kPass, "mlx5_0/1 4: ACTIVE, 5: LinkUp, 200 Gb/sec (4X HDR), InfiniBand");
  expect(r, "rdma.mtu", Verdict::kPass, "mlx5_0/1 active 4096");
  expect(r, "rdma.gid", Verdict::kSkip, "InfiniBand ports");
  expect(r, "rdma.flow_control", Verdict::kSkip, "credit-based");
  expect(r, "rdma.firmware", Verdict::kPass, "mlx5_0 MT4123 fw 20.35.1012");
}

TEST_CASE("GPU-NIC affinity at SYS: no GPUDirect RDMA by default") {
  auto r = node("rtx4090x2");
  expect(r, "gpu.nic_affinity", Verdict::kWarn, "GPU0 -> mlx5_0 SYS, GPU1 -> mlx5_0 SYS");
  CHECK(find(r, "gpu.nic_affinity").evidence.find("NCCL will not use GPUDirect RDMA by default (it does at PXB or closer)") !=
        std::string::npos);
  expect(r, "rdma.firmware", Verdict::kPass, "MT4119 fw 16.35.2000");  // ConnectX-5: the CX-6 rule does not apply
  expect(node("roce_bad"), "gpu.nic_affinity", Verdict::kSkip, "nvidia-smi not found");
}

TEST_CASE("healthy RoCE node") {
  auto r = node("roce_ok");
  expect(r, "rdma.port", Verdict::kPass, "mlx5_0/1 4: ACTIVE");
  expect(r, "rdma.mtu", Verdict::kPass, "mlx5_0/1 active 4096 (max 4096), eth2 MTU 9000");
  expect(r, "rdma.gid", Verdict::kPass, "mlx5_0/1: RoCEv2 GID 3 10.0.0.5 (eth2)");
  CHECK(r.facts.at("gid_index.mlx5_0/1") == "3");
  expect(r, "rdma.flow_control", Verdict::kPass, "roce_np on prio 3");
  expect(r, "rdma.firmware", Verdict::kPass, "fw 20.35.1012");
  expect(r, "limits.memlock", Verdict::kPass, "unlimited");
  expect(r, "limits.cgroup_rdma", Verdict::kPass, "no rdma.max");
  expect(r, "limits.shm", Verdict::kPass, "/dev/shm 64.0 GiB");
  expect(r, "env.interfaces", Verdict::kPass, "NCCL_SOCKET_IFNAME=eth2 -> eth2");
  CHECK(find(r, "env.interfaces").evidence.find("NCCL_IB_HCA=mlx5_0:1 -> mlx5_0/1 4: ACTIVE") != std::string::npos);
  CHECK(find(r, "env.interfaces").evidence.find("OMPI_MCA_btl_tcp_if_include=10.0.0.0/24 -> eth2") != std::string::npos);
  expect(r, "pcie.link", Verdict::kPass, "NIC mlx5_0 (0000:41:00.0) 16.0 GT/s PCIe x16");
  expect(r, "gpu.topology", Verdict::kSkip, "nvidia-smi not found");
}

TEST_CASE("broken RoCE node: GID, MTU, flow control, old ConnectX-6 firmware, limits, variables") {
  auto r = node("roce_bad");
  expect(r, "rdma.port", Verdict::kWarn, "not ACTIVE/LinkUp: mlx5_1/1");
  expect(r, "rdma.mtu", Verdict::kWarn, "mlx5_0/1 active 1024 (max 4096), eth2 MTU 1500");
  CHECK(find(r, "rdma.mtu").fix.find("mtu 9000") != std::string::npos);
  expect(r, "rdma.gid", Verdict::kFail, "mlx5_0/1: no RoCEv2 GID bound to a routable IPv4 or global IPv6 address");
  expect(r, "rdma.flow_control", Verdict::kWarn, "ECN off on every priority, PFC off");
  expect(r, "rdma.firmware", Verdict::kFail, "ConnectX-6 below firmware 20.31.1014");
  expect(r, "limits.memlock", Verdict::kFail, "memlock 64 KiB");
  expect(r, "limits.cgroup_rdma", Verdict::kFail, "mlx5_0 hca_handle=2 hca_object=100");
  expect(r, "limits.shm", Verdict::kWarn, "/dev/shm 64.0 MiB");
  expect(r, "env.interfaces", Verdict::kFail, "NCCL_SOCKET_IFNAME=eth9: no interface starting with 'eth9'");
  CHECK(find(r, "env.interfaces").evidence.find("NCCL_IB_HCA=mlx5_3: no RDMA device/port matching 'mlx5_3'") !=
        std::string::npos);
  expect(r, "env.disabled", Verdict::kWarn, "NCCL_P2P_DISABLE=1, NCCL_NET=Socket");
}

TEST_CASE("NCCL_IB_GID_INDEX naming a link-local GID fails; naming the RoCEv2 one passes") {
  auto m = fixture("roce_ok");
  m.setEnv("NCCL_IB_GID_INDEX", "1");
  NodeReport r;
  checkRdma(m, r);
  expect(r, "rdma.gid", Verdict::kFail, "NCCL_IB_GID_INDEX=1 is RoCE v2 fe80");
  m.setEnv("NCCL_IB_GID_INDEX", "3");
  NodeReport ok;
  checkRdma(m, ok);
  expect(ok, "rdma.gid", Verdict::kPass, "(NCCL_IB_GID_INDEX=3)");
}

TEST_CASE("RoCE with a global IPv6 RoCEv2 GID only: usable (after the IPv4 rule)") {
  auto r = node("roce_v6");
  expect(r, "rdma.gid", Verdict::kPass, "mlx5_0/1: RoCEv2 GID 4 2001:0db8:0000:0000:0000:0000:0000:0005 (eth2)");
  CHECK(r.facts.at("gid_index.mlx5_0/1") == "4");
}

TEST_CASE("InfiniBand port down, no /dev/shm") {
  auto r = node("ib_down");
  expect(r, "rdma.port", Verdict::kFail, "no ACTIVE port: mlx5_0/1 1: DOWN, 2: Polling");
  expect(r, "rdma.mtu", Verdict::kSkip, "ibv_devinfo not found");
  expect(r, "limits.shm", Verdict::kFail, "/dev/shm is missing");
  expect(r, "rdma.firmware", Verdict::kPass, "MT4129 fw 28.39.1002");  // ConnectX-7: the CX-6 rule does not apply
}

TEST_CASE("dma-buf instead of peermem") {
  Hooks yes, no;
  yes.dmabuf = [](const std::string& d) { return std::make_pair(true, "dma-buf: " + d + " registered a 2 MiB buffer"); };
  no.dmabuf = [](const std::string&) { return std::make_pair(false, std::string("GPU 0 cannot export dma-buf")); };
  auto m = fixture("rtx4090x2");  // GPUs + a NIC, no peer-memory module
  NodeReport r0, r1, r2, r3;
  checkGpuDirect(m, {}, r0);
  expect(r0, "gpu.gpudirect_rdma", Verdict::kWarn, "dma-buf not probed");
  checkGpuDirect(m, yes, r1);
  expect(r1, "gpu.gpudirect_rdma", Verdict::kPass, "dma-buf works: dma-buf: mlx5_0 registered");
  checkGpuDirect(m, no, r2);
  expect(r2, "gpu.gpudirect_rdma", Verdict::kWarn, "dma-buf: GPU 0 cannot export dma-buf");
  checkGpuDirect(fixture("roce_ok"), yes, r3);  // a NIC but no GPU: skipped with the reason
  expect(r3, "gpu.gpudirect_rdma", Verdict::kSkip, "nvidia-smi not found");
}

TEST_CASE("nodes compared: versions, firmware, GID index, rates; differences flagged; exit 1") {
  auto a = node("roce_ok");
  auto m2 = fixture("roce_ok");
  m2.setEnv("FB_DOCTOR_TEST_VERSIONS", "mpi=Open MPI v9.9.9");
  auto b = checkNode(m2, {}, "n2");
  a.host = "n1";
  a.facts["version.mpi"] = "Open MPI v4.1.4";
  b.facts["fw.mlx5_0"] = "20.36.1010";
  b.facts["gid_index.mlx5_0/1"] = "5";
  CHECK(b.factSources.at("version.mpi").find("FB_DOCTOR_TEST_VERSIONS") != std::string::npos);
  Reachability ra, rb;
  ra.address = "10.0.0.5:4000";
  rb.address = "10.0.0.6:4000";
  ra.okMs["n2"] = 0.4;
  rb.failures["n1"] = "10.0.0.5:4000: no answer to connect within 3000 ms";
  Report rep = aggregate({a, b}, {ra, rb});
  auto row = [&](const std::string& id) {
    for (const auto& x : rep.rows)
      if (x.id == id) return x;
    FAIL("no row " << id);
    return Row{};
  };
  CHECK(row("software.same").verdict == Verdict::kFail);
  CHECK(row("software.same").evidence.find("mpi: 'Open MPI v4.1.4' on n1 vs 'Open MPI v9.9.9' on n2") != std::string::npos);
  CHECK(row("software.same").differs);
  CHECK(row("rdma.firmware_same").verdict == Verdict::kFail);
  CHECK(row("rdma.firmware_same").evidence.find("'20.35.1012' on n1 vs '20.36.1010' on n2") != std::string::npos);
  CHECK(row("rdma.gid_same").verdict == Verdict::kFail);
  CHECK(row("rdma.rate_same").verdict == Verdict::kPass);
  CHECK(row("net.reach").verdict == Verdict::kFail);
  CHECK(row("net.reach").evidence.find("n2 -> n1: 10.0.0.5:4000: no answer") != std::string::npos);
  // the same local findings merge into one row naming both nodes
  CHECK(row("rdma.port").nodes == std::vector<std::string>{"n1", "n2"});
  CHECK(!row("rdma.port").differs);
  CHECK(rep.exitCode() == 1);
  CHECK(rep.differences.size() >= 3);
  auto table = renderTable(rep);
  CHECK(table.find("check") == 0);
  CHECK(table.find("nodes differ:") != std::string::npos);
  CHECK(table.find("(differs)") != std::string::npos);
  auto j = toJson(rep, {a, b});
  CHECK(j["exit_code"] == 1);
  CHECK(j["nodes"].size() == 2);
  CHECK(nodeFromJson(toJson(b)).facts == b.facts);
}

TEST_CASE("a check that differs between nodes becomes one row per group, flagged") {
  auto a = node("roce_ok");
  auto b = node("roce_bad");
  a.host = "n1";
  b.host = "n2";
  Report rep = aggregate({a, b});
  int envRows = 0;
  for (const auto& x : rep.rows)
    if (x.id == "env.interfaces") {
      ++envRows;
      CHECK(x.differs);
    }
  CHECK(envRows == 2);
  CHECK(rep.fails > 0);
  Report one = aggregate({node("h200x2")});
  CHECK(one.exitCode() == 0);  // warn and skip only
  CHECK(one.warns > 0);
}

TEST_CASE("reachAddress follows NCCL_SOCKET_IFNAME rules") {
  auto m = fixture("roce_ok");
  CHECK(reachAddress(m, "", "n1").first == "10.0.0.5");
  m.setEnv("NCCL_SOCKET_IFNAME", "=eth0");
  CHECK(reachAddress(m, "", "n1").first == "192.168.1.10");
  m.setEnv("NCCL_SOCKET_IFNAME", "^eth2,eth0");
  CHECK_THROWS_WITH(reachAddress(m, "", "n1"), Catch::Contains("matches no interface"));
  m.setEnv("NCCL_SOCKET_IFNAME", "eth9");
  CHECK_THROWS_WITH(reachAddress(m, "", "n1"), Catch::Contains("NCCL_SOCKET_IFNAME=eth9"));
}

// GPU-NIC placement against NCCL's own logs: real NCCL INFO logs (tests/data/nccl-info, published
// multi-node runs; tests/data/nccl_logs, our GPU host) read with PCIe trees of fixture machines
// (tests/data/doctor, written by make_fixtures.py around the logs' GPU bus IDs and NIC names).
// Every expected warning is listed in full and compared as a set; the wrong ones are counted.
#include <catch2/catch.hpp>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "doctor/nic_placement.h"

namespace {

std::string readText(const std::string& rel) {
  std::ifstream f(std::string(FB_TEST_DATA) + "/" + rel);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fb::doctor::PcieMap mapOf(const std::string& fixture) {
  return fb::doctor::readPcieMap(fb::doctor::Machine(std::string(FB_TEST_DATA) + "/doctor/" + fixture));
}

int compareWarnings(const std::vector<std::string>& got, const std::set<std::string>& want, const std::string& what) {
  int wrong = 0;
  std::set<std::string> g(got.begin(), got.end());
  for (const auto& w : want)
    if (!g.count(w)) {
      ++wrong;
      std::cerr << what << ": missing warning: " << w << "\n";
    }
  for (const auto& w : g)
    if (!want.count(w)) {
      ++wrong;
      std::cerr << what << ": unexpected warning: " << w << "\n";
    }
  return wrong;
}

const char* kSnellius = "nccl-info/h100-snellius-ib-2x4-pxn-gdrdma-nccl2.22.3-allreduce.log";
const char* kRoce2 = "nccl-info/a100pcie-roce-2x2-nogdr-nccl2.30.4.log";
const char* kSocket = "nccl-info/2x4gpu-socket-nolibibverbs-nccl2.7.8-node0.log";

}  // namespace

TEST_CASE("NCCL's busId number reads as a PCI address", "[placement]") {
  CHECK(fb::topo::ncclBusIdToBdf("18000") == "0000:18:00.0");
  CHECK(fb::topo::ncclBusIdToBdf("60") == "0000:00:06.0");
  CHECK(fb::topo::ncclBusIdToBdf("101d0") == "0000:10:1d.0");
  CHECK(fb::topo::ncclBusIdToBdf("c6001") == "0000:c6:00.1");
  CHECK(fb::topo::ncclBusIdToBdf("zz") == "zz");
}

TEST_CASE("each rank's GPU and the NICs its traffic left through, from the log", "[placement]") {
  // Snellius gcn151: "rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 6000" ... ; rank 0 "0[0] -> 4[0] [send]
  // via NET/IB/2/GDRDMA", rank 3's PXN send "3[3] -> 4[0] [send] via NET/IB/2(0)" counts for rank 0.
  auto a = fb::topo::attestNcclLog(readText(kSnellius));
  struct R {
    int rank;
    const char* host;
    const char* bdf;
    std::set<int> nics;
  };
  const std::vector<R> want = {{0, "gcn151", "0000:06:00.0", {2}}, {1, "gcn151", "0000:26:00.0", {1}},
                               {2, "gcn151", "0000:a6:00.0", {4}}, {3, "gcn151", "0000:c6:00.0", {3}},
                               {4, "gcn154", "0000:06:00.0", {2}}, {5, "gcn154", "0000:26:00.0", {1}},
                               {6, "gcn154", "0000:a6:00.0", {4}}, {7, "gcn154", "0000:c6:00.0", {3}}};
  int wrong = 0;
  for (const auto& w : want) {
    auto it = a.ranks.find(w.rank);
    bool ok = it != a.ranks.end() && it->second.host == w.host && it->second.busId == w.bdf && it->second.nics == w.nics &&
              it->second.gdr && !it->second.noGdr;
    if (!ok) {
      ++wrong;
      std::cerr << "rank " << w.rank << " wrong\n";
    }
  }
  CHECK(a.ranks.size() == want.size());
  // a100pcie RoCE 2x2: NET/IB/2 (a virtual NIC), no GDRDMA on any connection.
  auto b = fb::topo::attestNcclLog(readText(kRoce2));
  for (int r = 0; r < 4; ++r) {
    auto it = b.ranks.find(r);
    bool ok = it != b.ranks.end() && it->second.nics == std::set<int>{2} && it->second.noGdr && !it->second.gdr &&
              it->second.busId == (r % 2 == 0 ? "0000:69:00.0" : "0000:b1:00.0");
    if (!ok) {
      ++wrong;
      std::cerr << "roce 2x2 rank " << r << " wrong\n";
    }
  }
  std::cout << "ranks read from 2 logs: " << want.size() + 4 << ", wrong = " << wrong << "\n";
  CHECK(wrong == 0);
}

TEST_CASE("the PCIe tree of a fixture machine", "[placement]") {
  auto m = mapOf("nic_crossed");
  REQUIRE(m.gpus.size() == 4);
  REQUIRE(m.nics.size() == 5);
  CHECK(m.gpus.at("0000:c6:00.0").hostBridge == "pci0000:c0");
  CHECK(m.gpus.at("0000:c6:00.0").numa == 1);
  CHECK(m.nics.at("mlx5_4").hostBridge == "pci0000:a0");
  CHECK(m.peerMemory == "nvidia_peermem 535.129.03");
  CHECK(m.activeRdmaPorts.size() == 5);
  using fb::doctor::pcieDistance;
  CHECK(pcieDistance(m.gpus.at("0000:c6:00.0"), m.nics.at("mlx5_5")) == "PXB");
  CHECK(pcieDistance(m.gpus.at("0000:c6:00.0"), m.nics.at("mlx5_4")) == "NODE");
  CHECK(pcieDistance(m.gpus.at("0000:06:00.0"), m.nics.at("mlx5_4")) == "SYS");
  CHECK(pcieDistance(m.gpus.at("0000:06:00.0"), m.nics.at("mlx5_0")) == "NODE");
  auto g = mapOf("gdr_possible");
  CHECK(pcieDistance(g.gpus.at("0000:69:00.0"), g.nics.at("mlx5_0")) == "PXB");
  CHECK(pcieDistance(g.gpus.at("0000:b1:00.0"), g.nics.at("mlx5_1")) == "SYS");
  CHECK(mapOf("gdr_no_peermem").peerMemory.empty());
  CHECK(mapOf("ib_down").activeRdmaPorts.empty());
  CHECK(mapOf("roce_ok").activeRdmaPorts == std::vector<std::string>{"mlx5_0 port 1 (Ethernet)"});
}

TEST_CASE("warnings of real logs against fixture trees", "[placement]") {
  using fb::doctor::ncclPlacementWarnings;
  int wrong = 0, cases = 0;
  auto check = [&](const char* log, const char* fixture, const std::string& host, int nodes,
                   const std::set<std::string>& want, const std::string& gdrLevel = "") {
    ++cases;
    auto a = fb::topo::attestNcclLog(readText(log));
    auto got = ncclPlacementWarnings(a, host, mapOf(fixture), nodes, gdrLevel);
    wrong += compareWarnings(got, want, std::string(log) + " on " + fixture);
  };
  // Each GPU beside the NIC NCCL used: nothing to say.
  check(kSnellius, "nic_aligned", "gcn151", 2, {});
  // mlx5_4/mlx5_5 swapped: GPUs a6 and c6 reach their NIC through another root complex.
  check(kSnellius, "nic_crossed", "gcn151", 2,
        {"GPU 0000:a6:00.0 (rank 2) sends through mlx5_5:1 (mlx5_5) across PCIe root complexes (NODE: GPU below "
         "pci0000:a0 NUMA 1, NIC below pci0000:c0 NUMA 1); nearest RDMA NIC: mlx5_4 (PXB), check NCCL_IB_HCA",
         "GPU 0000:c6:00.0 (rank 3) sends through mlx5_4:1 (mlx5_4) across PCIe root complexes (NODE: GPU below "
         "pci0000:c0 NUMA 1, NIC below pci0000:a0 NUMA 1); nearest RDMA NIC: mlx5_5 (PXB), check NCCL_IB_HCA"});
  // Every rank in the log, whatever its host: gcn154's ranks have the same bus IDs, so they warn alike.
  check(kSnellius, "nic_crossed", "", 2,
        {"GPU 0000:a6:00.0 (rank 2) sends through mlx5_5:1 (mlx5_5) across PCIe root complexes (NODE: GPU below "
         "pci0000:a0 NUMA 1, NIC below pci0000:c0 NUMA 1); nearest RDMA NIC: mlx5_4 (PXB), check NCCL_IB_HCA",
         "GPU 0000:c6:00.0 (rank 3) sends through mlx5_4:1 (mlx5_4) across PCIe root complexes (NODE: GPU below "
         "pci0000:c0 NUMA 1, NIC below pci0000:a0 NUMA 1); nearest RDMA NIC: mlx5_5 (PXB), check NCCL_IB_HCA",
         "GPU 0000:a6:00.0 (rank 6) sends through mlx5_5:1 (mlx5_5) across PCIe root complexes (NODE: GPU below "
         "pci0000:a0 NUMA 1, NIC below pci0000:c0 NUMA 1); nearest RDMA NIC: mlx5_4 (PXB), check NCCL_IB_HCA",
         "GPU 0000:c6:00.0 (rank 7) sends through mlx5_4:1 (mlx5_4) across PCIe root complexes (NODE: GPU below "
         "pci0000:c0 NUMA 1, NIC below pci0000:a0 NUMA 1); nearest RDMA NIC: mlx5_5 (PXB), check NCCL_IB_HCA"});
  // No GDRDMA although nvidia_peermem is loaded and the card is below GPU 69's switch; GPU b1 sits
  // on the other socket (SYS), so GDR is not expected there, but the crossing is named.
  const std::string crossB1 =
      "GPU 0000:b1:00.0 (rank 1) sends through virtual NIC 2 (mlx5_0) across PCIe root complexes (SYS: GPU below "
      "pci0000:b0 NUMA 1, NIC below pci0000:64 NUMA 0); no RDMA NIC of this node is nearer";
  const std::string gdr69 =
      "GPUDirect RDMA possible for GPU 0000:69:00.0 (rank 0) and mlx5_0 (PXB, nvidia_peermem 535.129.03 loaded) but "
      "NCCL's NET connections of that GPU were not GDRDMA: ";
  check(kRoce2, "gdr_possible", "ubuntu2", 2,
        {crossB1, gdr69 + "check NCCL_NET_GDR_LEVEL / NCCL_NET_GDR_READ and the log's GDR lines"});
  check(kRoce2, "gdr_possible", "ubuntu2", 2, {crossB1, gdr69 + "the site sets NCCL_NET_GDR_LEVEL=LOC"}, "LOC");
  check(kRoce2, "gdr_no_peermem", "ubuntu2", 2, {crossB1});
  // GDRDMA used (Snellius, every connection): no GDR warning even with peermem.
  // Sockets between nodes while an RDMA port is up (roce_ok: mlx5_0 port 1 ACTIVE), not when it is
  // down (ib_down) or when every rank is on one node.
  const std::string sock =
      "NCCL fell back to NET/Socket (TCP) between nodes while RDMA port mlx5_0 port 1 (Ethernet) is up: check "
      "NCCL_IB_DISABLE, NCCL_NET, the net plugin and libibverbs (--doctor)";
  check(kSocket, "roce_ok", "", 2, {sock});
  check(kSocket, "ib_down", "", 2, {});
  check(kSocket, "roce_ok", "", 1, {});
  // Our GPU host's real logs (tests/data/nccl_logs): no RDMA device, so nothing to warn about.
  for (const char* l : {"nccl_logs/h200x1_hostid2_training_rank0.log", "nccl_logs/h200x2_socket_rank0.log",
                        "nccl_logs/h200x2_nvlink_rank0.log", "nccl_logs/h200x2_shm_rank0.log"})
    check(l, "h200x2", "", 2, {});
  std::cout << "placement cases: " << cases << ", wrong = " << wrong << "\n";
  CHECK(wrong == 0);
}

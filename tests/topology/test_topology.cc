// Topology parsers on real nvidia-smi output saved from the 2×H200 host (tests/data/topology/):
// `nvidia-smi topo -m`, `topo -p2p r`, `nvlink -s`, the --query-gpu CSV, sysfs PCIe strings.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "topology/topology.h"

namespace {

std::string readData(const std::string& name) {
  std::ifstream f(std::string(FB_TEST_DATA) + "/topology/" + name);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("nvidia-smi topo -m (NV18, ANSI underline in the header)") {
  auto m = fb::topo::parseTopoMatrix(readData("topo_m.txt"));
  CHECK(m.columns == std::vector<std::string>{"GPU0", "GPU1", "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"});
  CHECK(m.rowNames == std::vector<std::string>{"GPU0", "GPU1"});
  CHECK(m.at("GPU0", "GPU1") == "NV18");
  CHECK(m.at("GPU1", "GPU0") == "NV18");
  CHECK(m.at("GPU0", "GPU0") == "X");
  CHECK(m.at("GPU0", "CPU Affinity") == "0-31");
  CHECK(m.at("GPU1", "NUMA Affinity") == "0");
  CHECK(m.at("GPU7", "GPU0").empty());
}

TEST_CASE("nvidia-smi topo -p2p r") {
  auto m = fb::topo::parseTopoMatrix(readData("topo_p2p_r.txt"));
  CHECK(m.rowNames == std::vector<std::string>{"GPU0", "GPU1"});
  CHECK(m.at("GPU0", "GPU1") == "OK");
  CHECK(m.at("GPU1", "GPU1") == "X");
}

TEST_CASE("nvidia-smi nvlink -s: 18 links x 26.562 GB/s per GPU") {
  auto nv = fb::topo::parseNvlinkStatus(readData("nvlink_s.txt"));
  REQUIRE(nv.size() == 2);
  CHECK(nv[0].size() == 18);
  CHECK(nv[1].size() == 18);
  CHECK(nv[1][17] == Approx(26.562));
}

TEST_CASE("whole topology: NVLink between the GPUs, nominal rates, description") {
  auto t = fb::topo::buildTopology(readData("topo_m.txt"), readData("topo_p2p_r.txt"), readData("nvlink_s.txt"),
                                   readData("gpu_query.csv"));
  REQUIRE(t.gpus.size() == 2);
  CHECK(t.gpus[0].name == "NVIDIA H200");
  CHECK(t.gpus[1].busId == "00000000:00:07.0");
  CHECK(t.gpus[0].pcieGenMax == 5);
  CHECK(t.gpus[0].pcieWidthMax == 16);
  CHECK(t.gpus[0].numaNode == 0);
  CHECK(t.gpus[0].cpuAffinity == "0-31");
  CHECK(t.driverVersion == "580.159.04");
  CHECK(t.link(0, 1) == "NV18");
  CHECK(t.nvlinkBetween(0, 1));
  CHECK(t.p2pOk(0, 1));
  CHECK(t.gpus[0].nvlinkTotalGBps() == Approx(18 * 26.562));
  auto text = fb::topo::describe(t);
  CHECK(text.find("NV18") != std::string::npos);
  CHECK(text.find("NVLink 18 links x 26.562 GB/s") != std::string::npos);
  CHECK(text.find("PCIe Gen5 x16") != std::string::npos);
}

TEST_CASE("sysfs PCIe strings saved from the host") {
  std::istringstream in(readData("sysfs_pci.txt"));
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    auto at = line.find("speed=");
    REQUIRE(at != std::string::npos);
    CHECK(fb::topo::pcieGenFromSysfsSpeed(line.substr(at + 6)) == 5);
    ++n;
  }
  CHECK(n == 2);
}

TEST_CASE("PCIe nominal rates and sysfs speed strings") {
  CHECK(fb::topo::pcieGenFromSysfsSpeed("16.0 GT/s PCIe") == 4);
  CHECK(fb::topo::pcieGenFromSysfsSpeed("8.0 GT/s PCIe") == 3);
  CHECK(fb::topo::pcieGenFromSysfsSpeed("garbage") == 0);
  CHECK(fb::topo::pcieNominalGBps(5, 16) == Approx(63.0).epsilon(0.001));
  CHECK(fb::topo::pcieNominalGBps(4, 16) == Approx(31.5).epsilon(0.001));
  CHECK(fb::topo::pcieNominalGBps(0, 16) == 0);
  CHECK(fb::topo::rdmaRateGBps("200 Gb/sec (4X HDR)") == Approx(25.0));
  CHECK(fb::topo::rdmaRateGBps("") == 0);
}

TEST_CASE("RDMA ports from a sysfs tree: IB port and a RoCE v2 GID with an IPv4 address") {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("fb-topo-sysfs-" + std::to_string(::getpid()));
  auto put = [&](const fs::path& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text << "\n";
  };
  put("sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand");
  put("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE");
  put("sys/class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)");
  put("sys/class/infiniband/mlx5_1/ports/1/link_layer", "Ethernet");
  put("sys/class/infiniband/mlx5_1/ports/1/state", "4: ACTIVE");
  put("sys/class/infiniband/mlx5_1/ports/1/rate", "100 Gb/sec (4X EDR)");
  put("sys/class/infiniband/mlx5_1/ports/1/gid_attrs/types/0", "IB/RoCE v1");
  put("sys/class/infiniband/mlx5_1/ports/1/gids/0", "fe80:0000:0000:0000:0000:0000:0000:0001");
  put("sys/class/infiniband/mlx5_1/ports/1/gid_attrs/types/1", "RoCE v2");
  put("sys/class/infiniband/mlx5_1/ports/1/gids/1", "fe80:0000:0000:0000:0000:0000:0000:0001");
  put("sys/class/infiniband/mlx5_1/ports/1/gid_attrs/types/3", "RoCE v2");
  put("sys/class/infiniband/mlx5_1/ports/1/gids/3", "0000:0000:0000:0000:0000:ffff:0a00:0001");
  auto ports = fb::topo::scanRdmaPorts(fb::topo::Machine(root.string()));
  fs::remove_all(root);
  REQUIRE(ports.size() == 2);
  CHECK(ports[0].device == "mlx5_0");
  CHECK(ports[0].linkLayer == "InfiniBand");
  CHECK(ports[0].active());
  CHECK(ports[0].roceV2GidIndex == -1);
  CHECK(fb::topo::rdmaRateGBps(ports[0].rate) == Approx(25.0));
  CHECK(ports[1].linkLayer == "Ethernet");
  CHECK(ports[1].roceV2GidIndex == 3);
}

TEST_CASE("GPU peer nominal rate: NVLink links x rate between the H200s, else PCIe gen x width") {
  auto t = fb::topo::buildTopology(readData("topo_m.txt"), readData("topo_p2p_r.txt"), readData("nvlink_s.txt"),
                                   readData("gpu_query.csv"));
  // CUDA's bus id form (4-digit domain) against nvidia-smi's (8-digit).
  auto nv = fb::topo::gpuPeerNominal(t, "0000:00:06.0", {"0000:00:07.0"});
  CHECK(nv.gbps == Approx(18 * 26.562));
  CHECK(nv.basis == "18 NVLink links x 26.562 GB/s (nvidia-smi nvlink -s)");
  // Without a peer on NVLink (no peers given): the PCIe Gen5 x16 link.
  auto pcie = fb::topo::gpuPeerNominal(t, "00000000:00:06.0", {});
  CHECK(pcie.gbps == Approx(fb::topo::pcieNominalGBps(5, 16)));
  CHECK(pcie.basis == "PCIe Gen5 x16");
  auto none = fb::topo::gpuPeerNominal(t, "0000:99:00.0", {"0000:00:07.0"});
  CHECK(none.gbps == -1);
}

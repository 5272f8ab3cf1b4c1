// The machine inventory (lib/topology/inventory.h) on the doctor's fixture machines
// (tests/data/doctor): RDMA devices, ports and GID tables from sysfs; GPUs from the nvidia-smi
// fixture and from a fake NVML (inventory_fixtures.h), and which source the selection takes.
// Every comparison counts the fields that differ, so one wrong field fails. The GPU links, P2P,
// NVLink speeds and the NVML session are in test_inventory_links.cc.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "inventory_fixtures.h"
#include "topology/inventory.h"
#include "topology/topology.h"

using namespace fb::topo;

TEST_CASE("inventory RDMA: devices, ports and GID tables of the roce_ok and roce_bad fixtures", "[inventory]") {
  auto ok = readRdma(fixture("roce_ok"));
  REQUIRE(ok.size() == 1);
  const auto& d = ok[0];
  int bad = 0;
  auto eq = [&](const std::string& what, const std::string& got, const std::string& want) {
    if (got != want) {
      ++bad;
      UNSCOPED_INFO(what << ": got '" << got << "', want '" << want << "'");
    }
  };
  eq("name", d.name, "mlx5_0");
  eq("hca_type", d.hcaType, "MT4123");
  REQUIRE(d.ports.size() == 1);
  const auto& p = d.ports[0];
  eq("state", p.state, "4: ACTIVE");
  eq("phys_state", p.physState, "5: LinkUp");
  eq("rate", p.rate, "100 Gb/sec (4X EDR)");
  eq("link_layer", p.linkLayer, "Ethernet");
  eq("netdev", p.netdev, "eth2");
  // gids 0..3 populated, 15 all zero (dropped); indices sorted as numbers, not as text ("15" < "2")
  const std::vector<RdmaGid> want = {{0, "fe80:0000:0000:0000:0ac0:ebff:fe12:3456", "IB/RoCE v1", "eth2"},
                                     {1, "fe80:0000:0000:0000:0ac0:ebff:fe12:3456", "RoCE v2", "eth2"},
                                     {2, "0000:0000:0000:0000:0000:ffff:0a00:0005", "IB/RoCE v1", "eth2"},
                                     {3, "0000:0000:0000:0000:0000:ffff:0a00:0005", "RoCE v2", "eth2"}};
  REQUIRE(p.gids.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    eq("gid index " + std::to_string(i), std::to_string(p.gids[i].index), std::to_string(want[i].index));
    eq("gid " + std::to_string(i), p.gids[i].gid, want[i].gid);
    eq("gid type " + std::to_string(i), p.gids[i].type, want[i].type);
    eq("gid netdev " + std::to_string(i), p.gids[i].netdev, want[i].netdev);
  }
  CHECK(bad == 0);

  auto rb = readRdma(fixture("roce_bad"));
  REQUIRE(rb.size() == 2);
  bad = 0;
  eq("dev 1", rb[1].name, "mlx5_1");
  eq("fw", rb[1].fwVer, "20.28.1002");
  eq("node_type", rb[1].nodeType, "1: CA");
  eq("board_id", rb[1].boardId, "MT_0000000222");
  REQUIRE(rb[1].ports.size() == 1);
  eq("state", rb[1].ports[0].state, "1: DOWN");
  eq("phys_state", rb[1].ports[0].physState, "3: Disabled");
  eq("no netdev", rb[1].ports[0].netdev, "");
  CHECK(rb[1].ports[0].gids.empty());
  CHECK_FALSE(rb[1].ports[0].active());
  CHECK(rb[0].ports[0].active());
  CHECK(bad == 0);

  // the ports the NCCL path profiles and --list use: the RoCE v2 GID on an IPv4 address is 3
  auto ports = rdmaPorts(ok);
  REQUIRE(ports.size() == 1);
  CHECK(ports[0].roceV2GidIndex == 3);
  CHECK(readRdma(fixture("h200x2")).empty());  // no RDMA device
}

TEST_CASE("inventory RDMA: netdev fallback, numeric port order, port counters", "[inventory]") {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("fb-inv-" + std::to_string(::getpid()));
  auto put = [&](const std::string& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text << "\n";
  };
  put("sys/class/infiniband/rxe0/ports/1/state", "4: ACTIVE");
  put("sys/class/infiniband/rxe0/ports/10/state", "1: DOWN");
  put("sys/class/infiniband/rxe0/ports/2/state", "1: DOWN");
  put("sys/class/infiniband/rxe0/device/net/enp1s0/mtu", "1500");
  put("sys/class/infiniband/rxe0/device/net/dummy0/mtu", "1500");
  put("sys/class/infiniband/rxe0/ports/1/counters/symbol_error", "0");
  put("sys/class/infiniband/rxe0/ports/1/counters/link_downed", "3");
  put("sys/class/infiniband/rxe0/ports/1/counters/port_xmit_data", "18446744073709551615x");  // not a number: left out
  auto devs = readRdma(Machine(root.string()));
  fs::remove_all(root);
  REQUIRE(devs.size() == 1);
  CHECK(devs[0].netdevs == std::vector<std::string>{"dummy0", "enp1s0"});
  REQUIRE(devs[0].ports.size() == 3);
  std::vector<int> order;
  for (const auto& p : devs[0].ports) order.push_back(p.port);
  CHECK(order == std::vector<int>{1, 2, 10});
  CHECK(devs[0].ports[0].netdev == "dummy0");
  // the error counters acceptance compares before and after a run
  CHECK(devs[0].ports[0].counters == std::map<std::string, long long>{{"link_downed", 3}, {"symbol_error", 0}});
  CHECK(devs[0].ports[1].counters.empty());
}

TEST_CASE("inventory GPUs: the nvidia-smi fallback on a fixture says so and reads every field", "[inventory]") {
  auto inv = readGpus(fixture("h200x2"));
  CHECK(inv.source == "nvidia-smi");
  CHECK(inv.nvmlWhy == "no NVML on a recorded machine");
  CHECK(inv.smiFound);
  CHECK(inv.smiOk);
  CHECK(inv.driverVersion == "580.159.04");
  CHECK(mismatches(inv.gpus, kH200) == 0);

  // no NVML and no nvidia-smi: nothing answered, and both reasons are kept
  auto none = readGpus(fixture("roce_ok"));
  CHECK(none.source.empty());
  CHECK_FALSE(none.smiFound);
  CHECK(none.smiError == "nvidia-smi not found in PATH");
  CHECK(none.gpus.empty());
}

TEST_CASE("inventory GPUs: NVML answers first and agrees with nvidia-smi field by field", "[inventory]") {
  FakeNvml f = h200Nvml();
  GpuInventory viaNvml, smi;
  {
    NvmlSession session(fakeLoader(f));
    viaNvml = readGpus(fixture("h200x2"), session);
    CHECK(viaNvml.source == "nvml");
    CHECK(viaNvml.nvmlWhy.empty());
    CHECK_FALSE(viaNvml.smiFound);  // nvidia-smi not run when NVML answered
    CHECK(viaNvml.driverVersion == "580.159.04");
    CHECK(mismatches(viaNvml.gpus, kH200) == 0);
    CHECK(f.inits == 1);
    CHECK(f.shutdowns == 0);  // the caller's session: still open
    // the two sources the GPU step compares
    smi = readGpus(fixture("h200x2"), session, GpuSource::kNvidiaSmi);
    CHECK(smi.source == "nvidia-smi");
    CHECK(smi.nvmlWhy == "not asked (nvidia-smi only)");
    CHECK(f.inits == 1);  // kNvidiaSmi does not touch NVML
  }
  CHECK(f.shutdowns == 1);  // shut down once, when the session goes
  std::vector<std::vector<std::string>> smiValues;
  for (const auto& g : smi.gpus) smiValues.push_back(gpuFactValues(g));
  CHECK(mismatches(viaNvml.gpus, smiValues) == 0);

  // the topology built from NVML's answer: PCIe Gen5 x16 nominal, GPU0-GPU1 NV18 from topo -m
  auto t = buildTopology(gpuTopoMatrix(fixture("h200x2")).out, gpuP2pReadMatrix(fixture("h200x2")).out, "",
                         viaNvml.gpus);
  REQUIRE(t.gpus.size() == 2);
  CHECK(t.link(0, 1) == "NV18");
  CHECK(t.p2pOk(0, 1));
  CHECK(t.driverVersion == "580.159.04");
  auto n = gpuPeerNominal(t, "0000:00:06.0", {});
  CHECK(n.basis == "PCIe Gen5 x16");
  CHECK(n.gbps == Approx(pcieNominalGBps(5, 16)));
}

TEST_CASE("inventory GPUs: NVML unsupported fields read [N/A], memory in MiB, MIG enabled", "[inventory]") {
  FakeNvml f = h200Nvml();
  f.gpus[0].migRc = nvml::kNotSupported;  // a GPU without MIG: nvidia-smi prints [N/A]
  f.gpus[1].mig = nvml::kMigEnable;
  f.gpus[1].memoryBytes = (81559ull << 20) + 12345;  // MiB rounded down, as nvidia-smi
  f.missing = {"nvmlDeviceGetVbiosVersion"};          // an older library
  auto inv = readGpus(fixture("h200x2"), fakeSession(f), GpuSource::kNvml);
  REQUIRE(inv.source == "nvml");
  auto want = kH200;
  want[0][11] = "[N/A]";
  want[1][11] = "Enabled";
  want[1][4] = "81559";
  want[0][6] = want[1][6] = "[N/A]";
  CHECK(mismatches(inv.gpus, want) == 0);
}

TEST_CASE("inventory GPUs: when NVML fails the fallback names why; kNvml alone does not fall back", "[inventory]") {
  {  // the library is absent
    auto inv = readGpus(fixture("h200x2"), NvmlSession(noNvml("libnvidia-ml.so.1 not loaded: cannot open shared object file")));
    CHECK(inv.source == "nvidia-smi");
    CHECK(inv.nvmlWhy == "libnvidia-ml.so.1 not loaded: cannot open shared object file");
    CHECK(mismatches(inv.gpus, kH200) == 0);
  }
  {  // nvmlInit_v2 fails (driver not loaded): no shutdown owed, nvidia-smi answers
    FakeNvml f = h200Nvml();
    f.initRc = 9;
    auto inv = readGpus(fixture("h200x2"), fakeSession(f));
    CHECK(inv.source == "nvidia-smi");
    CHECK(inv.nvmlWhy == "nvmlInit_v2: Driver Not Loaded");
    CHECK(f.inits == 1);
    CHECK(f.shutdowns == 0);
    auto only = readGpus(fixture("h200x2"), fakeSession(f), GpuSource::kNvml);
    CHECK(only.source.empty());
    CHECK_FALSE(only.smiFound);  // not run
    CHECK(only.gpus.empty());
  }
  {  // a required symbol is missing
    FakeNvml f = h200Nvml();
    f.missing = {"nvmlDeviceGetCount_v2"};
    auto inv = readGpus(fixture("rtx4090x2"), fakeSession(f));
    CHECK(inv.source == "nvidia-smi");
    CHECK(inv.nvmlWhy == "libnvidia-ml.so.1 lacks nvmlDeviceGetCount_v2");
    CHECK(f.inits == 0);
    REQUIRE(inv.gpus.size() == 2);
    CHECK(inv.gpus[1].name == "NVIDIA GeForce RTX 4090");
    CHECK(inv.gpus[1].migMode == "[N/A]");
  }
}

TEST_CASE("inventory GPU query parser: 12 fields per line, others skipped", "[inventory]") {
  auto g = parseInventoryGpuQuery(
      "0, NVIDIA H200, GPU-x, 00000000:00:06.0, 143771, 580.159.04, 96.00.A5.00.1A, 5, 5, 16, 16, Disabled\n"
      "1, NVIDIA H200, GPU-y, 00000000:00:07.0, 143771, 580.159.04, 96.00.A5.00.1A, 5, 5, 16\n"  // short
      "\n"
      "2, NVIDIA A100, SXM4, GPU-z, 00000000:07:00.0, 81920, 535.1, 92.00, 4, 4, 16, 16, Enabled\n");  // 13: comma in name
  REQUIRE(g.size() == 1);
  CHECK(g[0].uuid == "GPU-x");
  CHECK(g[0].migMode == "Disabled");
}

TEST_CASE("NVML SM clock: by CUDA's or NVML's bus id, now and its maximum; why when it cannot say", "[inventory]") {
  FakeNvml f = h200Nvml();
  f.gpus[0].smClock = 1980, f.gpus[0].smClockMax = 1980;
  f.gpus[1].smClock = 345, f.gpus[1].smClockMax = 1980;  // an idle GPU
  {
    NvmlSession s(fakeLoader(f));
    std::string why;
    auto c = readSmClock(s, "0000:00:07.0", why);  // cudaDeviceGetPCIBusId's form
    REQUIRE(c.has_value());
    CHECK(c->curMhz == 345);
    CHECK(c->maxMhz == 1980);
    auto c0 = readSmClock(s, "00000000:00:06.0", why);  // NVML's own form
    REQUIRE(c0.has_value());
    CHECK(c0->curMhz == 1980);
    CHECK_FALSE(readSmClock(s, "0000:00:08.0", why).has_value());
    CHECK(why == "NVML lists no GPU at 0000:00:08.0");
    CHECK_FALSE(readSmClock(s, "not a bus id", why).has_value());
    // the text a row carries as sm_clock_MHz
    CHECK(smClockText(s, "0000:00:07.0") == "345 of max 1980");
    CHECK(smClockText(s, "?") == "not read: NVML lists no GPU at ?");
    CHECK(smClockText(s, "") == "not read: CUDA gave no PCI bus id for the GPU");
  }
  f.missing = {"nvmlDeviceGetMaxClockInfo"};
  NvmlSession s(fakeLoader(f));
  std::string why;
  CHECK_FALSE(readSmClock(s, "0000:00:06.0", why).has_value());
  CHECK(why == "libnvidia-ml.so.1 lacks nvmlDeviceGetMaxClockInfo");
  NvmlSession none(noNvml("no libnvidia-ml.so.1"));
  CHECK_FALSE(readSmClock(none, "0000:00:06.0", why).has_value());
  CHECK(why == "no libnvidia-ml.so.1");
}

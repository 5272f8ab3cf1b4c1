// The machine inventory (lib/topology/inventory.h) on the doctor's fixture machines
// (tests/data/doctor): RDMA devices, ports and GID tables from sysfs; GPUs from the nvidia-smi
// fixture and from a fake NVML (a symbol loader handing out the functions below), and which source
// the selection takes. Every comparison counts the fields that differ, so one wrong field fails.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "topology/inventory.h"
#include "topology/topology.h"

using namespace fb::topo;

namespace {

const std::string kFixtures = FB_TEST_DATA "/doctor";
Machine fixture(const std::string& name) { return Machine(kFixtures + "/" + name); }

// What the h200x2 fixture's nvidia-smi query answers, field by field (gpuFactNames order).
const std::vector<std::vector<std::string>> kH200 = {
    {"0", "NVIDIA H200", "GPU-dcb12c3d-829c-e1af-f387-4975af14d0d4", "00000000:00:06.0", "143771", "580.159.04",
     "96.00.A5.00.1A", "5", "5", "16", "16", "Disabled"},
    {"1", "NVIDIA H200", "GPU-3a819cdb-d032-6280-36f1-3b58795dc238", "00000000:00:07.0", "143771", "580.159.04",
     "96.00.A5.00.1A", "5", "5", "16", "16", "Disabled"}};

int mismatches(const std::vector<GpuFacts>& got, const std::vector<std::vector<std::string>>& want) {
  int bad = got.size() == want.size() ? 0 : 1;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    auto v = gpuFactValues(got[i]);
    REQUIRE(v.size() == gpuFactNames().size());
    for (std::size_t k = 0; k < v.size(); ++k)
      if (v[k] != want[i][k]) {
        ++bad;
        UNSCOPED_INFO("GPU " << i << " " << gpuFactNames()[k] << ": got '" << v[k] << "', want '" << want[i][k] << "'");
      }
  }
  return bad;
}

// ---- a fake libnvidia-ml: two H200s, answers typed as NVML gives them.
struct FakeGpu {
  unsigned index;
  const char* name;
  const char* uuid;
  const char* busId;
  unsigned long long memoryBytes;
  const char* vbios;
  unsigned genCur, genMax, widthCur, widthMax;
  nvml::Return migRc;  // kSuccess or kNotSupported
  unsigned mig;
};
struct FakeNvml {
  std::vector<FakeGpu> gpus;
  nvml::Return initRc = nvml::kSuccess;
  int inits = 0, shutdowns = 0;
  std::vector<std::string> missing;  // symbols the fake library lacks
  std::vector<std::vector<std::string>> links;  // per GPU: each active NVLink's remote PCI bus id
  unsigned ancestor = 50;                       // nvmlGpuTopologyLevel_t of every pair (SYSTEM)
  std::vector<std::vector<int>> p2p;            // [i][j] nvmlGpuP2PStatus_t; empty: OK for every pair
  unsigned linkMbps = 26562;                    // every active NVLink's speed field (MBps)
  bool perLinkSpeed = true, commonSpeed = true; // NVLINK_GET_SPEED / NVLINK_SPEED_MBPS_COMMON answer
};
FakeNvml* g_fake = nullptr;

FakeGpu& dev(nvml::Device d) { return g_fake->gpus.at(reinterpret_cast<std::uintptr_t>(d) - 1); }
nvml::Return copyText(const char* s, char* buf, unsigned n) {
  if (std::strlen(s) + 1 > n) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::strcpy(buf, s);
  return nvml::kSuccess;
}

nvml::Return fakeInit() {
  ++g_fake->inits;
  return g_fake->initRc;
}
nvml::Return fakeShutdown() {
  ++g_fake->shutdowns;
  return nvml::kSuccess;
}
const char* fakeErrorString(nvml::Return rc) { return rc == 9 ? "Driver Not Loaded" : "Unknown Error"; }
nvml::Return fakeCount(unsigned* n) {
  *n = static_cast<unsigned>(g_fake->gpus.size());
  return nvml::kSuccess;
}
nvml::Return fakeHandle(unsigned i, nvml::Device* d) {
  if (i >= g_fake->gpus.size()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *d = reinterpret_cast<nvml::Device>(static_cast<std::uintptr_t>(i) + 1);
  return nvml::kSuccess;
}
nvml::Return fakeDriver(char* b, unsigned n) { return copyText("580.159.04", b, n); }
nvml::Return fakeIndex(nvml::Device d, unsigned* v) {
  *v = dev(d).index;
  return nvml::kSuccess;
}
nvml::Return fakeName(nvml::Device d, char* b, unsigned n) { return copyText(dev(d).name, b, n); }
nvml::Return fakeUuid(nvml::Device d, char* b, unsigned n) { return copyText(dev(d).uuid, b, n); }
nvml::Return fakeVbios(nvml::Device d, char* b, unsigned n) { return copyText(dev(d).vbios, b, n); }
nvml::Return fakePci(nvml::Device d, nvml::PciInfo* p) {
  std::memset(p, 0, sizeof *p);
  std::strcpy(p->busId, dev(d).busId);
  std::strcpy(p->busIdLegacy, dev(d).busId + 4);
  return nvml::kSuccess;
}
nvml::Return fakeMemory(nvml::Device d, nvml::Memory* m) {
  m->total = dev(d).memoryBytes;
  m->free = m->total;
  m->used = 0;
  return nvml::kSuccess;
}
nvml::Return fakeGenCur(nvml::Device d, unsigned* v) { return *v = dev(d).genCur, nvml::kSuccess; }
nvml::Return fakeGenMax(nvml::Device d, unsigned* v) { return *v = dev(d).genMax, nvml::kSuccess; }
nvml::Return fakeWidthCur(nvml::Device d, unsigned* v) { return *v = dev(d).widthCur, nvml::kSuccess; }
nvml::Return fakeWidthMax(nvml::Device d, unsigned* v) { return *v = dev(d).widthMax, nvml::kSuccess; }
nvml::Return fakeMig(nvml::Device d, unsigned* cur, unsigned* pending) {
  if (dev(d).migRc != nvml::kSuccess) return dev(d).migRc;
  *cur = *pending = dev(d).mig;
  return nvml::kSuccess;
}

nvml::Return fakeLinkState(nvml::Device d, unsigned link, unsigned* active) {
  const auto& l = g_fake->links.at(reinterpret_cast<std::uintptr_t>(d) - 1);
  if (link >= 18) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *active = link < l.size() ? 1 : 0;
  return nvml::kSuccess;
}
nvml::Return fakeLinkRemote(nvml::Device d, unsigned link, nvml::PciInfo* p) {
  const auto& l = g_fake->links.at(reinterpret_cast<std::uintptr_t>(d) - 1);
  if (link >= l.size()) return 2;
  *p = {};
  std::strcpy(p->busId, l[link].c_str());
  return nvml::kSuccess;
}
nvml::Return fakeAncestor(nvml::Device, nvml::Device, unsigned* level) { return *level = g_fake->ancestor, nvml::kSuccess; }
std::size_t idx(nvml::Device d) { return reinterpret_cast<std::uintptr_t>(d) - 1; }
nvml::Return fakeP2p(nvml::Device a, nvml::Device b, int caps, int* status) {
  if (caps != nvml::kP2pCapsRead) return 2;  // only the read capability is asked
  *status = g_fake->p2p.empty() ? 0 : g_fake->p2p.at(idx(a)).at(idx(b));
  return nvml::kSuccess;
}
nvml::Return fakeFields(nvml::Device d, int n, nvml::FieldValue* v) {
  const auto& l = g_fake->links.at(idx(d));
  for (int k = 0; k < n; ++k) {
    auto& f = v[k];
    f.nvmlReturn = nvml::kNotSupported;
    if (f.fieldId == nvml::kFiNvLinkGetSpeed && g_fake->perLinkSpeed && f.scopeId < l.size()) {
      f.nvmlReturn = nvml::kSuccess;
      f.valueType = 1;  // unsigned int
      f.value.uiVal = g_fake->linkMbps;
    } else if (f.fieldId == nvml::kFiNvLinkSpeedCommon && g_fake->commonSpeed) {
      f.nvmlReturn = nvml::kSuccess;
      f.valueType = 3;  // unsigned long long
      f.value.ullVal = g_fake->linkMbps;
    }
  }
  return nvml::kSuccess;
}
nvml::Return fakeLinkVersion(nvml::Device d, unsigned link, unsigned* v) {
  if (link >= g_fake->links.at(idx(d)).size()) return 2;
  *v = 4;
  return nvml::kSuccess;
}

NvmlLoader fakeLoader(FakeNvml& f) {
  g_fake = &f;
  static const std::map<std::string, void*> syms = {
      {"nvmlInit_v2", reinterpret_cast<void*>(&fakeInit)},
      {"nvmlShutdown", reinterpret_cast<void*>(&fakeShutdown)},
      {"nvmlErrorString", reinterpret_cast<void*>(&fakeErrorString)},
      {"nvmlDeviceGetCount_v2", reinterpret_cast<void*>(&fakeCount)},
      {"nvmlDeviceGetHandleByIndex_v2", reinterpret_cast<void*>(&fakeHandle)},
      {"nvmlSystemGetDriverVersion", reinterpret_cast<void*>(&fakeDriver)},
      {"nvmlDeviceGetIndex", reinterpret_cast<void*>(&fakeIndex)},
      {"nvmlDeviceGetName", reinterpret_cast<void*>(&fakeName)},
      {"nvmlDeviceGetUUID", reinterpret_cast<void*>(&fakeUuid)},
      {"nvmlDeviceGetVbiosVersion", reinterpret_cast<void*>(&fakeVbios)},
      {"nvmlDeviceGetPciInfo_v3", reinterpret_cast<void*>(&fakePci)},
      {"nvmlDeviceGetMemoryInfo", reinterpret_cast<void*>(&fakeMemory)},
      {"nvmlDeviceGetCurrPcieLinkGeneration", reinterpret_cast<void*>(&fakeGenCur)},
      {"nvmlDeviceGetMaxPcieLinkGeneration", reinterpret_cast<void*>(&fakeGenMax)},
      {"nvmlDeviceGetCurrPcieLinkWidth", reinterpret_cast<void*>(&fakeWidthCur)},
      {"nvmlDeviceGetMaxPcieLinkWidth", reinterpret_cast<void*>(&fakeWidthMax)},
      {"nvmlDeviceGetMigMode", reinterpret_cast<void*>(&fakeMig)},
      {"nvmlDeviceGetNvLinkState", reinterpret_cast<void*>(&fakeLinkState)},
      {"nvmlDeviceGetNvLinkRemotePciInfo_v2", reinterpret_cast<void*>(&fakeLinkRemote)},
      {"nvmlDeviceGetTopologyCommonAncestor", reinterpret_cast<void*>(&fakeAncestor)},
      {"nvmlDeviceGetP2PStatus", reinterpret_cast<void*>(&fakeP2p)},
      {"nvmlDeviceGetFieldValues", reinterpret_cast<void*>(&fakeFields)},
      {"nvmlDeviceGetNvLinkVersion", reinterpret_cast<void*>(&fakeLinkVersion)}};
  NvmlLoader l;
  l.symbol = [&f](const char* name) -> void* {
    for (const auto& m : f.missing)
      if (m == name) return nullptr;
    auto it = syms.find(name);
    return it == syms.end() ? nullptr : it->second;
  };
  return l;
}

// A session on the fake library, as a caller opens one for the readers to share.
NvmlSession fakeSession(FakeNvml& f) { return NvmlSession(fakeLoader(f)); }

// The h200x2 machine as NVML describes it: 143771 MiB = 150754820096 bytes.
FakeNvml h200Nvml() {
  FakeNvml f;
  f.gpus = {{0, "NVIDIA H200", "GPU-dcb12c3d-829c-e1af-f387-4975af14d0d4", "00000000:00:06.0", 143771ull << 20,
             "96.00.A5.00.1A", 5, 5, 16, 16, nvml::kSuccess, 0},
            {1, "NVIDIA H200", "GPU-3a819cdb-d032-6280-36f1-3b58795dc238", "00000000:00:07.0", 143771ull << 20,
             "96.00.A5.00.1A", 5, 5, 16, 16, nvml::kSuccess, 0}};
  return f;
}

}  // namespace

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

TEST_CASE("inventory GPU links: NVML's matrix and the topo -m fallback agree cell by cell", "[inventory]") {
  // h200x2: the two H200s reach each other over 18 NVLinks (through the NVSwitch: each link's
  // remote is the switch, not the other GPU); its recorded topo -m says NV18.
  FakeNvml f = h200Nvml();
  f.links.assign(2, std::vector<std::string>(18, "00000000:c0:00.0"));  // an NVSwitch's bus id
  auto nv = readGpuLinks(fixture("h200x2"), fakeSession(f));
  REQUIRE(nv.source == "nvml");
  CHECK(nv.nvmlWhy.empty());
  CHECK(f.shutdowns == f.inits);
  auto smi = readGpuLinks(fixture("h200x2"));  // no NVML on a recorded machine: the text, saying so
  REQUIRE(smi.source == "nvidia-smi");
  CHECK(smi.nvmlWhy == "no NVML on a recorded machine");
  const std::vector<std::vector<std::string>> want = {{"X", "NV18"}, {"NV18", "X"}};
  int wrong = 0;
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 2; ++j) {
      if (nv.code.at(i).at(j) != want[i][j]) ++wrong, UNSCOPED_INFO("nvml " << i << j << ": " << nv.code[i][j]);
      if (smi.code.at(i).at(j) != want[i][j]) ++wrong, UNSCOPED_INFO("smi " << i << j << ": " << smi.code[i][j]);
    }
  CHECK(wrong == 0);
  CHECK(nv.activeNvlinks == std::vector<int>{18, 18});
  CHECK(smi.activeNvlinks == std::vector<int>{-1, -1});
  // Direct links: 4 from GPU0 to GPU1 (and back), 2 more to the switch on GPU0 only: NV4 (a switch
  // link joins two GPUs only when both have one).
  f.links = {{"00000000:00:07.0", "00000000:00:07.0", "00000000:00:07.0", "00000000:00:07.0", "00000000:c0:00.0",
              "00000000:c0:00.0"},
             {"00000000:00:06.0", "00000000:00:06.0", "00000000:00:06.0", "00000000:00:06.0"}};
  auto direct = readGpuLinks(fixture("h200x2"), fakeSession(f));
  CHECK(direct.code.at(0).at(1) == "NV4");
  CHECK(direct.code.at(1).at(0) == "NV4");
  CHECK(direct.activeNvlinks == std::vector<int>{6, 4});
  // No NVLink: the common PCI ancestor names the cell as topo -m does.
  f.links = {{}, {}};
  for (auto [level, code] : {std::pair<unsigned, const char*>{10, "PIX"}, {20, "PXB"}, {30, "PHB"}, {40, "NODE"}, {50, "SYS"}}) {
    f.ancestor = level;
    auto pcie = readGpuLinks(fixture("h200x2"), fakeSession(f));
    CHECK(pcie.code.at(0).at(1) == code);
  }
  // rtx4090x2's recorded topo -m: PHB between the GPUs, the NIC column left out.
  auto rtx = readGpuLinks(fixture("rtx4090x2"));
  REQUIRE(rtx.code.size() == 2);
  CHECK(rtx.code[0][1] == "PHB");
  CHECK(rtx.code[1][0] == "PHB");
  // kNvml alone does not fall back; an NVML without the link functions says which it lacks.
  f.missing = {"nvmlDeviceGetNvLinkRemotePciInfo_v2"};
  auto lacking = readGpuLinks(fixture("h200x2"), fakeSession(f), GpuSource::kNvml);
  CHECK(lacking.source.empty());
  CHECK(lacking.nvmlWhy == "libnvidia-ml.so.1 lacks nvmlDeviceGetNvLinkRemotePciInfo_v2");
  CHECK(lacking.code.empty());
  auto fellBack = readGpuLinks(fixture("h200x2"), fakeSession(f));
  CHECK(fellBack.source == "nvidia-smi");
  CHECK(fellBack.nvmlWhy == "libnvidia-ml.so.1 lacks nvmlDeviceGetNvLinkRemotePciInfo_v2");
}

TEST_CASE("inventory compare: link matrices cell by cell, one difference per wrong cell", "[inventory]") {
  FakeNvml f = h200Nvml();
  f.links.assign(2, std::vector<std::string>(18, "00000000:c0:00.0"));
  auto nv = readGpuLinks(fixture("h200x2"), fakeSession(f), GpuSource::kNvml);
  auto smi = readGpuLinks(fixture("h200x2"), GpuSource::kNvidiaSmi);
  auto same = compareGpuMatrices("links", nv, smi);
  CHECK(same.differ == 0);
  CHECK(same.compared == 4);
  CHECK(same.lines.empty());
  f.links = {std::vector<std::string>(12, "00000000:c0:00.0"), std::vector<std::string>(12, "00000000:c0:00.0")};
  auto nv12 = readGpuLinks(fixture("h200x2"), fakeSession(f), GpuSource::kNvml);
  auto two = compareGpuMatrices("links", nv12, smi);
  CHECK(two.differ == 2);
  CHECK(two.compared == 4);
  REQUIRE(two.lines.size() == 2);
  CHECK(two.lines[0] == "compare: links GPU0-GPU1: NVML 'NV12', nvidia-smi 'NV18'");
  auto none = compareGpuMatrices("links", readGpuLinks(fixture("h200x2"), GpuSource::kNvml), smi);
  CHECK(none.differ == 1);
  CHECK(none.compared == 0);
  REQUIRE(none.lines.size() == 1);
  CHECK(none.lines[0] == "compare: links: not both sources answered (NVML: no, nvidia-smi: yes)");
  // A GPU more on one side: counted once, the common cells still compared.
  GpuLinkMatrix three = nv;
  three.code = {{"X", "NV18", "SYS"}, {"NV18", "X", "SYS"}, {"SYS", "SYS", "X"}};
  auto extra = compareGpuMatrices("links", three, smi);
  CHECK(extra.compared == 4);
  CHECK(extra.differ == 3);  // the GPU count, and rows 0 and 1 one cell longer
}

TEST_CASE("inventory P2P read: NVML's statuses and the topo -p2p r fallback agree cell by cell", "[inventory]") {
  FakeNvml f = h200Nvml();
  f.links.assign(2, {});
  auto nv = readGpuP2p(fixture("h200x2"), fakeSession(f));
  REQUIRE(nv.source == "nvml");
  CHECK(nv.nvmlWhy.empty());
  CHECK(f.shutdowns == f.inits);
  CHECK(nv.activeNvlinks.empty());
  auto smi = readGpuP2p(fixture("h200x2"));
  REQUIRE(smi.source == "nvidia-smi");
  CHECK(smi.nvmlWhy == "no NVML on a recorded machine");
  const std::vector<std::vector<std::string>> ok = {{"X", "OK"}, {"OK", "X"}};
  CHECK(nv.code == ok);
  CHECK(smi.code == ok);
  auto c = compareGpuMatrices("p2p", nv, smi);
  CHECK(c.differ == 0);
  CHECK(c.compared == 4);
  // rtx4090x2: the GeForce driver says chipset not supported; NVML status 1 reads the same.
  f.p2p = {{0, 1}, {1, 0}};
  auto nvCns = readGpuP2p(fixture("rtx4090x2"), fakeSession(f));
  auto smiCns = readGpuP2p(fixture("rtx4090x2"));
  const std::vector<std::vector<std::string>> cns = {{"X", "CNS"}, {"CNS", "X"}};
  CHECK(nvCns.code == cns);
  CHECK(smiCns.code == cns);
  CHECK(compareGpuMatrices("p2p", nvCns, smiCns).differ == 0);
  CHECK(compareGpuMatrices("p2p", nvCns, smi).differ == 2);
  // Every nvmlGpuP2PStatus_t as topo -p2p's legend names it.
  const std::vector<std::string> codes = {"OK", "CNS", "GNS", "TNS", "NS", "NS", "U", "U"};
  int wrong = 0;
  for (int st = 0; st < 8; ++st)
    if (p2pStatusCode(st) != codes[static_cast<std::size_t>(st)]) ++wrong, UNSCOPED_INFO(st << ": " << p2pStatusCode(st));
  CHECK(wrong == 0);
  // An NVML without the function: kNvml says so, kAuto falls back to the text saying why.
  f.missing = {"nvmlDeviceGetP2PStatus"};
  auto lacking = readGpuP2p(fixture("h200x2"), fakeSession(f), GpuSource::kNvml);
  CHECK(lacking.source.empty());
  CHECK(lacking.nvmlWhy == "libnvidia-ml.so.1 lacks nvmlDeviceGetP2PStatus");
  auto fellBack = readGpuP2p(fixture("h200x2"), fakeSession(f));
  CHECK(fellBack.source == "nvidia-smi");
  CHECK(fellBack.nvmlWhy == "libnvidia-ml.so.1 lacks nvmlDeviceGetP2PStatus");
  CHECK(fellBack.code == ok);
}

TEST_CASE("inventory NVLink speeds: NVML's fields and the nvlink -s fallback agree link by link", "[inventory]") {
  FakeNvml f = h200Nvml();
  f.links.assign(2, std::vector<std::string>(18, "00000000:c0:00.0"));
  auto nv = readNvlinkSpeeds(fixture("h200x2"), fakeSession(f));
  REQUIRE(nv.source == "nvml");
  CHECK(nv.nvmlWhy.empty());
  CHECK(f.shutdowns == f.inits);
  auto smi = readNvlinkSpeeds(fixture("h200x2"));  // the recorded nvlink -s: 18 x 26.562 GB/s per GPU
  REQUIRE(smi.source == "nvidia-smi");
  CHECK(smi.nvmlWhy == "no NVML on a recorded machine");
  int wrong = 0;
  for (const auto* s : {&nv, &smi}) {
    REQUIRE(s->gbps.size() == 2);
    for (const auto& [gpu, v] : s->gbps) {
      if (v.size() != 18) ++wrong, UNSCOPED_INFO(s->source << " GPU" << gpu << " " << v.size() << " links");
      for (double x : v)
        if (nvlinkSpeedText(x) != "26.562") ++wrong, UNSCOPED_INFO(s->source << " GPU" << gpu << " " << x);
    }
  }
  CHECK(wrong == 0);
  CHECK(nv.version.at(0) == std::vector<unsigned>(18, 4));
  CHECK(smi.version.empty());
  auto same = compareNvlinkSpeeds(nv, smi);
  CHECK(same.differ == 0);
  CHECK(same.compared == 2 + 36);  // a link count per GPU, then each link
  // Only the device's common speed answers: the same speeds.
  f.perLinkSpeed = false;
  auto common = readNvlinkSpeeds(fixture("h200x2"), fakeSession(f), GpuSource::kNvml);
  REQUIRE(common.source == "nvml");
  CHECK(compareNvlinkSpeeds(common, smi).differ == 0);
  // Neither: the fallback names the link and both answers.
  f.commonSpeed = false;
  auto fellBack = readNvlinkSpeeds(fixture("h200x2"), fakeSession(f));
  CHECK(fellBack.source == "nvidia-smi");
  CHECK(fellBack.nvmlWhy == "NVLink speed of GPU0 link 0: nvmlDeviceGetFieldValues: Unknown Error (per link), "
                            "Unknown Error (common)");
  CHECK(fellBack.gbps.at(1).size() == 18);
  f.perLinkSpeed = f.commonSpeed = true;
  // A slower link rate: every link differs; one link fewer on GPU1: the count differs once.
  f.linkMbps = 25000;
  auto slow = compareNvlinkSpeeds(readNvlinkSpeeds(fixture("h200x2"), fakeSession(f)), smi);
  CHECK(slow.differ == 36);
  REQUIRE(!slow.lines.empty());
  CHECK(slow.lines[0] == "compare: NVLink GPU0 active link #0: NVML 25.000 GB/s, nvidia-smi 26.562 GB/s");
  f.linkMbps = 26562;
  f.links[1].pop_back();
  auto fewer = compareNvlinkSpeeds(readNvlinkSpeeds(fixture("h200x2"), fakeSession(f)), smi);
  CHECK(fewer.differ == 1);
  CHECK(fewer.compared == 2 + 35);
  REQUIRE(fewer.lines.size() == 1);
  CHECK(fewer.lines[0] == "compare: NVLink GPU1: NVML has 17 active link(s), nvidia-smi 18");
  // No NVLink at all (rtx4090x2 has no nvlink -s recording): an empty list per GPU from NVML.
  f.links = {{}, {}};
  auto none = readNvlinkSpeeds(fixture("rtx4090x2"), fakeSession(f));
  REQUIRE(none.source == "nvml");
  CHECK(none.gbps.size() == 2);
  CHECK(none.gbps.at(0).empty());
  auto noText = readNvlinkSpeeds(fixture("rtx4090x2"));
  CHECK(noText.source.empty());
  CHECK(!noText.smiError.empty());
  CHECK(compareNvlinkSpeeds(none, noText).differ == 1);
}

TEST_CASE("topology from the inventory: NVML's answers first, the texts with their reason", "[inventory]") {
  FakeNvml f = h200Nvml();
  f.links.assign(2, std::vector<std::string>(18, "00000000:c0:00.0"));
  auto m = fixture("h200x2");
  auto gpus = readGpus(m, fakeSession(f)).gpus;
  auto links = readGpuLinks(m, fakeSession(f));
  auto p2p = readGpuP2p(m, fakeSession(f));
  auto speeds = readNvlinkSpeeds(m, fakeSession(f));
  auto t = buildTopology(gpuTopoMatrix(m).out, links, p2p, speeds, gpus);
  REQUIRE(t.gpus.size() == 2);
  CHECK(t.link(0, 1) == "NV18");
  CHECK(t.link(0, 2).empty());
  CHECK(t.p2pOk(0, 1));
  CHECK(t.gpus[1].nvlinkGBps.size() == 18);
  CHECK(t.gpus[0].cpuAffinity == "0-31");  // affinity from the topo -m text
  auto nom = gpuPeerNominal(t, "0000:00:06.0", {"0000:00:07.0"});
  CHECK(nom.gbps == Approx(18 * 26.562));
  CHECK(nom.basis == "18 NVLink links x 26.562 GB/s (NVML)");
  auto text = describe(t);
  CHECK(text.find("GPU links from nvml; P2P from nvml; NVLink speeds from nvml\n") != std::string::npos);
  CHECK(text.find("per direction (NVML)") != std::string::npos);
  // A recorded machine: every link fact from its texts, saying why not NVML.
  auto rec = readTopology(m);
  REQUIRE(rec.gpus.size() == 2);
  CHECK(rec.link(1, 0) == "NV18");
  CHECK(rec.p2pOk(1, 0));
  CHECK(rec.gpus[0].nvlinkGBps.size() == 18);
  CHECK(gpuPeerNominal(rec, "00000000:00:07.0", {"00000000:00:06.0"}).basis ==
        "18 NVLink links x 26.562 GB/s (nvidia-smi nvlink -s)");
  CHECK(describe(rec).find("GPU links from nvidia-smi (NVML: no NVML on a recorded machine); P2P from nvidia-smi "
                           "(NVML: no NVML on a recorded machine); NVLink speeds from nvidia-smi (NVML: no NVML on a "
                           "recorded machine)") != std::string::npos);
  // rtx4090x2: PHB and CNS from the texts, no NVLink speeds (none recorded).
  auto rtx = readTopology(fixture("rtx4090x2"));
  REQUIRE(rtx.gpus.size() == 2);
  CHECK(rtx.link(0, 1) == "PHB");
  CHECK(!rtx.p2pOk(0, 1));
  CHECK(rtx.gpus[0].nvlinkGBps.empty());
  CHECK(rtx.nvlink.source.empty());
}

TEST_CASE("inventory NVML: one session serves every reader, none opens its own", "[inventory]") {
  // Counted on the fake library: a reader that opened a session of its own would initialise NVML
  // again (inits > 1); one that ignored the caller's for the system's would not answer from NVML.
  FakeNvml f = h200Nvml();
  f.links.assign(2, std::vector<std::string>(18, "00000000:c0:00.0"));
  auto m = fixture("h200x2");
  {
    NvmlSession session(fakeLoader(f));
    REQUIRE(session.ok());
    CHECK(session.devices().size() == 2);
    CHECK(f.inits == 1);
    CHECK(readGpus(m, session).source == "nvml");
    CHECK(readGpuLinks(m, session).source == "nvml");
    CHECK(readGpuP2p(m, session).source == "nvml");
    CHECK(readNvlinkSpeeds(m, session).source == "nvml");
    auto t = readTopology(m, session);  // all four readers again
    REQUIRE(t.gpus.size() == 2);
    CHECK(t.gpuLinks.source == "nvml");
    CHECK(t.p2pRead.source == "nvml");
    CHECK(t.nvlink.source == "nvml");
    CHECK(t.link(0, 1) == "NV18");
    CHECK(f.inits == 1);
    CHECK(f.shutdowns == 0);
  }
  CHECK(f.inits == 1);
  CHECK(f.shutdowns == 1);
  // A session that did not open: every reader says why and falls back; nothing to shut down.
  f.initRc = 9;
  {
    NvmlSession failed(fakeLoader(f));
    CHECK_FALSE(failed.ok());
    CHECK(failed.why() == "nvmlInit_v2: Driver Not Loaded");
    auto t = readTopology(m, failed);
    CHECK(t.gpuLinks.nvmlWhy == "nvmlInit_v2: Driver Not Loaded");
    CHECK(t.p2pRead.nvmlWhy == "nvmlInit_v2: Driver Not Loaded");
    CHECK(t.nvlink.nvmlWhy == "nvmlInit_v2: Driver Not Loaded");
    CHECK(t.gpuLinks.source == "nvidia-smi");
    CHECK(f.inits == 2);
  }
  CHECK(f.shutdowns == 1);
  // Given no session: a recorded machine's is one closed session, whatever the fixture.
  const NvmlSession& rec = nvmlSessionOf(m);
  CHECK(&rec == &nvmlSessionOf(fixture("rtx4090x2")));
  CHECK_FALSE(rec.ok());
  CHECK(rec.why() == "no NVML on a recorded machine");
  // On the real machine nvidia-smi alone opens no NVML (the system's session is not asked for).
  CHECK(nvmlSessionOf(Machine("/"), GpuSource::kNvidiaSmi).why() == "not asked (nvidia-smi only)");
}

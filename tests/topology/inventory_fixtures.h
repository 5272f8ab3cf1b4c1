// The inventory tests' shared fixtures (test_inventory.cc, test_inventory_links.cc): the doctor's
// fixture machines, the h200x2 GPU fields, and a fake libnvidia-ml (a symbol loader handing out
// the functions below; each test file gets its own copy and its own g_fake).
#pragma once
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "topology/inventory.h"

namespace {

using namespace fb::topo;

const std::string kFixtures = FB_TEST_DATA "/doctor";
Machine fixture(const std::string& name) { return Machine(kFixtures + "/" + name); }

// What the h200x2 fixture's nvidia-smi query answers, field by field (gpuFactNames order).
const std::vector<std::vector<std::string>> kH200 = {
    {"0", "NVIDIA H200", "GPU-dcb12c3d-829c-e1af-f387-4975af14d0d4", "00000000:00:06.0", "143771", "580.159.04",
     "96.00.A5.00.1A", "5", "5", "16", "16", "Disabled"},
    {"1", "NVIDIA H200", "GPU-3a819cdb-d032-6280-36f1-3b58795dc238", "00000000:00:07.0", "143771", "580.159.04",
     "96.00.A5.00.1A", "5", "5", "16", "16", "Disabled"}};

[[maybe_unused]] int mismatches(const std::vector<GpuFacts>& got, const std::vector<std::vector<std::string>>& want) {
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
  unsigned smClock = 0, smClockMax = 0;  // MHz, NVML_CLOCK_SM now and its maximum
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

nvml::Return fakeClock(nvml::Device d, unsigned type, unsigned* mhz) {
  if (type != 1) return nvml::kNotSupported;  // NVML_CLOCK_SM
  *mhz = g_fake->gpus.at(idx(d)).smClock;
  return nvml::kSuccess;
}
nvml::Return fakeMaxClock(nvml::Device d, unsigned type, unsigned* mhz) {
  if (type != 1) return nvml::kNotSupported;  // NVML_CLOCK_SM
  *mhz = g_fake->gpus.at(idx(d)).smClockMax;
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
      {"nvmlDeviceGetNvLinkVersion", reinterpret_cast<void*>(&fakeLinkVersion)},
      {"nvmlDeviceGetClockInfo", reinterpret_cast<void*>(&fakeClock)},
      {"nvmlDeviceGetMaxClockInfo", reinterpret_cast<void*>(&fakeMaxClock)}};
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

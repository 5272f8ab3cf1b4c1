// NVML (the driver's GPU management library) opened at run time, as NCCL does: dlopen of
// libnvidia-ml.so.1, no link-time dependency and no nvml.h. The few types and prototypes the
// inventory calls are declared here from NVML's public API reference. The loader is a symbol
// resolver so tests hand in fake functions (tests/topology/test_inventory.cc).
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fb::topo {

struct NvmlLoader {
  std::function<void*(const char* symbol)> symbol;  // empty: no library (see why); nullptr: no such symbol
  std::string why;                                   // why there is no library
};
// The system's libnvidia-ml.so.1, opened once per process and kept open (NCCL keeps it too).
const NvmlLoader& systemNvml();
NvmlLoader noNvml(std::string why);

namespace nvml {
using Return = int;  // nvmlReturn_t
struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t
}  // namespace nvml

// NVML initialised once and its devices' handles taken; shut down when the session goes. The
// inventory's readers take a session and never open their own, so one process initialises NVML
// once (systemNvmlSession) however many facts it reads.
class NvmlSession {
 public:
  explicit NvmlSession(const NvmlLoader& l);
  ~NvmlSession();
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  bool ok() const { return ok_; }                  // initialised, every device's handle taken
  const std::string& why() const { return why_; }  // why not ("" when ok)
  const std::vector<nvml::Device>& devices() const { return devices_; }
  void* symbol(const char* name) const { return sym_ ? sym_(name) : nullptr; }  // null without a library
  std::string err(nvml::Return rc) const;  // nvmlErrorString(rc), else "NVML error <rc>"

 private:
  std::function<void*(const char*)> sym_;
  using ShutdownFn = nvml::Return (*)();
  ShutdownFn shutdown_ = nullptr;
  using ErrorStringFn = const char* (*)(nvml::Return);
  ErrorStringFn errStr_ = nullptr;
  std::vector<nvml::Device> devices_;
  std::string why_;
  bool ok_ = false;
};

// One reader's symbols from a session (also the session's own, while it starts): the first that is
// missing is named, and usable() answers for the session and every symbol asked for.
class NvmlSymbols {
 public:
  explicit NvmlSymbols(const NvmlSession& s) : s_(s) {}
  template <class Fn>
  Fn need(const char* name) {
    Fn f = reinterpret_cast<Fn>(s_.symbol(name));
    if (!f && why_.empty()) why_ = std::string("libnvidia-ml.so.1 lacks ") + name;
    return f;
  }
  // "libnvidia-ml.so.1 lacks <the first missing symbol>", "" when none was missing.
  const std::string& missing() const { return why_; }
  // Whether the session and every symbol asked for answered; `whyNot` gets the reason ("" when so).
  bool usable(std::string& whyNot) const {
    whyNot = s_.ok() ? why_ : s_.why();
    return s_.ok() && why_.empty();
  }

 private:
  const NvmlSession& s_;
  std::string why_;
};

// This process's session on the system's library: opened at the first call, then kept open until
// the process ends (never shut down, as NCCL keeps its own: no reader in another thread meets a
// closed library at exit).
const NvmlSession& systemNvmlSession();

// The SM clock of the GPU at PCI bus id `busId` (CUDA's "0000:00:06.0" or NVML's "00000000:00:06.0"),
// now and its maximum, in MHz (nvmlDeviceGetClockInfo / nvmlDeviceGetMaxClockInfo, NVML_CLOCK_SM);
// nullopt with `why` when NVML cannot say.
struct SmClock {
  unsigned int curMhz = 0, maxMhz = 0;
};
std::optional<SmClock> readSmClock(const NvmlSession& nv, const std::string& busId, std::string& why);
// The same as rows carry it (sm_clock_MHz): "C of max M", or "not read: <why>".
std::string smClockText(const NvmlSession& nv, const std::string& busId);

namespace nvml {
constexpr Return kSuccess = 0;       // NVML_SUCCESS
constexpr Return kNotSupported = 3;  // NVML_ERROR_NOT_SUPPORTED

struct PciInfo {                 // nvmlPciInfo_t (nvmlDeviceGetPciInfo_v3)
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];                // "00000000:18:00.0", as nvidia-smi prints it
};
static_assert(offsetof(PciInfo, domain) == 16 && offsetof(PciInfo, busId) == 36 && sizeof(PciInfo) == 68,
              "nvmlPciInfo_t layout");
struct Memory {                  // nvmlMemory_t (nvmlDeviceGetMemoryInfo)
  unsigned long long total, free, used;  // bytes
};

using InitFn = Return (*)();                                          // nvmlInit_v2, nvmlShutdown
using ErrorStringFn = const char* (*)(Return);                        // nvmlErrorString
using CountFn = Return (*)(unsigned int*);                            // nvmlDeviceGetCount_v2
using HandleFn = Return (*)(unsigned int, Device*);                   // nvmlDeviceGetHandleByIndex_v2
using DriverFn = Return (*)(char*, unsigned int);                     // nvmlSystemGetDriverVersion
using DevTextFn = Return (*)(Device, char*, unsigned int);            // GetName, GetUUID, GetVbiosVersion
using DevUintFn = Return (*)(Device, unsigned int*);                  // GetIndex, Get{Max,Curr}PcieLink{Generation,Width}
using PciFn = Return (*)(Device, PciInfo*);                           // nvmlDeviceGetPciInfo_v3
using MemoryFn = Return (*)(Device, Memory*);                         // nvmlDeviceGetMemoryInfo
using MigFn = Return (*)(Device, unsigned int*, unsigned int*);       // nvmlDeviceGetMigMode(current, pending)
using ClockFn = Return (*)(Device, unsigned int type, unsigned int*);  // nvmlDeviceGet{,Max}ClockInfo (MHz)
constexpr unsigned int kClockSm = 1;                                  // NVML_CLOCK_SM
constexpr unsigned int kMigEnable = 1;                                // NVML_DEVICE_MIG_ENABLE
// GPU links (nvidia-smi topo -m's matrix from typed answers)
using NvLinkStateFn = Return (*)(Device, unsigned int link, unsigned int* isActive);  // nvmlDeviceGetNvLinkState
using NvLinkRemotePciFn = Return (*)(Device, unsigned int link, PciInfo*);  // nvmlDeviceGetNvLinkRemotePciInfo_v2
using CommonAncestorFn = Return (*)(Device, Device, unsigned int* level);    // nvmlDeviceGetTopologyCommonAncestor
constexpr unsigned int kNvLinkMaxLinks = 18;                          // NVML_NVLINK_MAX_LINKS
constexpr unsigned int kFeatureEnabled = 1;                           // NVML_FEATURE_ENABLED
// nvmlGpuTopologyLevel_t: INTERNAL 0, SINGLE 10, MULTIPLE 20, HOSTBRIDGE 30, NODE 40, SYSTEM 50
using NvLinkVersionFn = Return (*)(Device, unsigned int link, unsigned int* version);  // nvmlDeviceGetNvLinkVersion
// P2P capability of a pair (nvidia-smi topo -p2p r's matrix from typed answers)
using P2PStatusFn = Return (*)(Device, Device, int capsIndex, int* status);  // nvmlDeviceGetP2PStatus
constexpr int kP2pCapsRead = 0;                                             // NVML_P2P_CAPS_INDEX_READ
// nvmlGpuP2PStatus_t: OK 0, CHIPSET_NOT_SUPPORTED 1, GPU_NOT_SUPPORTED 2, IOH_TOPOLOGY_NOT_SUPPORTED 3,
// DISABLED_BY_REGKEY 4, NOT_SUPPORTED 5, UNKNOWN 6
// Field values (NVLink speeds): nvmlFieldValue_t and nvmlDeviceGetFieldValues.
struct FieldValue {
  unsigned int fieldId, scopeId;  // scopeId: the link, for per-link fields
  long long timestamp, latencyUsec;
  int valueType;                  // nvmlValueType_t: DOUBLE 0, UINT 1, ULONG 2, ULONGLONG 3, SLONGLONG 4
  Return nvmlReturn;
  union {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
  } value;
};
static_assert(offsetof(FieldValue, valueType) == 24 && offsetof(FieldValue, value) == 32 && sizeof(FieldValue) == 40,
              "nvmlFieldValue_t layout");
using FieldValuesFn = Return (*)(Device, int count, FieldValue*);  // nvmlDeviceGetFieldValues
constexpr unsigned int kFiNvLinkSpeedCommon = 90;  // NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON: MBps of the active links
constexpr unsigned int kFiNvLinkGetSpeed = 164;    // NVML_FI_DEV_NVLINK_GET_SPEED: MBps of link scopeId
}  // namespace nvml

}  // namespace fb::topo

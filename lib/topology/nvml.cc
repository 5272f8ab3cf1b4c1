#include "topology/nvml.h"

#include <cstdio>
#include <cstring>

#include <dlfcn.h>

namespace fb::topo {

const NvmlLoader& systemNvml() {
  static const NvmlLoader loader = [] {
    NvmlLoader l;
    // RTLD_LOCAL: our prototypes never clash with another copy of NVML's symbols in the process.
    void* h = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      l.why = std::string("libnvidia-ml.so.1 not loaded: ") + (e ? e : "dlopen failed");
      return l;
    }
    l.symbol = [h](const char* name) { return ::dlsym(h, name); };
    return l;
  }();
  return loader;
}

NvmlLoader noNvml(std::string why) {
  NvmlLoader l;
  l.why = std::move(why);
  return l;
}

NvmlSession::NvmlSession(const NvmlLoader& l) {
  if (!l.symbol) {
    why_ = l.why.empty() ? "no NVML library" : l.why;
    return;
  }
  sym_ = l.symbol;
  NvmlSymbols syms(*this);  // the first missing symbol is named
  auto init = syms.need<nvml::InitFn>("nvmlInit_v2");
  auto down = syms.need<nvml::InitFn>("nvmlShutdown");
  auto count = syms.need<nvml::CountFn>("nvmlDeviceGetCount_v2");
  auto handle = syms.need<nvml::HandleFn>("nvmlDeviceGetHandleByIndex_v2");
  errStr_ = reinterpret_cast<ErrorStringFn>(sym_("nvmlErrorString"));
  why_ = syms.missing();
  if (!why_.empty()) return;
  if (nvml::Return rc = init(); rc != nvml::kSuccess) {
    why_ = "nvmlInit_v2: " + err(rc);
    return;
  }
  shutdown_ = down;
  unsigned int n = 0;
  if (nvml::Return rc = count(&n); rc != nvml::kSuccess) {
    why_ = "nvmlDeviceGetCount_v2: " + err(rc);
    return;
  }
  for (unsigned int i = 0; i < n; ++i) {
    nvml::Device d = nullptr;
    if (nvml::Return rc = handle(i, &d); rc != nvml::kSuccess) {
      why_ = "nvmlDeviceGetHandleByIndex_v2(" + std::to_string(i) + "): " + err(rc);
      return;
    }
    devices_.push_back(d);
  }
  ok_ = true;
}

NvmlSession::~NvmlSession() {
  if (shutdown_) shutdown_();
}

std::string NvmlSession::err(nvml::Return rc) const {
  const char* s = errStr_ ? errStr_(rc) : nullptr;
  return s ? std::string(s) : "NVML error " + std::to_string(rc);
}

namespace {
// "0000:00:06.0" and "00000000:00:06.0" name the same device: compare domain, bus, device, function.
bool sameBus(const std::string& a, const std::string& b) {
  unsigned d1 = 0, b1 = 0, s1 = 0, f1 = 0, d2 = 0, b2 = 0, s2 = 0, f2 = 0;
  return std::sscanf(a.c_str(), "%x:%x:%x.%x", &d1, &b1, &s1, &f1) == 4 &&
         std::sscanf(b.c_str(), "%x:%x:%x.%x", &d2, &b2, &s2, &f2) == 4 && d1 == d2 && b1 == b2 && s1 == s2 && f1 == f2;
}
}  // namespace

std::optional<SmClock> readSmClock(const NvmlSession& nv, const std::string& busId, std::string& why) {
  NvmlSymbols syms(nv);
  auto pci = syms.need<nvml::PciFn>("nvmlDeviceGetPciInfo_v3");
  auto cur = syms.need<nvml::ClockFn>("nvmlDeviceGetClockInfo");
  auto max = syms.need<nvml::ClockFn>("nvmlDeviceGetMaxClockInfo");
  if (!syms.usable(why)) return std::nullopt;
  if (busId.empty()) {
    why = "CUDA gave no PCI bus id for the GPU";
    return std::nullopt;
  }
  for (nvml::Device d : nv.devices()) {
    nvml::PciInfo p{};
    if (pci(d, &p) != nvml::kSuccess || !sameBus(std::string(p.busId, strnlen(p.busId, sizeof p.busId)), busId)) continue;
    SmClock c;
    nvml::Return rc = cur(d, nvml::kClockSm, &c.curMhz);
    if (rc == nvml::kSuccess) rc = max(d, nvml::kClockSm, &c.maxMhz);
    if (rc != nvml::kSuccess) {
      why = nv.err(rc);
      return std::nullopt;
    }
    return c;
  }
  why = std::string("NVML lists no GPU at ").append(busId);
  return std::nullopt;
}

std::string smClockText(const NvmlSession& nv, const std::string& busId) {
  std::string why;
  auto c = readSmClock(nv, busId, why);
  return c ? std::to_string(c->curMhz) + " of max " + std::to_string(c->maxMhz) : "not read: " + why;
}

const NvmlSession& systemNvmlSession() {
  static const NvmlSession* const session = new NvmlSession(systemNvml());  // never freed: see nvml.h
  return *session;
}

}  // namespace fb::topo

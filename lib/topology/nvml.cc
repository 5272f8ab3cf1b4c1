#include "topology/nvml.h"

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

const NvmlSession& systemNvmlSession() {
  static const NvmlSession* const session = new NvmlSession(systemNvml());  // never freed: see nvml.h
  return *session;
}

}  // namespace fb::topo

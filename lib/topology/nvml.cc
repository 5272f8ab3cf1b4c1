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

}  // namespace fb::topo

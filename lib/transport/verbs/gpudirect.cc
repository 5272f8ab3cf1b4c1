#include "transport/verbs/gpudirect.h"

#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "core/config.h"
#include "core/error.h"

#if FB_HAVE_CUDA
#include <cuda.h>
#include <dlfcn.h>
#endif

namespace fb::verbs {

GpuDirectStatus gpuDirectVerdict(const std::string& peermemModule, bool cudaBuild, bool dmabufOk,
                                 const std::string& dmabufWhy) {
  GpuDirectStatus s;
  if (!peermemModule.empty()) {
    s.possible = true;
    s.via = peermemModule;
    s.why = peermemModule + " module loaded (ibv_reg_mr takes GPU pointers)";
    return s;
  }
  if (!cudaBuild) {
    s.why = "nvidia_peermem not loaded; dma-buf not tried: this build has no CUDA";
    return s;
  }
  s.possible = dmabufOk;
  s.via = dmabufOk ? "dma-buf" : "";
  s.why = dmabufOk ? dmabufWhy : "nvidia_peermem not loaded; dma-buf: " + dmabufWhy;
  return s;
}

std::string loadedPeermemModule(const std::string& sysModule) {
  std::error_code ec;
  for (const char* m : {"nvidia_peermem", "nv_peer_mem"})
    if (std::filesystem::exists(sysModule + "/" + m, ec)) return m;
  return "";
}

#if FB_HAVE_CUDA
namespace {

#define FB_STR2_(x) #x
#define FB_STR_(x) FB_STR2_(x)  // the versioned name cuda.h maps to (cuMemAlloc -> cuMemAlloc_v2)

// The few driver entry points used, from libcuda.so.1 (dlopen: no link-time dependency, and a
// clear "no driver" where there is none).
struct Driver {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) ctxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) ctxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuMemAlloc) memAlloc = nullptr;
  decltype(&::cuMemFree) memFree = nullptr;
  decltype(&::cuMemGetAddressRange) memGetAddressRange = nullptr;
  decltype(&::cuMemGetHandleForAddressRange) memGetHandle = nullptr;
  decltype(&::cuGetErrorName) errorName = nullptr;
  std::string error;  // why it is not usable; empty when it is

  std::string name(CUresult r) const {
    const char* n = nullptr;
    if (errorName && errorName(r, &n) == CUDA_SUCCESS && n) return n;
    return "CUresult " + std::to_string(int(r));
  }
};

const Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      d.error = std::string("no CUDA driver (") + (e ? e : "libcuda.so.1 not found") + ")";
      return;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
      if (!fn && d.error.empty()) d.error = std::string("libcuda.so.1 has no ") + name + " (driver too old for dma-buf)";
    };
    sym(d.init, FB_STR_(cuInit));
    sym(d.deviceGet, FB_STR_(cuDeviceGet));
    sym(d.ctxRetain, FB_STR_(cuDevicePrimaryCtxRetain));
    sym(d.ctxRelease, FB_STR_(cuDevicePrimaryCtxRelease));
    sym(d.ctxSetCurrent, FB_STR_(cuCtxSetCurrent));
    sym(d.memAlloc, FB_STR_(cuMemAlloc));
    sym(d.memFree, FB_STR_(cuMemFree));
    sym(d.memGetAddressRange, FB_STR_(cuMemGetAddressRange));
    sym(d.memGetHandle, FB_STR_(cuMemGetHandleForAddressRange));
    sym(d.errorName, FB_STR_(cuGetErrorName));
  });
  return d;
}

// The real thing on a 2 MiB buffer of GPU 0: export as dma-buf, register on `device`.
bool dmabufProbe(const std::string& device, std::string& why) {
  const Driver& cu = driver();
  if (!cu.error.empty()) {
    why = cu.error;
    return false;
  }
  CUresult r = cu.init(0);
  if (r != CUDA_SUCCESS) {
    why = "cuInit: " + cu.name(r);
    return false;
  }
  CUdevice dev = 0;
  if ((r = cu.deviceGet(&dev, 0)) != CUDA_SUCCESS) {
    why = "cuDeviceGet(0): " + cu.name(r);
    return false;
  }
  CUcontext ctx = nullptr;
  if ((r = cu.ctxRetain(&ctx, dev)) != CUDA_SUCCESS) {
    why = "cuDevicePrimaryCtxRetain: " + cu.name(r);
    return false;
  }
  cu.ctxSetCurrent(ctx);
  const std::size_t size = std::size_t(2) << 20;
  CUdeviceptr p = 0;
  bool ok = false;
  if ((r = cu.memAlloc(&p, size)) != CUDA_SUCCESS) {
    why = "cuMemAlloc(2 MiB): " + cu.name(r);
  } else {
    int fd = -1;
    r = cu.memGetHandle(&fd, p, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (r != CUDA_SUCCESS) {
      why = "GPU 0 cannot export dma-buf (cuMemGetHandleForAddressRange: " + cu.name(r) +
            "; needs NVIDIA's open kernel modules and Linux >= 5.12)";
    } else {
      try {
        Context c = openDevice(device);
        Pd pd = allocPd(c.get());
        errno = 0;
        ibv_mr* mr = ::ibv_reg_dmabuf_mr(pd.get(), 0, size, std::uint64_t(p), fd,
                                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
        if (!mr) {
          why = device + " refused the GPU buffer (ibv_reg_dmabuf_mr: " + errText(errno) + ")";
        } else {
          ok = true;
          why = "dma-buf: " + device + " registered a 2 MiB buffer of GPU 0 (cuMemGetHandleForAddressRange + "
                "ibv_reg_dmabuf_mr)";
          ::ibv_dereg_mr(mr);
        }
      } catch (const Error& e) {
        why = "GPU 0 exported a dma-buf, but opening " + device + " failed: " + e.what();
      }
      ::close(fd);
    }
    cu.memFree(p);
  }
  cu.ctxRelease(dev);
  return ok;
}

}  // namespace
#endif  // FB_HAVE_CUDA

GpuDirectStatus probeGpuDirect(const std::string& device, std::chrono::milliseconds timeout) {
  static std::mutex mu;
  static std::map<std::string, GpuDirectStatus> cache;
  {
    std::lock_guard<std::mutex> lk(mu);
    if (auto it = cache.find(device); it != cache.end()) return it->second;
  }
  std::string module = loadedPeermemModule();
  bool ok = false;
  std::string why;
#if FB_HAVE_CUDA
  if (module.empty()) {
    struct Shared {
      std::mutex mu;
      std::condition_variable cv;
      bool done = false, ok = false;
      std::string why;
    };
    auto sh = std::make_shared<Shared>();
    std::thread([sh, device] {
      std::string w;
      bool r = false;
      try {
        r = dmabufProbe(device, w);
      } catch (const std::exception& e) {
        w = e.what();
      }
      std::lock_guard<std::mutex> lk(sh->mu);
      sh->done = true;
      sh->ok = r;
      sh->why = w;
      sh->cv.notify_all();
    }).detach();  // abandoned (not joined) if the driver never answers
    std::unique_lock<std::mutex> lk(sh->mu);
    if (sh->cv.wait_for(lk, timeout, [&] { return sh->done; })) {
      ok = sh->ok;
      why = sh->why;
    } else {
      why = "the CUDA/dma-buf probe did not finish within " + std::to_string(timeout.count()) + " ms";
    }
  }
  GpuDirectStatus s = gpuDirectVerdict(module, true, ok, why);
#else
  (void)timeout;
  GpuDirectStatus s = gpuDirectVerdict(module, false, ok, why);
#endif
  std::lock_guard<std::mutex> lk(mu);
  cache[device] = s;
  return s;
}

}  // namespace fb::verbs

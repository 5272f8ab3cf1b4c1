#include "gpu/cuda/p2p_check.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

#include <cuda_runtime.h>

#include "core/units.h"
#include "kernels/copy.h"
#include "kernels/reduce.h"
#include "gpu/cuda/cuda_ipc.h"

namespace fb::cudaipc {

namespace {

constexpr int kSeed = 11;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string fmtMs(double ms) {
  std::ostringstream os;
  os.precision(ms < 10 ? 2 : 0);
  os << std::fixed << ms << " ms";
  return os.str();
}

// On the current device (the reader): copy `bytes` from src (peer memory holding
// pattern(ownerTag, i, kSeed) as float32) into a local buffer, by the copy engine and by SMs,
// and count wrong elements of each copy on the GPU, all under the time-out.
// `what` names the pair in messages ("GPU 0 <- GPU 1", "rank 0 <- rank 1").
PairCheck copyAndVerify(const void* src, int ownerTag, bool smCopy, const std::string& what,
                        const P2PCheckOptions& o) {
  PairCheck pc;
  auto t0 = Clock::now();
  Deadline dl = Deadline::in(o.timeout);
  const std::size_t count = o.bytes / 4;
  cudaStream_t s = nullptr;
  FB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Raw allocations: on a time-out they are left to the GPU (freeing memory a stuck copy still
  // uses would block or fault); they are small.
  void* dst = nullptr;
  unsigned long long* counters = nullptr;  // [0] flag for the injected hang, [1] CE wrong, [2] SM wrong, [3] timed out
  unsigned long long* host = nullptr;
  FB_CUDA_CHECK(cudaMalloc(&dst, o.bytes));
  FB_CUDA_CHECK(cudaMalloc(&counters, 4 * sizeof(unsigned long long)));
  FB_CUDA_CHECK(cudaMallocHost(&host, 4 * sizeof(unsigned long long)));
  FB_CUDA_CHECK(cudaMemsetAsync(counters, 0, 4 * sizeof(unsigned long long), s));
  if (o.injectHang) {
    // A stand-in for a peer write that never lands: the stream waits on a flag nobody sets.
    // The kernel gives up by itself after twice the time-out so the process can still exit.
    FB_CUDA_CHECK(kernels::spinUntil(counters, 1,
                                     static_cast<unsigned long long>(o.timeout.count()) * 2'000'000ull,
                                     reinterpret_cast<int*>(counters + 3), s));
  }
  kernels::ipc::ExpectSpec spec{kernels::ipc::Expect::kPattern, 1, 0, ownerTag, kSeed, 0};
  FB_CUDA_CHECK(kernels::ipc::fillValue(kernels::ElemType::kFloat32, dst, count, NAN, s));
  FB_CUDA_CHECK(cudaMemcpyAsync(dst, src, o.bytes, cudaMemcpyDeviceToDevice, s));
  FB_CUDA_CHECK(kernels::ipc::countWrong(kernels::ElemType::kFloat32, dst, count, spec, counters + 1, s));
  if (smCopy) {
    FB_CUDA_CHECK(kernels::ipc::fillValue(kernels::ElemType::kFloat32, dst, count, NAN, s));
    FB_CUDA_CHECK(kernels::copyBytes(dst, src, o.bytes, s));
    FB_CUDA_CHECK(kernels::ipc::countWrong(kernels::ElemType::kFloat32, dst, count, spec, counters + 2, s));
  }
  FB_CUDA_CHECK(cudaMemcpyAsync(host, counters, 4 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s));
  bool done = false;
  std::string gpuErr;
  try {
    done = waitStream(s, dl);
  } catch (const CudaError& e) {
    gpuErr = e.what();
  }
  pc.ms = msSince(t0);
  if (!gpuErr.empty()) {
    pc.message = what + ": P2P copy FAILED on the GPU: " + gpuErr;
    return pc;  // the context may be unusable; leave the resources
  }
  if (!done) {
    pc.message = what + ": P2P copy of " + formatSize(o.bytes) + "B did not complete within the " +
                 std::to_string(o.timeout.count()) + " ms time-out" +
                 (o.injectHang ? " (injected hang: FB_P2P_INJECT_HANG)" : "") +
                 ": P2P is advertised but not working; NCCL would hang here";
    return pc;  // resources stay with the stuck stream
  }
  const unsigned long long wrongCe = host[1], wrongSm = host[2];
  pc.ok = wrongCe == 0 && wrongSm == 0 && smCopy;
  std::ostringstream os;
  os << what << ": ";
  if (wrongCe || wrongSm) {
    os << "P2P DATA WRONG: copy engine " << wrongCe << ", SM copy " << (smCopy ? std::to_string(wrongSm) : "n/a")
       << " of " << count << " elements wrong (P2P advertised but broken)";
  } else if (!smCopy) {
    os << "copy engine copy of " << formatSize(o.bytes) << "B correct, SM access to peer memory not possible";
  } else {
    os << "ok (copy engine + SM copy of " << formatSize(o.bytes) << "B verified, " << fmtMs(pc.ms) << ")";
  }
  pc.message = os.str();
  cudaFree(dst);
  cudaFree(counters);
  cudaFreeHost(host);
  cudaStreamDestroy(s);
  return pc;
}

std::string summarize(P2PReport& r, const std::string& unit) {
  int bad = 0;
  for (auto& p : r.pairs) bad += p.ok ? 0 : 1;
  r.ok = bad == 0;
  std::ostringstream os;
  if (r.pairs.empty()) {
    os << r.gpus << " " << unit << (r.gpus == 1 ? "" : "s") << ": no pair to check";
    return os.str();
  }
  if (bad == 0) {
    double worst = 0;
    for (auto& p : r.pairs) worst = std::max(worst, p.ms);
    os << "P2P ok for all " << r.pairs.size() << " ordered pairs of " << r.gpus << " " << unit
       << "s (copy engine + SM copy verified, slowest check " << fmtMs(worst) << ")";
  } else {
    os << "P2P FAILED for " << bad << " of " << r.pairs.size() << " ordered pairs:";
    for (auto& p : r.pairs)
      if (!p.ok) os << " [" << p.message << "]";
  }
  return os.str();
}

}  // namespace

// Is peer access from `reader` to `owner` enabled in this process? (Probe by disabling: the
// call fails with cudaErrorPeerAccessNotEnabled when it is off; when it was on, turn it back on.)
bool peerAccessEnabled(int reader, int owner) {
  cudaSetDevice(reader);
  cudaError_t e = cudaDeviceDisablePeerAccess(owner);
  if (e == cudaSuccess) {
    cudaDeviceEnablePeerAccess(owner, 0);
    return true;
  }
  cudaGetLastError();
  return false;
}

P2PCheckOptions p2pOptionsFromEnv() {
  P2PCheckOptions o;
  if (const char* v = std::getenv("FB_P2P_TIMEOUT_MS"); v && *v) {
    char* end = nullptr;
    long ms = std::strtol(v, &end, 10);
    if (*end || ms <= 0) throw ConfigError(std::string("FB_P2P_TIMEOUT_MS must be a positive number of ms, got '") + v + "'");
    o.timeout = std::chrono::milliseconds(ms);
  }
  if (const char* v = std::getenv("FB_P2P_NO_PEER_ACCESS"); v && std::string(v) == "1") o.enablePeerAccess = false;
  if (const char* v = std::getenv("FB_P2P_INJECT_HANG"); v && std::string(v) == "1") o.injectHang = true;
  return o;
}

P2PReport checkLocalPairs(const P2PCheckOptions& o) {
  P2PReport r;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    n = 0;
  }
  r.gpus = n;
  if (n == 0) {
    r.summary = "no CUDA GPU visible (CUDA_VISIBLE_DEVICES=" + visibleDevicesEnv() + ")";
    return r;
  }
  int prev = 0;
  cudaGetDevice(&prev);
  std::vector<DeviceBuffer> srcs;
  for (int d = 0; d < n; ++d) {
    FB_CUDA_CHECK(cudaSetDevice(d));
    srcs.emplace_back(o.bytes);
    FB_CUDA_CHECK(kernels::ipc::fillPattern(kernels::ElemType::kFloat32, srcs.back().get(), o.bytes / 4, d, kSeed, nullptr));
    FB_CUDA_CHECK(cudaDeviceSynchronize());
  }
  for (int reader = 0; reader < n; ++reader) {
    for (int owner = 0; owner < n; ++owner) {
      if (reader == owner) continue;
      std::string what = "GPU " + std::to_string(reader) + " (" + pciBusId(reader) + ") <- GPU " +
                         std::to_string(owner) + " (" + pciBusId(owner) + ")";
      PairCheck pc;
      pc.reader = reader;
      pc.owner = owner;
      int can = 0;
      FB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, reader, owner));
      if (!can) {
        pc.message = what + ": no P2P (cudaDeviceCanAccessPeer = 0): copies between them go through host memory";
        r.pairs.push_back(pc);
        continue;
      }
      FB_CUDA_CHECK(cudaSetDevice(reader));
      if (o.enablePeerAccess) {
        cudaError_t e = cudaDeviceEnablePeerAccess(owner, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
          cudaGetLastError();
          pc.message = what + ": P2P advertised but cudaDeviceEnablePeerAccess failed: " + cudaGetErrorString(e);
          r.pairs.push_back(pc);
          continue;
        }
        cudaGetLastError();
      }
      bool enabled = peerAccessEnabled(reader, owner);
      FB_CUDA_CHECK(cudaSetDevice(reader));
      PairCheck got = copyAndVerify(srcs[owner].get(), owner, enabled, what, o);
      got.reader = reader;
      got.owner = owner;
      if (!enabled && got.message.find("did not complete") == std::string::npos) {
        got.ok = false;
        got.message = what + ": P2P supported (cudaDeviceCanAccessPeer = 1) but peer access is NOT enabled: "
                      "GPU " + std::to_string(reader) + " kernels cannot touch GPU " + std::to_string(owner) +
                      "'s memory and copies are staged through the host (copy engine result: " +
                      got.message.substr(what.size() + 2) + ")";
      }
      r.pairs.push_back(got);
    }
  }
  cudaSetDevice(prev);
  r.summary = summarize(r, "GPU");
  return r;
}

namespace {
struct RankBlob {
  std::int32_t hasGpu;
  std::int32_t pid;
  std::int32_t device;
  char busId[32];
  cudaIpcMemHandle_t handle;
  std::uint64_t ptr;
};

std::string encode(const PairCheck& p) {
  return std::to_string(p.reader) + "|" + std::to_string(p.owner) + "|" + (p.ok ? "1" : "0") + "|" +
         std::to_string(p.ms) + "|" + p.message;
}
PairCheck decode(const std::string& s) {
  PairCheck p;
  std::size_t a = s.find('|'), b = s.find('|', a + 1), c = s.find('|', b + 1), d = s.find('|', c + 1);
  p.reader = std::stoi(s.substr(0, a));
  p.owner = std::stoi(s.substr(a + 1, b - a - 1));
  p.ok = s.substr(b + 1, c - b - 1) == "1";
  p.ms = std::stod(s.substr(c + 1, d - c - 1));
  p.message = s.substr(d + 1);
  return p;
}
}  // namespace

P2PReport checkRanks(Bootstrap& bs, const P2PCheckOptions& o) {
  const int n = bs.size(), me = bs.rank();
  P2PReport r;
  r.gpus = n;
  auto hosts = bs.hostnames();
  int localRank = 0;
  for (int q = 0; q < me; ++q) localRank += hosts[q] == hosts[me] ? 1 : 0;

  RankBlob mine{};
  mine.pid = static_cast<std::int32_t>(getpid());
  std::string localErr;
  DeviceBuffer src;
  int dev = -1;
  try {
    dev = selectDevice(localRank);
    src = DeviceBuffer(o.bytes);
    FB_CUDA_CHECK(kernels::ipc::fillPattern(kernels::ElemType::kFloat32, src.get(), o.bytes / 4, me, kSeed, nullptr));
    FB_CUDA_CHECK(cudaDeviceSynchronize());
    FB_CUDA_CHECK(cudaIpcGetMemHandle(&mine.handle, src.get()));
    mine.hasGpu = 1;
    mine.device = dev;
    mine.ptr = reinterpret_cast<std::uint64_t>(src.get());
    std::string bus = pciBusId(dev);
    std::strncpy(mine.busId, bus.c_str(), sizeof(mine.busId) - 1);
  } catch (const Error& e) {
    localErr = e.what();
  }
  auto errs = bs.allGatherStrings(localErr);
  auto blobs = bs.allGather(std::as_bytes(std::span<const RankBlob>(&mine, 1)));
  std::vector<RankBlob> all(n);
  for (int q = 0; q < n; ++q) std::memcpy(&all[q], blobs[q].data(), sizeof(RankBlob));

  // Bus ids of the GPUs this process can see, to explain an unreachable peer.
  std::set<std::string> visible;
  int nvis = 0;
  if (cudaGetDeviceCount(&nvis) != cudaSuccess) cudaGetLastError();
  for (int d = 0; d < nvis; ++d) visible.insert(pciBusId(d));

  std::vector<std::string> myResults;
  if (mine.hasGpu) {
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      std::string peerBus(all[q].busId, strnlen(all[q].busId, sizeof(all[q].busId)));
      std::string what = "rank " + std::to_string(me) + " (GPU " + pciBusId(dev) + ") <- rank " + std::to_string(q) +
                         " (GPU " + (peerBus.empty() ? "?" : peerBus) + ")";
      PairCheck pc;
      pc.reader = me;
      pc.owner = q;
      if (hosts[q] != hosts[me]) {
        pc.message = what + ": on another node (" + hosts[q] + "): CUDA IPC works only within a node";
      } else if (!all[q].hasGpu) {
        pc.message = what + ": peer has no GPU: " + errs[q];
      } else if (all[q].pid == mine.pid) {
        // Threads of one process: plain UVA pointer with peer access.
        cudaError_t e = all[q].device == dev ? cudaSuccess : cudaDeviceEnablePeerAccess(all[q].device, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
          cudaGetLastError();
          pc.message = what + ": cudaDeviceEnablePeerAccess: " + cudaGetErrorString(e);
        } else {
          cudaGetLastError();
          pc = copyAndVerify(reinterpret_cast<const void*>(all[q].ptr), q, true, what, o);
        }
      } else {
        void* peer = nullptr;
        auto t0 = Clock::now();
        cudaError_t e = cudaIpcOpenMemHandle(&peer, all[q].handle, cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess) {
          cudaGetLastError();
          pc.ms = msSince(t0);
          pc.message = what + ": UNREACHABLE: cannot map the peer's GPU memory (cudaIpcOpenMemHandle: " +
                       cudaGetErrorString(e) + ")";
          if (!peerBus.empty() && !visible.count(peerBus))
            pc.message += "; GPU " + peerBus + " is not visible in this process (CUDA_VISIBLE_DEVICES=" +
                          visibleDevicesEnv() + ")";
        } else {
          pc = copyAndVerify(peer, q, true, what, o);
          if (pc.message.find("did not complete") == std::string::npos) cudaIpcCloseMemHandle(peer);
          if (pc.ok && !peerBus.empty() && !visible.count(peerBus))
            pc.message += " [GPU " + peerBus + " is hidden by CUDA_VISIBLE_DEVICES=" + visibleDevicesEnv() +
                          " but reachable through CUDA IPC]";
        }
      }
      pc.reader = me;
      pc.owner = q;
      myResults.push_back(encode(pc));
    }
  } else {
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      PairCheck pc;
      pc.reader = me;
      pc.owner = q;
      pc.message = "rank " + std::to_string(me) + " <- rank " + std::to_string(q) + ": " + localErr;
      myResults.push_back(encode(pc));
    }
  }
  std::string joined;
  for (auto& s : myResults) joined += s + "\n";
  // Also the barrier before freeing `src`: nobody is still reading it.
  auto everyone = bs.allGatherStrings(joined);
  for (auto& block : everyone) {
    std::size_t pos = 0;
    while (pos < block.size()) {
      std::size_t nl = block.find('\n', pos);
      if (nl == std::string::npos) nl = block.size();
      if (nl > pos) r.pairs.push_back(decode(block.substr(pos, nl - pos)));
      pos = nl + 1;
    }
  }
  r.summary = summarize(r, "rank");
  std::string noGpu;
  for (int q = 0; q < n; ++q)
    if (!errs[q].empty()) noGpu += (noGpu.empty() ? "" : ", ") + std::to_string(q);
  if (!noGpu.empty()) {
    for (int q = 0; q < n; ++q)
      if (!errs[q].empty()) {
        r.summary = "rank(s) " + noGpu + " have no usable GPU: " + errs[q];
        break;
      }
  }
  return r;
}

}  // namespace fb::cudaipc

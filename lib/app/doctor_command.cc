#include "app/doctor_command.h"

#include <filesystem>

#include "bootstrap/mpi_bootstrap.h"
#include "core/config.h"
#include "doctor/run.h"
#if defined(FB_BUILD_VERBS)
#include "transport/verbs/gpudirect.h"
#endif
#if defined(FB_BUILD_NCCL_COLL)
#include <nccl.h>
#endif
#if FB_HAVE_CUDA && (defined(FB_BUILD_NCCL_COLL) || defined(FB_BUILD_CUDA_COLL))
#include <cuda_runtime_api.h>
#define FB_DOCTOR_CUDA 1
#endif
#if defined(FB_BUILD_CUDA_COLL)
#include "gpu/cuda/p2p_check.h"
#endif

namespace fb {

std::map<std::string, std::string> linkedVersions() {
  std::map<std::string, std::string> v;
  v["mpi"] = mpiLibraryVersion();
#if defined(FB_BUILD_NCCL_COLL)
  int nv = 0;
  if (ncclGetVersion(&nv) == ncclSuccess)
    v["nccl"] = std::to_string(nv / 10000) + "." + std::to_string((nv / 100) % 100) + "." + std::to_string(nv % 100);
#endif
#if defined(FB_DOCTOR_CUDA)
  int drv = 0, rt = 0;
  if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0)
    v["cuda_driver"] = std::to_string(drv / 1000) + "." + std::to_string((drv % 1000) / 10);
  if (cudaRuntimeGetVersion(&rt) == cudaSuccess)
    v["cuda_runtime"] = std::to_string(rt / 1000) + "." + std::to_string((rt % 1000) / 10);
#endif
  return v;
}

void addVersionsToFingerprint(const std::map<std::string, std::string>& v, nlohmann::json& extra) {
  for (const auto& [k, key] : std::map<std::string, std::string>{
           {"nccl", "nccl_version"}, {"cuda_driver", "cuda_driver_version"}, {"cuda_runtime", "cuda_runtime_version"}})
    if (auto it = v.find(k); it != v.end()) extra[key] = it->second;
}

int runDoctorCommand(Bootstrap& bs, const Options& o, const std::string& runId, const std::string& commandLine) {
  doctor::Hooks hooks;
  hooks.versions = linkedVersions();
#if defined(FB_BUILD_CUDA_COLL)
  hooks.p2p = [] {
    doctor::Hooks::P2P out;
    auto rep = cudaipc::checkLocalPairs(cudaipc::p2pOptionsFromEnv());
    if (rep.gpus < 2) return out;  // nothing ran
    out.ran = true;
    out.ok = rep.ok;
    out.summary = rep.summary;
    for (const auto& p : rep.pairs)
      if (!p.ok && p.message.find("cudaDeviceCanAccessPeer = 0") == std::string::npos) out.brokenPairs.push_back(p.message);
    return out;
  };
#endif
#if defined(FB_BUILD_VERBS) && FB_HAVE_CUDA
  hooks.dmabuf = [](const std::string& dev) {
    auto s = verbs::probeGpuDirect(dev);
    return std::make_pair(s.possible && s.via == "dma-buf", s.why);
  };
#endif
  doctor::RunOptions ro;
  ro.runId = runId;
  ro.commandLine = commandLine;
  ro.tcpInterface = o.coll.transport.tcpInterface;
  ro.required = o.required;
  if (o.writeFiles) ro.resultDir = (std::filesystem::path(o.resultsDir) / runId).string();
  ro.fingerprint.mpiVersion = hooks.versions["mpi"];
  ro.fingerprint.extra = {{"rank", bs.rank()}, {"local_rank", bs.localRank()}};
  addVersionsToFingerprint(hooks.versions, ro.fingerprint.extra);
  return doctor::runDoctor(bs, hooks, ro);
}

}  // namespace fb

// The backend table (see backends.h). The only place in the program with per-backend #ifs.
#include "app/backends.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/accept_pairs.h"
#include "bootstrap/agree.h"
#include "bootstrap/mpi_bootstrap.h"
#include "core/config.h"
#include "core/error.h"
#include "model/host_choice.h"
#include "transport/tcp/tcp_transport.h"
#if defined(FB_BUILD_VERBS)
#include "transport/verbs/gpudirect.h"
#include "transport/verbs/verbs_transport.h"
#endif
#if defined(FB_BUILD_NCCL_COLL)
#include <nccl.h>
#include "collectives/nccl/nccl_collective.h"
#include "collectives/nccl/nccl_pairs.h"
#endif
#if FB_HAVE_CUDA && (defined(FB_BUILD_NCCL_COLL) || defined(FB_BUILD_CUDA_COLL))
#include <cuda_runtime_api.h>
#define FB_BACKENDS_CUDA_RUNTIME 1
#endif
#if defined(FB_BUILD_CUDA_COLL)
#include "collectives/cuda/cuda_collective.h"
#include "collectives/cuda/staging.h"
#include "gpu/cuda/p2p_check.h"
#endif

namespace fb {

std::vector<std::weak_ptr<Transport>>& openTransports() {
  static std::vector<std::weak_ptr<Transport>> t;
  return t;
}

namespace {

std::vector<std::string> oneVariant(Bootstrap&, const Options&) { return {""}; }

BackendStatus notBuiltStatus(const std::string& name, const std::string& why) { return {name, false, false, why}; }

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

#if defined(FB_BACKENDS_CUDA_RUNTIME)
// The CUDA driver and runtime versions (nccl and cuda load them).
void cudaVersions(std::map<std::string, std::string>& v) {
  int drv = 0, rt = 0;
  if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0)
    v["cuda_driver"] = std::to_string(drv / 1000) + "." + std::to_string((drv % 1000) / 10);
  if (cudaRuntimeGetVersion(&rt) == cudaSuccess)
    v["cuda_runtime"] = std::to_string(rt / 1000) + "." + std::to_string((rt % 1000) / 10);
}
#endif

// tcp and verbs: the host-memory ring algorithms over a Transport.
CollFactory openRing(Bootstrap& bs, const Options& o, const std::string& name) {
  std::shared_ptr<Transport> transport;
  agree(bs, name, [&] { transport = openTransport(name, bs, o.coll.transport); });
  // While a rank waits in the bootstrap, a closed connection names the peer that died.
  bs.addLivenessProbe([transport] { transport->checkPeersAlive(); });
  openTransports().push_back(transport);
  std::shared_ptr<DeviceStaging> staging;
  if (o.coll.gpuStaging) {
#if defined(FB_BUILD_CUDA_COLL)
    agree(bs, name + " --gpu-staging", [&] { staging = cudaipc::makeCudaStaging(bs.localRank()); });
#else
    throw UnavailableError(name + ": --gpu-staging needs a CUDA build");
#endif
  }
  // On more than one node the cost model chooses the algorithm (lib/model/host_choice.h).
  auto ranker = model::hostRankerFor(*transport, bs);
  return [transport, staging, ranker](const CollRequest& r) {
    return Support{makeRingCollective(r.kind, transport, staging, ranker), ""};
  };
}

BackendEntry tcpEntry() {
  BackendEntry e;
  e.name = "tcp";
  e.help = "ring algorithms over TCP sockets (host memory)";
  e.built = true;
  e.probe = [](Bootstrap&, const Options& o) { return tcp::probe(o.coll.transport); };
  e.transport = [](Bootstrap& bs, const TransportOptions& t) { return tcp::createTransport(bs, t); };
  e.variants = oneVariant;
  e.open = [](Bootstrap& bs, const Options& o, const std::string&) { return openRing(bs, o, "tcp"); };
  e.addOptions = [](CLI::App& app, Options& o) {
    app.add_option("--tcp-if", o.coll.transport.tcpInterface,
                   "tcp: interface name or IPv4 address to bind (default: the address the node name resolves to)");
  };
  e.checkOnThisRank = [](const Options& o, const std::string& hostname) {
    if (has(o.transports, "tcp")) tcp::checkOptions(o.coll.transport, hostname);
  };
  return e;
}

BackendEntry mpiEntry() {
  BackendEntry e;
  e.name = "mpi";
  e.help = "MPI's own collectives (the reference row)";
  e.built = true;
  e.probe = [](Bootstrap&, const Options&) { return BackendStatus{"mpi", true, true, mpiLibraryVersion()}; };
  e.versions = [](std::map<std::string, std::string>& v) { v["mpi"] = mpiLibraryVersion(); };
  e.variants = oneVariant;
  e.pairLink = [](Bootstrap&, const Options&) {
    return std::unique_ptr<acceptcmd::PairLink>(std::make_unique<acceptcmd::MpiLink>());
  };
  e.open = [](Bootstrap& bs, const Options&, const std::string&) -> CollFactory {
    agree(bs, "mpi", [&] { failHook("mpi-open", bs.rank()); });
    return [](const CollRequest& r) {
      if (describe(r.kind).reduces && r.op == ReduceOp::kAvg)
        return Support::no("not supported: MPI has no average operator (NCCL's ncclAvg has no MPI counterpart)");
      return Support{makeMpiCollective(r.kind), ""};
    };
  };
  return e;
}

BackendEntry verbsEntry() {
  BackendEntry e;
  e.name = "verbs";
  e.help = "ring algorithms over RDMA verbs (RC queue pairs, host memory)";
#if defined(FB_BUILD_VERBS)
  e.built = true;
  e.probe = [](Bootstrap&, const Options& o) { return verbs::probe(o.coll.transport); };
  e.transport = [](Bootstrap& bs, const TransportOptions& t) { return verbs::createTransport(bs, t); };
  e.variants = oneVariant;
  e.open = [](Bootstrap& bs, const Options& o, const std::string&) { return openRing(bs, o, "verbs"); };
  e.fingerprint = [](FingerprintOptions& fp, const Options& o) { fp.rdmaDiscovery = verbs::discover(o.coll.transport); };
  e.listDetails = [](const Options& o) { return "RDMA devices:\n" + verbs::describe(o.coll.transport); };
#if FB_HAVE_CUDA
  e.doctorHooks = [](doctor::Hooks& hooks) {
    hooks.dmabuf = [](const std::string& dev) {
      auto s = verbs::probeGpuDirect(dev);
      return std::make_pair(s.possible && s.via == "dma-buf", s.why);
    };
  };
#endif
#else
  e.notBuilt = "not built: libibverbs-dev not found at configure time";
#endif
  e.addOptions = [](CLI::App& app, Options& o) {
    app.add_option("--ib-dev", o.coll.transport.verbsDevice, "verbs: RDMA device (default: first active)");
    app.add_option("--ib-port", o.coll.transport.verbsPort, "verbs: port (default: first active)");
    app.add_option("--gid-index", o.coll.transport.gidIndex,
                   "verbs/RoCE: GID index (default: a RoCEv2 GID bound to a routable IPv4)");
    // Refused with the reason wherever it is given (no GPUDirect rows): not offered in --help.
    app.add_flag("--gpu-memory", o.coll.transport.gpuDirect, "verbs straight from GPU memory (GPUDirect RDMA): not implemented, refused with the reason (use --gpu-staging)")->group("");
  };
  e.validate = [](Options& o) {
    if (o.coll.transport.gidIndex < -1) throw ConfigError("--gid-index must be >= 0");
  };
  e.checkOnThisRank = [](const Options& o, const std::string& hostname) {
    if (!o.coll.transport.verbsDevice.empty() && has(o.transports, "verbs") &&
        !std::filesystem::exists("/sys/class/infiniband/" + o.coll.transport.verbsDevice))
      throw ConfigError("--ib-dev '" + o.coll.transport.verbsDevice + "': no such RDMA device on " + hostname +
                        " (see --list)");
    if (o.coll.transport.verbsPort < 0) throw ConfigError("--ib-port must be >= 1");
  };
  return e;
}

BackendEntry ncclEntry() {
  BackendEntry e;
  e.name = "nccl";
  e.help = "NCCL's collectives, on the training path (nothing forced) or one isolated link (--path)";
#if defined(FB_BUILD_NCCL_COLL)
  e.built = true;
  e.versions = [](std::map<std::string, std::string>& v) {
    int nv = 0;
    if (ncclGetVersion(&nv) == ncclSuccess)
      v["nccl"] = std::to_string(nv / 10000) + "." + std::to_string((nv / 100) % 100) + "." + std::to_string(nv % 100);
#if defined(FB_BACKENDS_CUDA_RUNTIME)
    cudaVersions(v);
#endif
  };
  e.probe = [](Bootstrap&, const Options&) { return nccl::probe(); };
  e.variants = [](Bootstrap& bs, const Options& o) {
    std::vector<std::string> paths;
    agree(bs, "nccl", [&] {
      paths = o.coll.path == "auto" ? nccl::availablePaths(bs) : std::vector<std::string>{o.coll.path};
      if (paths.empty()) throw UnavailableError("nccl: no usable path on this machine");
    });
    return paths;
  };
  e.open = [](Bootstrap& bs, const Options& o, const std::string& path) -> CollFactory {
    CollectiveOptions co = o.coll;
    return [&bs, co, path](const CollRequest& r) { return Support{nccl::makeCollective(r.kind, bs, co, path), ""}; };
  };
  e.pairLink = [](Bootstrap& bs, const Options& o) {
    return std::unique_ptr<acceptcmd::PairLink>(
        std::make_unique<acceptcmd::NcclLink>(nccl::openPairChannel(bs, o.coll, std::max(o.acc.bwBytes, o.acc.latBytes))));
  };
  e.listDetails = [](const Options&) {
    std::string topo = nccl::topologyText();
    return topo.empty() ? std::string() : "GPU topology:\n" + topo;
  };
#else
  e.notBuilt = FB_HAVE_NCCL ? "not built: the nccl backend is absent from this source tree"
                            : "not built: CUDA toolkit or NCCL not found at configure time";
#endif
  e.addOptions = [](CLI::App& app, Options& o) {
    app.add_option("--path", o.coll.path,
                   "NCCL path. training: the training job's path, nothing forced (the site's NCCL_* kept; NVLink/P2P/"
                   "SHM inside a node, NCCL's NICs between nodes; the row attests transports, NICs, rails, GDRDMA, PXN, "
                   "NVLS, algorithm and protocol); auto = training on more than one node, the best single link on one. "
                   "ib|roce: on more than one node the training path that must use InfiniBand / RoCE between nodes; on "
                   "one node they isolate the NIC. Isolating one link (forces NCCL settings): nvlink|pcie|shm|socket. "
                   "local: one rank, one GPU")
        ->capture_default_str();
  };
  e.validate = [](Options& o) {
    static const std::vector<std::string> paths = {"auto", "training", "nvlink", "pcie", "shm", "socket", "ib", "roce", "local"};
    if (std::find(paths.begin(), paths.end(), o.coll.path) == paths.end())
      throw ConfigError("unknown --path '" + o.coll.path +
                        "' (choose auto, training, nvlink, pcie, shm, socket, ib, roce or local)");
  };
  return e;
}

BackendEntry cudaEntry() {
  BackendEntry e;
  e.name = "cuda";
  e.help = "ring and one-shot algorithms over CUDA IPC peer memory (one node)";
#if defined(FB_BUILD_CUDA_COLL)
  e.built = true;
#if defined(FB_BACKENDS_CUDA_RUNTIME)
  e.versions = cudaVersions;
#endif
  e.doctorHooks = [](doctor::Hooks& hooks) {
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
  };
  e.probe = [](Bootstrap& bs, const Options&) { return cudaipc::probe(&bs); };
  e.variants = oneVariant;
  e.open = [](Bootstrap& bs, const Options& o, const std::string&) -> CollFactory {
    agree(bs, "cuda", [&] {
      auto st = cudaipc::probe(&bs);
      if (!st.usable) throw UnavailableError(st.reason);
    });
    CollectiveOptions co = o.coll;
    return [&bs, co](const CollRequest& r) {
      std::string why = cudaipc::whyNot(r);
      if (!why.empty()) return Support::no(why);
      return Support{cudaipc::makeCollective(r.kind, bs, co), ""};
    };
  };
#else
  e.notBuilt = FB_HAVE_CUDA ? "not built: the cuda backend is absent from this source tree"
                            : "not built: CUDA toolkit not found at configure time";
#endif
  return e;
}

}  // namespace

const std::vector<BackendEntry>& backendTable() {
  static const std::vector<BackendEntry> table = [] {
    std::vector<BackendEntry> t = {tcpEntry(), mpiEntry(), verbsEntry(), ncclEntry(), cudaEntry()};
    for (auto& e : t) {
      e.facts = findImplFacts(e.name);
      if (!e.facts) throw std::logic_error("backend " + e.name + " has no entry in core/impl_facts.cc");
      if (!e.built) {
        std::string why = e.notBuilt, name = e.name;
        e.probe = [name, why](Bootstrap&, const Options&) { return notBuiltStatus(name, why); };
      }
    }
    return t;
  }();
  return table;
}

const BackendEntry* findBackend(std::string_view name) {
  for (const auto& e : backendTable())
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<std::string> gpuBackendNames() {
  std::vector<std::string> out;
  for (const auto& e : backendTable())
    if (e.facts->gpu) out.push_back(e.name);
  return out;
}

std::unique_ptr<Transport> openTransport(std::string_view name, Bootstrap& bs, const TransportOptions& options) {
  const BackendEntry* e = findBackend(name);
  if (e && !e->built) throw UnavailableError(e->name + ": " + e->notBuilt);
  if (!e || !e->transport) throw ConfigError("unknown transport '" + std::string(name) + "'");
  nodesFromEnv(bs.size());  // a malformed FB_HOST_NODES fails before any connection
  auto t = e->transport(bs, options);
  t->setNodeOf(nodePlacement(bs));  // every rank's node, for the node-aware host algorithms
  return t;
}

}  // namespace fb

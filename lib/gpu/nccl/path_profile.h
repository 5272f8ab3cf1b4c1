// Path profiles: a named fabric path = the NCCL settings that force it (applied with setenv
// before ncclCommInitRank) + the evidence NCCL's INFO log must show for a row to count as that
// path. NCCL reads these variables once per process and caches them (NCCL_PARAM, the P2P level),
// so one process can force one profile only: activateProfile() refuses a second, different one.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "topology/nccl_log.h"
#include "topology/topology.h"

namespace fb::nccl {

// Two kinds of profile:
// - training (and ib/roce on more than one node): the training job's path. Nothing is forced:
//   the site's NCCL_* settings (IB_HCA, SOCKET_IFNAME, GID_INDEX, NVLS, CROSS_NIC, ...) are
//   kept, NCCL uses NVLink/P2P/SHM inside a node and every NIC it chooses between nodes, and the
//   row attests what it used (topo::NcclAttestation). ib/roce add the requirement that the
//   inter-node transport is InfiniBand / RoCE (as --require ib / roce).
// - isolating (nvlink, pcie, shm, socket; ib/roce on one node): force one link so that it alone
//   is measured (P2P/SHM disabled where needed), and every connection must be of that family.
struct PathProfile {
  std::string name;  // training | nvlink | pcie | shm | socket | ib | roce | local
  std::vector<std::pair<std::string, std::string>> env;  // set before comm init
  std::string family;  // isolating: transport family every connection must use (P2P, SHM, NET/Socket, NET/IB); "" training
  bool training = false;    // nothing forced; attested, not checked against a family
  std::string requireNet;   // training ib/roce: "ib" / "roce" must carry the inter-node traffic
};

// All names, in the order --path=auto runs them (training is offered by availablePaths only on
// more than one node, where it comes first).
const std::vector<std::string>& pathNames();
bool isPathName(const std::string& name);

// The settings for `name` when the job spans `nodes` nodes. ib/roce need an active RDMA port of
// that link layer in `rdma` (else fb::UnavailableError); on one node they isolate the NIC (P2P and
// SHM off, NCCL_NET=IB, NCCL_IB_HCA = that port unless the site set NCCL_IB_HCA), on more than one
// they are the training path plus the requirement. Unknown name → fb::ConfigError.
PathProfile makeProfile(const std::string& name, const std::vector<topo::RdmaPort>& rdma, int nodes = 1);

// The site's NCCL_* variables as this process sees them ("K=V K=V"), NCCL_DEBUG* excluded.
std::string siteNcclEnv();

// Our profiler plugin (lib/gpu/nccl/profiler_plugin.cc). enableNcclLogging sets
// NCCL_PROFILER_PLUGIN to it unless the site set NCCL_PROFILER_PLUGIN. profilerStatus(): how
// algo/proto/channels can be read ("plugin <path>", or why not).
std::string profilerStatus();
// Arms / disarms the plugin's recording (no-op when it is not loaded); take returns the records
// of `rank` ("rank R coll AllReduce count N algo RING proto LL nchannels 2 nwarps 16" and
// "rank R p2p Send count N peer P nchannels 2" lines) and whether NCCL loaded the plugin.
void armProfiler(bool on);
std::string takeProfilerRecords(int rank, bool* loaded);

// Environment every profile shares: the INFO logging the attestation reads. NVLS (NCCL_NVLS_ENABLE)
// is never set here: on an NVSwitch system it is NCCL's or the site's choice (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE into
// logDir). Idempotent; the first call fixes the log file for the process. Returns the log path
// ("" when the user set NCCL_DEBUG_FILE to something we cannot resolve).
std::string enableNcclLogging(const std::string& logDir);

// Applies the profile's variables (overwriting) for this process. NCCL caches them at the
// first communicator, so a second call with a different profile throws fb::UnavailableError
// naming both. The same profile again is a no-op.
void activateProfile(const PathProfile& p);
std::string activeProfileName();  // "" before the first activateProfile

// Checks the log summary (connections of `rank`) against the profile. Training profiles: "" when
// NCCL made any connection. Isolating ones: "" when every connection is of the profile's family (and, for nvlink/pcie, `nvlink` agrees), else the
// error text "forced path X but NCCL used Y".
std::string attestationError(const PathProfile& p, const topo::NcclLogSummary& log, int rank, bool nvlinkBetweenGpus);

}  // namespace fb::nccl

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

struct PathProfile {
  std::string name;  // nvlink | pcie | shm | socket | ib | roce
  std::vector<std::pair<std::string, std::string>> env;  // set before comm init
  std::string family;  // transport family every connection must use: P2P, SHM, NET/Socket, NET/IB
};

// All names, in the order --path=auto runs them.
const std::vector<std::string>& pathNames();
bool isPathName(const std::string& name);

// The settings for `name`. ib/roce take the RDMA port to use (device, GID index) from `rdma`;
// throws fb::UnavailableError when the machine has no such port. Unknown name → fb::ConfigError.
PathProfile makeProfile(const std::string& name, const std::vector<topo::RdmaPort>& rdma);

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

// Checks the log summary (connections of `rank`) against the profile. Returns "" when every
// connection is of the profile's family (and, for nvlink/pcie, `nvlink` agrees), else the
// error text "forced path X but NCCL used Y".
std::string attestationError(const PathProfile& p, const topo::NcclLogSummary& log, int rank, bool nvlinkBetweenGpus);

}  // namespace fb::nccl

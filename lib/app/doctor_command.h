// fabricbench --doctor: the binary's side (what only it links: CUDA, NCCL, MPI, verbs), handed
// to lib/doctor as Hooks; the checks themselves live in lib/doctor.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "bootstrap/bootstrap.h"
#include "app/options.h"

namespace fb {

// Versions this binary links or loads: "mpi", "nccl", "cuda_driver", "cuda_runtime" (absent when
// not built / not available).
std::map<std::string, std::string> linkedVersions();
// The fingerprint keys of those versions ("nccl_version", "cuda_driver_version",
// "cuda_runtime_version"), added to a fingerprint's extra fields.
void addVersionsToFingerprint(const std::map<std::string, std::string>& versions, nlohmann::json& extra);

// Collective. Returns the exit code every rank agrees on (0 no fail, 1 a check failed).
int runDoctorCommand(Bootstrap& bs, const Options& o, const std::string& runId, const std::string& commandLine);

}  // namespace fb

#include "app/doctor_command.h"

#include <filesystem>

#include "app/backends.h"
#include "doctor/run.h"

namespace fb {

std::map<std::string, std::string> linkedVersions() {
  std::map<std::string, std::string> v;
  for (const auto& e : backendTable())
    if (e.built && e.versions) e.versions(v);
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
  for (const auto& e : backendTable())
    if (e.built && e.doctorHooks) e.doctorHooks(hooks);
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

#include "report/run_folder.h"

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "report/fingerprint.h"

namespace fb {

std::string defaultRunId(const std::string& host, const std::string& suffix) {
  std::string id;
  if (const char* job = std::getenv("SLURM_JOB_ID"); job && *job) {
    id = job;
    const char* step = std::getenv("SLURM_STEP_ID");
    if (!step || !*step) step = std::getenv("SLURM_STEPID");
    if (step && *step) id += std::string(".") + step;
  } else {
    std::time_t now = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", std::gmtime(&now));
    id = std::string(buf) + "-" + host;
  }
  return suffix.empty() ? id : id + "-" + suffix;
}

std::string claimRunDir(const std::string& resultsDir, const std::string& base) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(resultsDir, ec);
  if (ec) throw IoError("cannot create " + resultsDir + ": " + ec.message());
  for (int k = 1; k < 10000; ++k) {
    std::string name = k == 1 ? base : fmt::format("{}-{}", base, k);
    if (fs::create_directory(fs::path(resultsDir) / name, ec)) return name;
    if (ec) throw IoError("cannot create " + (fs::path(resultsDir) / name).string() + ": " + ec.message());
  }
  throw IoError("no free run id after " + base + "-9999 in " + resultsDir);
}

std::string joinArgs(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    std::string a = argv[i];
    bool quote = a.find_first_of(" \t\"'") != std::string::npos || a.empty();
    s += quote ? "'" + a + "'" : a;
  }
  return s;
}

nlohmann::json runFingerprint(const std::vector<std::string>& perRank, const std::vector<std::string>& hostnames) {
  std::vector<nlohmann::json> per;
  for (const auto& f : perRank) per.push_back(nlohmann::json::parse(f));
  nlohmann::json fp = mergeFingerprints(per);
  fp["ranks"] = perRank.size();
  fp["nodes"] = std::set<std::string>(hostnames.begin(), hostnames.end()).size();
  return fp;
}

}  // namespace fb

// lib/report/run_folder: the run id, the claim of a free folder, and the folder a one-process
// tool (fabricbench-peer, fabricbench-verbs) writes.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "helpers.h"
#include "report/run_folder.h"

namespace fs = std::filesystem;

namespace {
// Sets an environment variable for one scope, then restores it.
struct EnvVar {
  std::string name, old;
  bool had;
  EnvVar(const char* n, const char* v) : name(n) {
    const char* o = std::getenv(n);
    had = o != nullptr;
    if (had) old = o;
    if (v) ::setenv(n, v, 1);
    else ::unsetenv(n);
  }
  ~EnvVar() {
    if (had) ::setenv(name.c_str(), old.c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};
}  // namespace

TEST_CASE("run folder: the run id is <job>.<step> under Slurm, else date-time-host", "[run_folder]") {
  {
    EnvVar job("SLURM_JOB_ID", "4711"), step("SLURM_STEP_ID", "3"), old("SLURM_STEPID", nullptr);
    CHECK(fb::defaultRunId("node1") == "4711.3");
    CHECK(fb::defaultRunId("node1", "peer") == "4711.3-peer");
  }
  {
    EnvVar job("SLURM_JOB_ID", "4711"), step("SLURM_STEP_ID", nullptr), old("SLURM_STEPID", "5");
    CHECK(fb::defaultRunId("node1") == "4711.5");
  }
  {
    EnvVar job("SLURM_JOB_ID", nullptr);
    std::string id = fb::defaultRunId("node1", "verbs");
    CHECK(id.size() == std::string("20261201-065705-node1-verbs").size());
    CHECK(id.substr(8, 1) == "-");
    CHECK(id.ends_with("-node1-verbs"));
  }
}

TEST_CASE("run folder: claimRunDir takes the next free name, never an existing folder", "[run_folder]") {
  fbtest::TempDir dir;
  std::string parent = dir.str("results");
  CHECK(fb::claimRunDir(parent, "r") == "r");
  CHECK(fb::claimRunDir(parent, "r") == "r-2");
  CHECK(fb::claimRunDir(parent, "r") == "r-3");
  CHECK(fs::is_directory(fs::path(parent) / "r-3"));
}

TEST_CASE("run folder: RunFolder writes table.csv, run.json with the fingerprint, report.md", "[run_folder]") {
  fbtest::TempDir dir;
  std::string parent = dir.str("results");
  fb::RunFolder f(parent, "", "h", "peer");
  CHECK(f.runId().ends_with("-h-peer"));
  CHECK(f.dir() == (fs::path(parent) / f.runId()).string());
  fb::RunMeta meta;
  meta.fingerprint = fb::runFingerprint({R"({"hostname": "h", "rank": 0})", R"({"hostname": "h", "rank": 1})"},
                                        {"h", "h"});
  f.begin(meta);
  fb::Sample s;
  s.coll = "write_bw";
  s.impl = "verbs";
  s.dtype = "uint8";
  s.bytes = s.count = 65536;
  s.wrong = 0;
  f.add(s);
  fb::RunSummary sum;
  sum.status = "passed";
  f.end(sum);
  auto rows = fb::readCsv(f.dir() + "/table.csv");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].coll == "write_bw");
  CHECK(rows[0].bytes == 65536);
  auto j = nlohmann::json::parse(fbtest::slurp(f.dir() + "/run.json"));
  CHECK(j["run_id"] == f.runId());
  CHECK(j["fingerprint"]["ranks"] == 2);
  CHECK(j["fingerprint"]["nodes"] == 1);
  CHECK(j["summary"]["status"] == "passed");
  CHECK(fs::exists(f.dir() + "/report.md"));
  // a given run id that exists is refused (an earlier run's folder is never written to)
  CHECK_THROWS_AS(fb::RunFolder(parent, f.runId(), "h", "peer"), fb::ConfigError);
  // no folder: nothing is written, nothing fails
  fb::RunFolder none;
  none.begin(meta);
  none.add(s);
  none.end(sum);
  CHECK(none.dir().empty());
}

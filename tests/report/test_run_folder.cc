// lib/report/run_folder: the run id and the claim of a free folder (the files written into it:
// tests/app/test_run_recorder.cc).
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

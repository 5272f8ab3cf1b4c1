// lib/app/run_recorder: the claim of a tool's folder (fabricbench-peer, fabricbench-verbs), the
// files written through the recorder, and the stop when they can no longer be written.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/run_recorder.h"
#include "bootstrap/thread_bootstrap.h"
#include "core/error.h"
#include "report/run_folder.h"

namespace fs = std::filesystem;

namespace {
struct Scratch {
  fs::path dir;
  Scratch() {
    std::string t = (fs::temp_directory_path() / "fb_run_recorder_XXXXXX").string();
    dir = ::mkdtemp(t.data());
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fb::Sample row(std::size_t bytes) {
  fb::Sample s;
  s.coll = "write_bw";
  s.impl = "verbs";
  s.dtype = "uint8";
  s.bytes = s.count = bytes;
  s.wrong = 0;
  return s;
}
}  // namespace

TEST_CASE("run recorder: a tool's folder holds table.csv, run.json with the fingerprint, report.md", "[run_recorder]") {
  Scratch tmp;
  fb::FolderRequest f;
  f.resultsDir = (tmp.dir / "results").string();
  f.suffix = "peer";
  fb::ClaimedRun run = fb::claimRunHere(f, "h");
  CHECK(run.runId.ends_with("-h-peer"));
  const fs::path dir = tmp.dir / "results" / run.runId;
  CHECK(fs::is_directory(dir));  // the default id is claimed by mkdir
  fb::RunMeta meta;
  meta.runId = run.runId;
  meta.fingerprint = fb::runFingerprint({R"({"hostname": "h", "rank": 0})", R"({"hostname": "h", "rank": 1})"},
                                        {"h", "h"});
  fb::RunRecorder rec;
  rec.beginFiles(dir.string(), meta);
  CHECK(rec.resultDir == dir.string());
  rec.add(row(65536), "verbs");
  rec.add(row(131072), "verbs");
  CHECK(rec.rows == 2);
  CHECK_FALSE(rec.stopRequested());
  fb::RunSummary sum;
  sum.status = "passed";
  rec.end(sum);
  auto rows = fb::readCsv((dir / "table.csv").string());
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].coll == "write_bw");
  CHECK(rows[0].bytes == 65536);
  CHECK(rows[1].bytes == 131072);
  auto j = nlohmann::json::parse(slurp(dir / "run.json"));
  CHECK(j["run_id"] == run.runId);
  CHECK(j["fingerprint"]["ranks"] == 2);
  CHECK(j["fingerprint"]["nodes"] == 1);
  CHECK(j["summary"]["status"] == "passed");
  CHECK(j["rows"].size() == 2);
  CHECK(fs::exists(dir / "report.md"));
  // a given run id whose folder exists is refused (an earlier run's folder is never written to)
  f.runId = run.runId;
  CHECK_THROWS_AS(fb::claimRunHere(f, "h"), fb::ConfigError);
  // ... unless overwritten
  f.overwrite = true;
  CHECK(fb::claimRunHere(f, "h").runId == run.runId);
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("run recorder: no folder (--no-files): nothing is written, nothing fails", "[run_recorder]") {
  Scratch tmp;
  fb::FolderRequest f;
  f.resultsDir = (tmp.dir / "results").string();
  f.suffix = "verbs";
  f.writeFiles = false;
  fb::ClaimedRun run = fb::claimRunHere(f, "h");
  CHECK(run.runId.ends_with("-h-verbs"));
  fb::RunRecorder rec;
  rec.beginFiles("", fb::RunMeta{});
  rec.add(row(8), "verbs");
  fb::RunSummary sum;
  rec.end(sum);
  CHECK(rec.rows == 1);
  CHECK(rec.resultDir.empty());
  CHECK_FALSE(fs::exists(tmp.dir / "results"));
}

TEST_CASE("run recorder: files that can no longer be written stop the run", "[run_recorder]") {
  Scratch tmp;
  const fs::path dir = tmp.dir / "r";
  fb::RunRecorder rec;
  rec.tool = "fabricbench-verbs";
  fb::RunMeta meta;
  meta.runId = "r";
  rec.beginFiles(dir.string(), meta);
  rec.add(row(8), "verbs");
  CHECK_FALSE(rec.stopRequested());
  fs::remove_all(dir);  // the folder is gone: run.json cannot be replaced
  rec.add(row(16), "verbs");
  CHECK(rec.stopRequested());
  CHECK_FALSE(rec.writeError.empty());
  CHECK_FALSE(rec.hasFiles());
  CHECK(rec.rows == 2);
}

TEST_CASE("run recorder: every rank learns rank 0's claim", "[run_recorder]") {
  Scratch tmp;
  fb::FolderRequest f;
  f.resultsDir = (tmp.dir / "results").string();
  f.suffix = "verbs";
  std::vector<std::string> ids(3);
  fb::runRanks(3, [&](fb::Bootstrap& bs) { ids[bs.rank()] = fb::claimRun(bs, f).runId; });
  CHECK(ids[0].ends_with("-verbs"));
  CHECK(ids[1] == ids[0]);
  CHECK(ids[2] == ids[0]);
  CHECK(fs::is_directory(tmp.dir / "results" / ids[0]));
  // a taken id: every rank throws ConfigError
  f.runId = ids[0];
  std::vector<int> refused(3, 0);
  fb::runRanks(3, [&](fb::Bootstrap& bs) {
    try {
      fb::claimRun(bs, f);
    } catch (const fb::ConfigError&) {
      refused[bs.rank()] = 1;
    }
  });
  CHECK(refused == std::vector<int>{1, 1, 1});
}

TEST_CASE("run recorder: a SIGTERM after a SIGCONT checkpoint rewrites the files only if a row came since",
          "[run_recorder]") {
  // Open MPI's orted: SIGCONT, a second later SIGTERM and at once SIGKILL. The checkpoint's files stand
  // when no row finished since; a row since makes the end write them again.
  for (bool rowSince : {false, true}) {
    Scratch tmp;
    fb::RunMeta meta;
    meta.runId = "r";
    fb::RunRecorder rec;
    rec.beginFiles(tmp.dir.string(), meta);
    rec.add(row(65536), "verbs");
    fb::RunSummary cont;
    cont.ok = false;
    cont.status = "interrupted (SIGCONT)";
    rec.checkpoint(cont, std::chrono::milliseconds(300));
    CHECK(nlohmann::json::parse(slurp(tmp.dir / "run.json"))["summary"]["status"] == "interrupted (SIGCONT)");
    const auto written = fs::last_write_time(tmp.dir / "run.json");
    if (rowSince) rec.add(row(131072), "verbs");
    fb::RunSummary term;
    term.ok = false;
    term.status = "interrupted (SIGTERM)";
    rec.endSoon(term, std::chrono::milliseconds(300));
    auto j = nlohmann::json::parse(slurp(tmp.dir / "run.json"));
    CHECK(j["summary"]["status"] == (rowSince ? "interrupted (SIGTERM)" : "interrupted (SIGCONT)"));
    CHECK(fb::readCsv((tmp.dir / "table.csv").string()).size() == (rowSince ? 2u : 1u));
    CHECK(slurp(tmp.dir / "report.md").find(rowSince ? "SIGTERM" : "SIGCONT") != std::string::npos);
    if (!rowSince) CHECK(fs::last_write_time(tmp.dir / "run.json") == written);  // not written again
    CHECK(rec.ended);
  }
}

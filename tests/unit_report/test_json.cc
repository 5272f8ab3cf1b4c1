#include <catch2/catch.hpp>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "helpers.h"
#include "report/result_sink.h"

using fbtest::row;
namespace fs = std::filesystem;

namespace {
std::vector<std::string> entries(const fs::path& d) {
  std::vector<std::string> v;
  for (auto& e : fs::directory_iterator(d)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

TEST_CASE("json: writeFileAtomic replaces the file and leaves no temp file", "[json]") {
  fbtest::TempDir dir;
  std::string p = dir.str("x.json");
  fb::writeFileAtomic(p, "first");
  CHECK(fbtest::slurp(p) == "first");
  fb::writeFileAtomic(p, "second, longer content");
  CHECK(fbtest::slurp(p) == "second, longer content");
  CHECK(entries(dir.path) == std::vector<std::string>{"x.json"});
  CHECK_THROWS(fb::writeFileAtomic(dir.str("no/such/dir/x.json"), "x"));
}

TEST_CASE("json: run.json is valid at begin, after each row and at end", "[json]") {
  fbtest::TempDir dir;
  std::string p = dir.str("r1/run.json");
  fb::RunMeta meta;
  meta.runId = "r1";
  meta.commandLine = "fabricbench -b 8 -e 1M";
  meta.config = {{"minbytes", 8}};
  meta.fingerprint = {{"hostname", "h0"}};
  auto sink = fb::makeJsonSink(p);
  sink->begin(meta);
  auto j = nlohmann::json::parse(fbtest::slurp(p));
  CHECK(j["schema"] == "fabricbench/1");
  CHECK(j["run_id"] == "r1");
  CHECK(j["command_line"] == meta.commandLine);
  CHECK(j["config"]["minbytes"] == 8);
  CHECK(j["fingerprint"]["hostname"] == "h0");
  CHECK(j["rows"].empty());
  CHECK(j["summary"]["status"] == "running");
  CHECK(j["finished"] == false);

  auto a = row("allreduce", "tcp", "lo", 1024, 10.5, 0.15);
  a.extra = {{"k", "v"}};
  a.timer = "host";
  a.rankTime = "avg";
  a.repeats = 5;
  a.timeUsMin = 10.25;
  a.timeUsMax = 21;
  a.p50Us = 10.75;
  a.p99Us = 30.5;
  auto b = row("allreduce", "tcp", "lo", 2048, 11.5, 0.3, -1);
  sink->add(a);
  j = nlohmann::json::parse(fbtest::slurp(p));  // a killed run still has a valid file with its rows
  REQUIRE(j["rows"].size() == 1);
  sink->add(b);
  j = nlohmann::json::parse(fbtest::slurp(p));
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["rows"][1]["wrong"].is_null());
  CHECK(j["rows"][0]["size_bytes"] == 1024);
  CHECK(j["rows"][0]["extra"]["k"] == "v");

  sink->end(fb::RunSummary{false, "failed: 3 wrong elements", {"verbs skipped: no RDMA device"}});
  j = nlohmann::json::parse(fbtest::slurp(p));
  CHECK(j["summary"]["ok"] == false);
  CHECK(j["summary"]["status"] == "failed: 3 wrong elements");
  CHECK(j["summary"]["notes"][0] == "verbs skipped: no RDMA device");
  CHECK(j["finished"] == true);
  CHECK(entries(dir.str("r1")) == std::vector<std::string>{"run.json"});

  // Rows round-trip through JSON.
  auto back = fb::sampleFromJson(j["rows"][0]);
  CHECK(back.bytes == a.bytes);
  CHECK(back.timeUs == a.timeUs);
  CHECK(back.extra == a.extra);
  CHECK(back.timer == "host");
  CHECK(back.rankTime == "avg");
  CHECK(back.repeats == 5);
  CHECK(back.timeUsMin == 10.25);
  CHECK(back.timeUsMax == 21);
  CHECK(back.p50Us == 10.75);
  CHECK(back.p99Us == 30.5);
  CHECK(j["rows"][0]["busbw_min_GBps"].get<double>() == Approx(0.075));  // slowest batch: 21 us vs 10.5
  CHECK(j["rows"][1]["p50_us"].is_null());
  CHECK(fb::sampleFromJson(j["rows"][1]).p50Us == -1);
  CHECK(fb::sampleFromJson(j["rows"][1]).wrong == -1);
  CHECK_THROWS(fb::sampleFromJson(nlohmann::json{{"coll", "x"}}));
}

TEST_CASE("sinks: makeRunSinks creates the folder at begin and writes the three files", "[json]") {
  fbtest::TempDir dir;
  std::string rd = dir.str("results/run-7");
  auto sink = fb::makeRunSinks(rd, /*console=*/false);
  CHECK_FALSE(fs::exists(rd));  // nothing until begin(): rejected input leaves no folder
  fb::RunMeta meta;
  meta.runId = "run-7";
  meta.resultDir = rd;
  sink->begin(meta);
  CHECK(fs::exists(rd + "/table.csv"));
  CHECK(fs::exists(rd + "/run.json"));
  sink->add(row("allreduce", "tcp", "lo", 1024, 10, 0.2));
  sink->end(fb::RunSummary{true, "passed", {}});
  CHECK(fb::readCsv(rd + "/table.csv").size() == 1);
  CHECK(nlohmann::json::parse(fbtest::slurp(rd + "/run.json"))["rows"].size() == 1);
  CHECK(fbtest::slurp(rd + "/report.md").find("tcp/lo") != std::string::npos);
  CHECK(entries(rd) == std::vector<std::string>{"report.md", "run.json", "table.csv"});
}

TEST_CASE("console: header explains time and busbw; sub-header on path change; rows flushed", "[console]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  auto sink = fb::makeConsoleSink(f);
  fb::RunMeta meta;
  meta.runId = "c1";
  sink->begin(meta);
  auto a = row("allreduce", "tcp", "tcp lo 127.0.0.1", 1024, 10.25, 0.15);
  auto b = row("allreduce", "tcp", "tcp lo 127.0.0.1", 2048, 11.5, 0.3, -1);
  auto c = row("allreduce", "mpi", "ob1/tcp", 1024, 9.75, 0.2);
  c.pctNominal = 42.5;
  sink->add(a);
  auto readAll = [&] {
    std::fflush(f);
    std::rewind(f);
    std::string s;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    std::fseek(f, 0, SEEK_END);
    return s;
  };
  std::string afterOne = readAll();
  CHECK(afterOne.find("median over the timed batches") != std::string::npos);
  CHECK(afterOne.find("timer=gpu rank_time=max repeats=1") != std::string::npos);
  CHECK(afterOne.find("2(n-1)/n") != std::string::npos);
  CHECK(afterOne.find("GB = 1e9") != std::string::npos);
  CHECK(afterOne.find("10.25") != std::string::npos);
  sink->add(b);
  sink->add(c);
  sink->end(fb::RunSummary{true, "passed", {}});
  std::string all = readAll();
  std::fclose(f);
  auto count = [&](const std::string& needle) {
    std::size_t n = 0, pos = 0;
    while ((pos = all.find(needle, pos)) != std::string::npos) {
      ++n;
      pos += needle.size();
    }
    return n;
  };
  CHECK(count("busbw_GBps ") >= 2);  // one column header per sub-table
  CHECK(count("# allreduce  impl=") == 2);
  CHECK(all.find("N/A") != std::string::npos);   // unchecked row
  CHECK(all.find("42.5") != std::string::npos);  // %nominal when known
  CHECK(all.find("mpi/ob1/tcp") != std::string::npos);
}

TEST_CASE("json: invalid UTF-8 in a path or the fingerprint does not break run.json", "[json]") {
  fbtest::TempDir dir;
  std::string p = dir.str("run.json");
  fb::RunMeta meta;
  meta.runId = "u";
  meta.fingerprint = {{"env", {{"NCCL_X", std::string("bad \xff\xfe bytes")}}}};
  auto sink = fb::makeJsonSink(p);
  sink->begin(meta);
  sink->add(row("allreduce", "nccl", std::string("P2P \xc3 cut"), 8, 1, 1));
  sink->end(fb::RunSummary{true, "passed", {}});
  auto j = nlohmann::json::parse(fbtest::slurp(p));
  CHECK(j["rows"].size() == 1);
  CHECK(j["summary"]["status"] == "passed");
}

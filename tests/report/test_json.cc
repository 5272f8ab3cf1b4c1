#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

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

TEST_CASE("json: after dropTemporariesForExit no result file is named or replaced", "[json]") {
  // In a child (the drop holds its lock until the process ends): a write that starts after the drop, as the main
  // thread's next row after a SIGTERM, neither replaces the file nor leaves a temporary when the process ends.
  fbtest::TempDir dir;
  std::string p = dir.str("report.md");
  fb::writeFileAtomic(p, "before");
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    fb::dropTemporariesForExit();
    std::thread([p] { fb::writeFileAtomic(p, "after"); }).detach();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(fbtest::slurp(p) == "before");
  CHECK(entries(dir.path) == std::vector<std::string>{"report.md"});
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
  a.timer = "nccl-tests";
  a.rankTime = "avg";
  a.repeats = 5;
  a.timeUsMin = 10.25;
  a.timeUsMax = 21;
  a.p50Us = 10.75;
  a.p99Us = 30.5;
  a.perOpUs = {12.5, 10.75, 30.5};
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
  CHECK(back.timer == "nccl-tests");
  // run.json rows with the old names, or none (before --timer): today's names, by backend.
  auto old = j["rows"][0];
  old["timer"] = "gpu";
  CHECK(fb::sampleFromJson(old).timer == "rank-clock");  // tcp
  old["impl"] = "nccl";
  CHECK(fb::sampleFromJson(old).timer == "rank-events");
  old["timer"] = "host";
  CHECK(fb::sampleFromJson(old).timer == "nccl-tests");
  old.erase("timer");
  CHECK(fb::sampleFromJson(old).timer == "rank-events");
  CHECK(back.rankTime == "avg");
  CHECK(back.repeats == 5);
  CHECK(back.timeUsMin == 10.25);
  CHECK(back.timeUsMax == 21);
  CHECK(back.p50Us == 10.75);
  CHECK(back.p99Us == 30.5);
  CHECK(back.perOpUs == std::vector<double>{12.5, 10.75, 30.5});  // --per-op's series, in run order
  CHECK_FALSE(j["rows"][1].contains("per_op_us"));                // none without --per-op
  CHECK(fb::sampleFromJson(j["rows"][1]).perOpUs.empty());
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

TEST_CASE("console --wide: header explains time and busbw; sub-header on path change; rows flushed", "[console]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  fb::ConsoleOptions wide;
  wide.wide = true;
  wide.paired = {"allreduce"};  // --wide never holds rows, paired or not
  auto sink = fb::makeConsoleSink(f, wide);
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
  CHECK(afterOne.find("timer=rank-clock rank_time=max repeats=1") != std::string::npos);
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
  // Today's full rows: every column, placement and the impl/path label on each row.
  CHECK(all.find("      size(B)  count(elts)     type          coll impl/path") != std::string::npos);
  CHECK(all.find("t_min_us   t_max_us") != std::string::npos);
  CHECK(all.find("          2048          512  float32     allreduce tcp/tcp lo 127.0.0.1   out        11.50") !=
        std::string::npos);
}

namespace {
std::string readConsole(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fseek(f, 0, SEEK_END);
  return s;
}
std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> v;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    v.push_back(text.substr(pos, nl - pos));
    pos = nl == std::string::npos ? text.size() : nl + 1;
  }
  return v;
}
std::size_t cols(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}
}  // namespace

TEST_CASE("console default: 120 columns, path once per group, out- and in-place side by side", "[console]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  fb::ConsoleOptions opt;
  opt.paired = {"allreduce"};
  auto sink = fb::makeConsoleSink(f, opt);
  fb::RunMeta meta;
  meta.runId = "c2";
  sink->begin(meta);
  // As the sweep runs: every out-of-place size, then every in-place size; then a path whose
  // collective has no in-place (p2pring); a long path label (NCCL's) last.
  const std::string path = "tcp lo 127.0.0.1 same host (loopback path)";
  std::vector<std::size_t> sizes = {8, 1024, 1 << 20, std::size_t(1) << 30};
  for (auto b : sizes) sink->add(row("allreduce", "tcp", path, b, 10.0 + static_cast<double>(b) / 1e4, 1.5));
  CHECK(readConsole(f).find("          8           2") == std::string::npos);  // held for its in-place partner
  for (auto b : sizes) {
    auto r = row("allreduce", "tcp", path, b, 20.0 + static_cast<double>(b) / 1e4, 2.5, 0, true);
    r.pctNominal = 12.5;
    sink->add(r);
  }
  std::string afterIn = readConsole(f);
  CHECK(afterIn.find("out-of-place") != std::string::npos);
  auto p2 = row("p2pring", "tcp", path, 64, 7.25, 0.5);
  sink->add(p2);
  CHECK(readConsole(f).find("7.25") != std::string::npos);  // not paired: printed at once
  const std::string nccl = "NVLink P2P/CUMEM x16ch (2 GPUs, NVLink 18 links, 900 GB/s nominal) NCCL 2.27.7+cuda13.0 ring";
  auto big = row("allreduce", "nccl", nccl, std::size_t(8) << 30, 12345678.9, 1234.567, -1);
  sink->add(big);
  sink->end(fb::RunSummary{true, "passed: a status long enough to need wrapping on a console of one hundred and twenty "
                                 "columns, as the run's notes sometimes are", {"a note"}});
  std::string all = readConsole(f);
  std::fclose(f);
  INFO(all);
  auto lines = linesOf(all);
  for (const auto& l : lines) {
    INFO(l);
    CHECK(cols(l) <= fb::kConsoleWidth);
  }
  auto has = [&](const std::string& needle) { return all.find(needle) != std::string::npos; };
  // The path once per group, in its header; never on a row.
  std::size_t labelled = 0;
  for (const auto& l : lines)
    if (l.find(path) != std::string::npos && l.rfind("# allreduce float32  impl=tcp  path=", 0) == 0) ++labelled;
  CHECK(labelled == 1);
  for (const auto& l : lines)
    if (!l.empty() && l[0] != '#') CHECK(l.find("tcp") == std::string::npos);
  // One row per size with both halves: out-of-place figures, then in-place figures.
  CHECK(has("            8           2      10.00      0.001      1.500      0     -       20.00      0.000      2.500"
            "      0  12.5\n"));
  CHECK(has("   1073741824   268435456  107384.18      9.999      1.500      0     -   107394.18      9.998      2.500"
            "      0  12.5\n"));
  std::size_t dataRows = 0;
  for (const auto& l : lines)
    if (!l.empty() && l[0] != '#') ++dataRows;
  CHECK(dataRows == sizes.size() + 2);  // 4 paired rows, the p2pring row, the nccl row
  // p2pring: its own layout, placement in the header, t_min/t_max columns.
  CHECK(has("# p2pring float32  impl=tcp  path=" + path + "  (4 ranks, 1 node, out-of-place)"));
  CHECK(has("          64          16       7.25"));
  // The long label: impl and shape on one line, the path on the next; its out-of-place row alone.
  CHECK(has("# allreduce float32  impl=nccl  (4 ranks, 1 node, out-of-place)\n# path=" + nccl + "\n"));
  CHECK(has("N/A"));
  CHECK(has("# note: a note\n"));
  CHECK(has("# status: ok (passed: a status long enough"));
  CHECK(has(" notes sometimes are)\n"));
  CHECK(has("#   allreduce float32 nccl/NVLink P2P/CUMEM x16ch"));
  CHECK(has("#       plateau busbw 1234.567 GB/s (2 GiB … 8 GiB), floor —\n"));
}

TEST_CASE("console: rows held for an in-place partner are printed by flush() and end()", "[console]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  fb::ConsoleOptions opt;
  opt.paired = {"allreduce"};
  auto sink = fb::makeConsoleSink(f, opt);
  sink->begin(fb::RunMeta{});
  sink->add(row("allreduce", "tcp", "lo", 4096, 33.5, 1.0));
  CHECK(readConsole(f).find("33.50") == std::string::npos);
  sink->flush();  // the in-place rows never came (declined): out-of-place layout
  std::string t = readConsole(f);
  CHECK(t.find("(4 ranks, 1 node, out-of-place)") != std::string::npos);
  CHECK(t.find("        4096        1024      33.50") != std::string::npos);
  sink->end(fb::RunSummary{true, "passed", {}});
  std::fclose(f);
}

TEST_CASE("console headline: a curve still rising at the largest size is 'rising, no plateau'", "[console]") {
  std::vector<fb::Sample> rows;
  for (std::size_t b = 1024; b <= 65536; b *= 4) rows.push_back(row("allreduce", "tcp", "lo", b, 10, b / 1024.0));
  std::vector<fb::Sample> flat;
  for (std::size_t b = 1024; b <= 65536; b *= 4) flat.push_back(row("allreduce", "mpi", "ob1", b, 10, b < 16384 ? 1 : 5.0));
  rows.insert(rows.end(), flat.begin(), flat.end());
  std::string h = fb::consoleHeadline(rows);
  INFO(h);
  CHECK(h.find("tcp/lo [out]   rising, no plateau: busbw 64.000 GB/s at 64 KiB (+300% from 16 KiB), floor 10.00 us (1 KiB)") !=
        std::string::npos);
  CHECK(h.find("mpi/ob1 [out]  plateau busbw 5.000 GB/s (16 KiB … 64 KiB), floor 10.00 us (1 KiB)") != std::string::npos);
  CHECK(h.find("rising, no plateau: busbw") == h.rfind("rising, no plateau: busbw"));  // the flat one is a plateau
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

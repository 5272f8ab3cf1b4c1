// fabricbench-report end to end: a run folder written by the sinks, then the tool on it.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>

#include "helpers.h"
#include "core/process.h"
#include "report/result_sink.h"

#ifdef FB_REPORT_TOOL
namespace fs = std::filesystem;
using fbtest::row;

namespace {

void writeRun(const std::string& dir, const std::string& id, double scale) {
  auto sink = fb::makeRunSinks(dir, false);
  fb::RunMeta meta;
  meta.runId = id;
  meta.resultDir = dir;
  meta.commandLine = "fabricbench -b 8 -e 4M";
  meta.fingerprint = {{"hostname", "h"}};
  sink->begin(meta);
  for (std::size_t b = 8; b <= (4u << 20); b *= 8) {
    sink->add(row("allreduce", "tcp", "tcp lo", b, 10 + b / 1e3, scale * b / 1e6));
    sink->add(row("allreduce", "mpi", "ob1, tcp", b, 9 + b / 1e3, scale * b / 0.9e6));
  }
  sink->end(fb::RunSummary{true, "passed", {}});
}

fb::CommandResult tool(std::vector<std::string> args) {
  args.insert(args.begin(), FB_REPORT_TOOL);
  return fb::runCommand(args, std::chrono::seconds(120));
}

}  // namespace

TEST_CASE("tool: one run -> comparison.md, plots when gnuplot exists, report.md with links", "[tool]") {
  fbtest::TempDir d;
  std::string run = d.str("results/r1");
  writeRun(run, "r1", 1.0);
  auto r = tool({run, "--baseline", "mpi", "--price", "tcp=250"});
  INFO(r.out << r.error);
  REQUIRE(r.exitCode == 0);
  std::string md = fbtest::slurp(run + "/comparison.md");
  CHECK(md.find("tcp/tcp lo [out]") != std::string::npos);
  CHECK(md.find("mpi/ob1, tcp [out]") != std::string::npos);
  CHECK(md.find("/ baseline") != std::string::npos);
  CHECK(md.find("$250") != std::string::npos);
  if (!fb::findInPath("gnuplot").empty()) {
    CHECK(fs::file_size(run + "/plots/allreduce_float32_busbw.png") > 1000);
    CHECK(fs::file_size(run + "/plots/allreduce_float32_time.png") > 1000);
    CHECK(fs::exists(run + "/plots/allreduce_float32_busbw.gp"));
    CHECK(md.find("plots/allreduce_float32_busbw.png") != std::string::npos);
    CHECK(fbtest::slurp(run + "/report.md").find("](plots/allreduce_float32_busbw.png)") != std::string::npos);
  } else {
    CHECK(r.out.find("plots skipped") != std::string::npos);
  }
}

TEST_CASE("tool: without gnuplot in PATH plots are skipped with the reason", "[tool]") {
  fbtest::TempDir d;
  std::string run = d.str("r1");
  writeRun(run, "r1", 1.0);
  auto r = fb::runCommand({"/usr/bin/env", "PATH=" + d.str("empty"), FB_REPORT_TOOL, run}, std::chrono::seconds(60));
  INFO(r.out << r.error);
  CHECK(r.exitCode == 0);
  CHECK(r.out.find("plots skipped: gnuplot not found") != std::string::npos);
  CHECK_FALSE(fs::exists(run + "/plots"));
}

TEST_CASE("tool: two runs side by side with ratios", "[tool]") {
  fbtest::TempDir d;
  writeRun(d.str("results/a"), "a", 1.0);
  writeRun(d.str("results/b"), "b", 2.0);
  std::string out = d.str("cmp");
  auto r = tool({d.str("results/a"), d.str("results/b"), "-o", out, "--baseline", "a:tcp/tcp lo", "--no-plots"});
  INFO(r.out << r.error);
  REQUIRE(r.exitCode == 0);
  std::string md = fbtest::slurp(out + "/comparison.md");
  CHECK(md.find("a: tcp/tcp lo [out]") != std::string::npos);
  CHECK(md.find("b: mpi/ob1, tcp [out]") != std::string::npos);
  CHECK(md.find("| 2.00 |") != std::string::npos);  // b's tcp is exactly 2x a's at every size
}

TEST_CASE("tool: bad input -> one line, exit 2", "[tool]") {
  fbtest::TempDir d;
  std::string run = d.str("r1");
  writeRun(run, "r1", 1.0);
  CHECK(tool({d.str("missing")}).exitCode == 2);
  CHECK(tool({run, "--baseline", "nccl"}).exitCode == 2);
  CHECK(tool({run, "--price", "tcp=cheap"}).exitCode == 2);
  CHECK(tool({run, "--price", "tcp"}).exitCode == 2);
  CHECK(tool({run, "--no-such-flag"}).exitCode == 2);
  CHECK(tool({}).exitCode == 2);
  // A truncated table.csv is refused, naming the line.
  std::string csv = fbtest::slurp(run + "/table.csv");
  fbtest::spit(run + "/table.csv", csv.substr(0, csv.size() - 5));
  auto r = tool({run, "--no-plots"});
  CHECK(r.exitCode == 2);
}
#endif

#ifdef FB_REPORT_TOOL
TEST_CASE("tool: nccl-tests logs beside our runs, labelled with the tool; a malformed log is bad input", "[tool][import]") {
  fbtest::TempDir d;
  std::string data = std::string(FB_REPORT_TEST_DATA) + "/../../data/nccl-tests/";
  std::string run = d.str("results/r1");
  writeRun(run, "r1", 1.0);
  auto r = tool({run, data + "h200x2-nccl-tests-allreduce-nvlink.log", data + "h200x2-nccl-tests-allreduce-socket.log",
                 "-o", d.str("cmp"), "--no-plots"});
  INFO(r.out << r.error);
  REQUIRE(r.exitCode == 0);
  std::string md = fbtest::slurp(d.str("cmp/comparison.md"));
  CHECK(md.find("nccl-tests/P2P") != std::string::npos);
  CHECK(md.find("nccl-tests/NET/Socket") != std::string::npos);
  CHECK(md.find("nccl-tests 2.19.6 output imported") != std::string::npos);
  CHECK(md.find("331.63") != std::string::npos);  // 1 GiB out-of-place busbw, the log's own figure
  fbtest::spit(d.str("bad.log"), "# nccl-tests version 2.19.6\n# Collective test starting: all_reduce_perf\n"
                                 "#  Rank  0 Group  0 Pid 1 on h device 0 [0] GPU\n#  size  count type redop root time "
                                 "algbw busbw #wrong time algbw busbw #wrong\n 8 2 float sum -1 1.0 0.00\n");
  auto b = tool({d.str("bad.log"), "-o", d.str("cmp2"), "--no-plots"});
  CHECK(b.exitCode == 2);
  CHECK_FALSE(fs::exists(d.str("cmp2/comparison.md")));
}

TEST_CASE("tool: an imported 2-node log's fingerprint shows its hosts and GPUs from the '#  Rank' lines", "[tool][import]") {
  fbtest::TempDir d;
  const std::string log = std::string(FB_TEST_DATA_ROOT) + "/public-nccl-tests/dgxh100-cnh-2x8.log";
  auto r = tool({log, "-o", d.str("cmp"), "--no-plots"});
  INFO(r.out << r.error);
  REQUIRE(r.exitCode == 0);
  std::string md = fbtest::slurp(d.str("cmp/comparison.md"));
  INFO(md);
  // ranks 0-7 on dgx-06, 8-15 on dgx-07, each with 8 H100s (it said host "?" and "1 x NVIDIA H100" before)
  CHECK(md.find("| dgx-06 | 0,1,2,3,4,5,6,7 |") != std::string::npos);
  CHECK(md.find("| dgx-07 | 8,9,10,11,12,13,14,15 |") != std::string::npos);
  CHECK(md.find("| 8 × NVIDIA H100 80GB HBM3 |") != std::string::npos);
  CHECK(md.find("| ? |") == std::string::npos);
  CHECK(md.find("1 × NVIDIA H100") == std::string::npos);
}

TEST_CASE("tool: lib/'s warnings carry the tool's name", "[tool]") {
  // A run folder without run.json: the import warns on stderr, as fabricbench-report.
  fbtest::TempDir d;
  std::string run = d.str("r1");
  writeRun(run, "r1", 1.0);
  fs::remove(run + "/run.json");
  auto r = fb::runCommand({"sh", "-c", std::string(FB_REPORT_TOOL) + " " + run + " --no-plots -o " + d.str("cmp") + " 2>&1"},
                          std::chrono::seconds(120));
  INFO(r.out << r.error);
  CHECK(r.exitCode == 0);
  CHECK(r.out.find("fabricbench-report: warning: " + run + "/run.json missing") != std::string::npos);
  CHECK(r.out.find("fabricbench: warning") == std::string::npos);
}
#endif

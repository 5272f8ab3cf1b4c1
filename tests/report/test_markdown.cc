#include <catch2/catch.hpp>

#include "helpers.h"
#include "report/fingerprint.h"
#include "report/result_sink.h"
#include "report/summary.h"

using fbtest::row;

namespace {
std::vector<fb::Sample> twoPaths() {
  std::vector<fb::Sample> rows;
  for (std::size_t b = 8; b <= (1u << 20); b *= 4) {
    rows.push_back(row("allreduce", "tcp", "tcp lo 127.0.0.1", b, 50 + b / 1000.0, b / 1e5));
    rows.push_back(row("allreduce", "mpi", "ob1 tcp|self", b, 40 + b / 900.0, b / 0.9e5));
    rows.push_back(row("p2pring", "tcp", "tcp lo 127.0.0.1", b, 30 + b / 1000.0, b / 2e5));
  }
  rows[4].wrong = 12;  // one bad row
  return rows;
}
}  // namespace

TEST_CASE("markdown: report.md has every path, definitions, plateau and floor, wrong rows flagged", "[markdown]") {
  fbtest::TempDir dir;
  std::string p = dir.str("report.md");
  auto sink = fb::makeMarkdownSink(p);
  fb::RunMeta meta;
  meta.runId = "md1";
  meta.commandLine = "fabricbench --collective all";
  fb::FingerprintOptions o;
  o.root = dir.str("nofs");  // empty fake tree: a valid, sparse fingerprint
  o.runCommands = false;
  o.mpiVersion = "Open MPI v4.1.4";
  auto fp = fb::collectLocalFingerprint(o);
  fp["hostname"] = "nodeA";
  auto fp2 = fp;
  fp2["hostname"] = "nodeB";
  fp2["kernel"] = "6.1.0-other";
  fp["rank"] = 0;
  fp2["rank"] = 1;
  meta.fingerprint = fb::mergeFingerprints({fp, fp2});
  sink->begin(meta);
  for (auto& r : twoPaths()) sink->add(r);
  sink->end(fb::RunSummary{false, "failed: 12 wrong elements", {"verbs skipped: no RDMA device"}});
  std::string md = fbtest::slurp(p);
  CHECK(md.find("# fabricbench run md1") != std::string::npos);
  CHECK(md.find("NOT OK") != std::string::npos);
  CHECK(md.find("verbs skipped") != std::string::npos);
  CHECK(md.find("tcp/tcp lo 127.0.0.1 [out]") != std::string::npos);
  CHECK(md.find("mpi/ob1 tcp\\|self [out]") != std::string::npos);  // '|' escaped in tables
  CHECK(md.find("## allreduce (float32)") != std::string::npos);
  CHECK(md.find("## p2pring (float32)") != std::string::npos);
  CHECK(md.find("plateau busbw") != std::string::npos);
  CHECK(md.find("floor time") != std::string::npos);
  CHECK(md.find("median busbw over the sizes ≥ 1/4") != std::string::npos);
  CHECK(md.find("✗ 12 wrong") != std::string::npos);
  CHECK(md.find("median of") != std::string::npos);
  CHECK(md.find("maximum over ranks") != std::string::npos);
  CHECK(md.find("Nodes differ: `kernel`") != std::string::npos);
  CHECK(md.find("fabricbench --collective all") != std::string::npos);
  CHECK(md.find("Open MPI v4.1.4") != std::string::npos);
  CHECK(md.find("mean") == md.find("mean over all sizes"));  // the only "mean" is the disclaimer
  CHECK(md.find("![") == std::string::npos);                 // no plots yet: no links
}

TEST_CASE("markdown: comparison puts runs side by side with ratios and labelled prices", "[markdown]") {
  fb::RunData a{"runA", "/r/a", nlohmann::json(), twoPaths()};
  auto rowsB = twoPaths();
  for (auto& r : rowsB) r.busBwGBps *= 2;
  fb::RunData b{"runB", "/r/b", nlohmann::json(), rowsB};
  fb::CompareOptions opt;
  opt.baseline = "runA:tcp/tcp lo 127.0.0.1";
  opt.priceUsd["runB:mpi/ob1 tcp|self"] = 500;
  std::string md = fb::renderComparison({a, b}, opt, "");
  CHECK(md.find("runA: tcp/tcp lo 127.0.0.1 [out]") != std::string::npos);
  CHECK(md.find("runB: mpi/ob1 tcp\\|self [out]") != std::string::npos);
  CHECK(md.find("/ baseline") != std::string::npos);
  CHECK(md.find("user input") != std::string::npos);
  CHECK(md.find("(at $500/port)") != std::string::npos);
  // runB tcp is exactly 2x runA tcp at every size: its ratio column shows 2.00.
  CHECK(md.find("| 2.00 |") != std::string::npos);
}

TEST_CASE("markdown: a run with NCCL and a raw path gets per-size ratios to NCCL; verbs discovery in the fingerprint",
          "[markdown]") {
  fbtest::TempDir dir;
  std::string p = dir.str("report.md");
  auto sink = fb::makeMarkdownSink(p);
  fb::RunMeta meta;
  meta.runId = "ratio1";
  fb::FingerprintOptions o;
  o.root = dir.str("nofs");
  o.runCommands = false;
  auto fp = fb::collectLocalFingerprint(o);
  fp["hostname"] = "gpu1";
  // The layout fabricbench records from verbs discovery (not the sysfs one).
  fp["rdma"] = {{"devices", nlohmann::json::array({{{"name", "rxe0"},
                                                     {"fw_ver", "0.0.0"},
                                                     {"ports", nlohmann::json::array({{{"port", 1},
                                                                                       {"state", "ACTIVE"},
                                                                                       {"rate", "10 Gb/s"},
                                                                                       {"link_layer", "Ethernet"}}})}}})},
                {"error", "no RoCEv2 GID bound to an IPv4 address"}};
  fp["rank"] = 0;
  meta.fingerprint = fb::mergeFingerprints({fp});
  sink->begin(meta);
  // cuda takes 5 us where NCCL takes 10 us: time ratio 0.50, busbw ratio 2.00.
  for (std::size_t b : {std::size_t{8}, std::size_t{4096}}) {
    sink->add(row("allreduce", "cuda", "CUDA IPC", b, 5.0, b / 5e3));
    sink->add(row("allreduce", "nccl", "nvlink", b, 10.0, b / 10e3));
    // In place, NCCL takes 20 us: cuda [in] is held against nccl [in] (0.25), not nccl [out].
    sink->add(row("allreduce", "cuda", "CUDA IPC", b, 5.0, b / 5e3, 0, true));
    sink->add(row("allreduce", "nccl", "nvlink", b, 20.0, b / 20e3, 0, true));
  }
  sink->end(fb::RunSummary{true, "", {}});
  std::string md = fbtest::slurp(p);
  CHECK(md.find("could not be summarised") == std::string::npos);
  CHECK(md.find("| gpu1 | rxe0 | 1 | ACTIVE | 10 Gb/s | Ethernet | 0.0.0 |") != std::string::npos);
  CHECK(md.find("RDMA on gpu1: no RoCEv2 GID") != std::string::npos);
  CHECK(md.find("÷ NCCL") != std::string::npos);
  CHECK(md.find("time / baseline time") != std::string::npos);
  // columns: cuda [out], nccl [out], cuda [in], nccl [in], then cuda [out] / nccl [out], cuda [in] / nccl [in]
  CHECK(md.find("| 8 B | 8 | 5.00 | 10.00 | 5.00 | 20.00 | 0.50 | 0.25 |") != std::string::npos);
  CHECK(md.find("| 4 KiB | 4096 | 0.819 | 0.410 | 0.819 | 0.205 | 2.00 | 4.00 |") != std::string::npos);
}

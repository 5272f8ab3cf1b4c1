// fabricbench-peer: what the GPU fabric of one node carries, without NCCL. One process drives
// every visible GPU:
//   ce      copy-engine peer copy (cudaMemcpyPeerAsync) one way, each direction of the pair
//   sm      SM peer copy by a kernel: "write" (kernel on the source GPU stores into the peer)
//           and "read" (kernel on the destination GPU loads from the peer)
//   bidir   both directions at once (copy engine, and SM writes), total bytes / wall time
//   host    pinned host->device and device->host (the PCIe link), and both at once
//   reduce  reduce kernel (2 inputs, 1 output) against the device-to-device copy, bytes
//           read + written, float32/float16/bfloat16
//   matrix  GPU x GPU copy-engine bandwidth, SM pointer-chase latency, P2P attributes
//   sanity  the P2P sanity check (small verified copies under a time-out)
// Every copy is verified element by element on the GPU (wrong column). Rows go to the console
// and, unless --no-results, to results/<run-id>/table.csv and run.json.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <cuda_runtime.h>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include "app/run_recorder.h"
#include "app/shutdown.h"
#include "benchmarks/peer/peer_plan.h"
#include "benchmarks/peer/peer_tests.h"
#include "core/error.h"
#include "core/units.h"
#include "gpu/cuda/cuda_ipc.h"
#include "report/fingerprint.h"
#include "report/run_folder.h"

namespace fb {
namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitPartial = 4;  // every row right, but a test named with --tests did not run

int realMain(int argc, char** argv) {
  Opts o;
  CLI::App app{"fabricbench-peer: CUDA peer copies, host copies, reduce kernel and the GPU x GPU matrix of one node"};
  app.add_option("-b,--size", o.size, "bytes per copy for ce/sm/bidir/host/reduce (K, M, G suffixes)");
  app.add_option("--matrix-size", o.matrixSize, "bytes per copy in the bandwidth matrix");
  app.add_option("-n,--iters", o.iters, "timed iterations")->check(CLI::Range(1, 100000));
  app.add_option("-w,--warmup", o.warmup, "warm-up iterations")->check(CLI::Range(0, 100000));
  app.add_option("--latency-hops", o.latencyHops, "dependent loads per latency kernel")->check(CLI::Range(1, 10000000));
  app.add_option("--tests", o.tests, "any of ce,sm,bidir,host,reduce,matrix,sanity,bulk (bulk: SM bulk-copy unit, "
                                    "not in the default set)")
      ->delimiter(',')
      ->check(CLI::IsMember({"ce", "sm", "bidir", "host", "reduce", "matrix", "sanity", "bulk"}));
  app.add_option("--gpus", o.gpus, "the pair for ce/sm/bidir (first one for host/reduce)")->delimiter(',')->expected(1, 2);
  app.add_flag("--no-peer-access", o.noPeerAccess, "do not enable peer access (the sanity check must flag it)");
  app.add_flag("--inject-hang", o.injectHang, "sanity check: make each pair's copy wait on a flag nobody sets");
  app.add_option("--sanity-timeout-ms", o.sanityTimeoutMs, "P2P sanity check time-out per pair")
      ->check(CLI::Range(1, 3600000));
  app.add_option("--run-id", o.runId, "results/<run-id>/ (default: <job>.<step> under Slurm, else UTC time and host; -peer)");
  app.add_option("--results-dir", o.resultsDir, "parent folder of the run folders");
  app.add_flag("--no-files", o.noFiles, "print only, write no result folder");
  app.add_flag("--no-results", o.noFiles, "the same as --no-files (deprecated)");
  app.add_flag("--sm-sweep", o.smSweep, "sm: also sweep the copy kernel's launch shape (blocks, threads, unroll)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    ::fb::printLine("fabricbench-peer: ", e.what());
    return kExitBadInput;
  }
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  ClaimedRun claimed;
  std::vector<std::string> skipped;
  std::string skipWhy;
  bool skippedNamed = false;
  try {
    // Every check of the input before any file is made: sizes, then the GPUs --gpus names.
    for (const auto& [flag, text] : {std::pair{"--size", o.size}, std::pair{"--matrix-size", o.matrixSize}}) {
      std::size_t b = parseSize(text);
      if (b < 4096 || b % 16) throw ConfigError(std::string(flag) + " must be a multiple of 16 bytes and at least 4K");
    }
    int visible = 0;
    if (cudaGetDeviceCount(&visible) != cudaSuccess) {
      cudaGetLastError();
      visible = 0;
    }
    // One GPU and no --gpus: the one-GPU tests run on GPU 0, the pair tests are skipped with the
    // reason (peer_plan.h).
    auto plan = peer::planPeer(visible, app.count("--gpus") > 0, o.gpus, o.tests);
    if (!plan.error.empty())
      throw ConfigError(fmt::format("{}, CUDA_VISIBLE_DEVICES={})", plan.error, cudaipc::visibleDevicesEnv()));
    o.gpus = plan.gpus;
    skipped = plan.skipped;
    skipWhy = plan.why;
    // Named on the line and not run: partial (exit 4), as fabricbench does for a named backend.
    skippedNamed = app.count("--tests") > 0 && !skipped.empty();
    claimed = claimRunHere(folderRequest(o.resultsDir, o.runId, "peer", !o.noFiles), host);
  } catch (const Error& e) {  // a bad size, a taken --run-id, a folder that cannot be created
    ::fb::printLine("fabricbench-peer: error: ", e.what());
    return kExitBadInput;
  }
  RunRecorder recorder;
  // SIGCONT checkpoints run.json and report.md; SIGTERM/SIGINT/SIGHUP finalise them.
  recorder.handleSignals(true, "fabricbench-peer");
  RunMeta meta;
  meta.runId = claimed.runId;
  meta.commandLine = joinArgs(argc, argv);
  try {
    meta.fingerprint = runFingerprint({collectLocalFingerprint().dump()}, {host});
  } catch (const std::exception& e) {
    meta.fingerprint = nlohmann::json{{"error", e.what()}};
  }
  meta.config = nlohmann::json{{"size", o.size},       {"matrix_size", o.matrixSize}, {"iters", o.iters},
                               {"warmup", o.warmup},   {"tests", o.tests},            {"gpus", o.gpus},
                               {"no_peer_access", o.noPeerAccess}, {"inject_hang", o.injectHang}};
  try {
    recorder.beginFiles(o.noFiles ? std::string() : (std::filesystem::path(o.resultsDir) / claimed.runId).string(), meta);
  } catch (const Error& e) {  // the files cannot be created
    ::fb::printLine("fabricbench-peer: error: ", e.what());
    return kExitBadInput;
  }
  RunSummary sum;
  int rc = 0;
  try {
    PeerOutcome bench = runPeerTests(o, recorder);
    rc = bench.rc;
    // A pair whose P2P is advertised but broken fails the run (exit 1), as wrong data do.
    sum.ok = rc == 0 && bench.badRows == 0 && bench.sanityOk;
    sum.status = rc != 0          ? "skipped: no GPU"
                 : bench.badRows ? fmt::format("failed: {} rows with wrong elements", bench.badRows)
                 : !bench.sanityOk ? "FAILED: the P2P sanity check failed for at least one pair (see above)"
                 : skipped.empty()  ? "passed: wrong = 0 in every row"
                                    : fmt::format("{}: wrong = 0 in every row; skipped: {} ({})",
                                                  skippedNamed ? "partial" : "passed", fmt::join(skipped, ","), skipWhy);
  } catch (const RunStopped&) {  // the recorder said why
    sum.ok = false;
    sum.status = "failed: writing the result files stopped after " + std::to_string(recorder.rows) + " rows";
    rc = 1;
  } catch (const std::exception& e) {
    ::fb::printLine("fabricbench-peer: ", e.what());
    sum.ok = false;
    sum.status = std::string("aborted: ") + e.what();
    rc = 1;
  }
  const std::string dir = recorder.resultDir;
  recorder.end(sum);
  fmt::print("\n# {}{}\n", sum.status, dir.empty() ? "" : "; results in " + dir + "/");
  if (rc == 0 && !sum.ok) rc = 1;
  if (rc == 0 && skippedNamed) rc = kExitPartial;
  return rc;
}

}  // namespace
}  // namespace fb

int main(int argc, char** argv) {
  fb::shutdown::installSignalThread();  // first: every thread (CUDA's too) inherits the mask
  return fb::realMain(argc, argv);
}

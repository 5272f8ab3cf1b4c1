#include "options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <iostream>
#include <sstream>

#include "backends.h"
#include "collectives/host_algorithms.h"
#include "core/error.h"
#include "core/units.h"
#include "transport/progress.h"

namespace fb {
namespace {

// Elements of a comma-separated list flag; an empty element ("", "a,,b", ",") is bad input.
std::vector<std::string> splitList(const std::string& flag, const std::vector<std::string>& in) {
  std::vector<std::string> out;
  for (const auto& item : in) {
    if (item.empty()) throw ConfigError(flag + ": empty value (give a comma-separated list without empty elements)");
    out.push_back(item);
  }
  return out;
}

std::size_t sizeFlag(const std::string& flag, const std::string& text) {
  try {
    return parseSize(text);
  } catch (const ConfigError& e) {
    throw ConfigError(flag + ": " + e.what());
  }
}

}  // namespace

const std::vector<std::string>& knownTransports() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> names;
    for (const auto& e : backendTable()) names.push_back(e.name);
    return names;
  }();
  return k;
}

std::optional<Options> parseOptions(const std::vector<std::string>& argsIn, bool printHelp) {
  Options o;
  int gbRepetitions = 0;
  std::vector<std::string> ours;
  for (const auto& a : argsIn) {
    if (a.rfind("--benchmark_", 0) == 0) {
      if (a.rfind("--benchmark_enable_random_interleaving", 0) == 0) {
        auto eq = a.find('=');
        std::string v = eq == std::string::npos ? "true" : a.substr(eq + 1);
        if (v != "false" && v != "0")
          throw ConfigError("--benchmark_enable_random_interleaving is refused: it runs benchmarks in a "
                            "different order on each rank, and the collectives would deadlock");
      }
      // Google Benchmark's repetitions are the suite's own (--repeat): each repetition is a
      // separate timed batch of the same row, and the row holds their median and spread.
      if (a.rfind("--benchmark_repetitions", 0) == 0) {
        auto eq = a.find('=');
        std::string v = eq == std::string::npos ? "" : a.substr(eq + 1);
        int n = 0;
        auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || n < 1)
          throw ConfigError("--benchmark_repetitions wants a count >= 1 (got '" + v + "')");
        gbRepetitions = n;
        continue;  // not passed to Google Benchmark: one row per size, with the spread
      }
      o.benchmarkArgs.push_back(a);
    } else {
      ours.push_back(a);
    }
  }

  // List flags: an empty element (--collective '', "a,,b", a lone ",") is refused here, before
  // CLI11 drops it or takes the next flag as the value.
  static const std::vector<std::string> listFlags = {"--collective", "--transport", "--dtype", "--counts", "--require"};
  for (std::size_t i = 0; i < ours.size(); ++i) {
    for (const auto& f : listFlags) {
      std::string v;
      if (ours[i] == f && i + 1 < ours.size()) v = ours[i + 1];
      else if (ours[i].rfind(f + "=", 0) == 0) v = ours[i].substr(f.size() + 1);
      else continue;
      if (v.empty() || v.front() == ',' || v.back() == ',' || v.find(",,") != std::string::npos)
        throw ConfigError(f + ": empty element in '" + v + "' (give a comma-separated list without empty elements)");
    }
  }

  CLI::App app{"fabricbench: AllReduce / AllGather / ReduceScatter / P2P ring over NCCL, raw TCP, verbs, "
               "CUDA peer memory and MPI, with nccl-tests' definitions.\nLaunch with mpirun/srun; "
               "Google Benchmark flags (--benchmark_filter=allreduce/tcp, --benchmark_out=...) pass through.",
               "fabricbench"};
  std::string minB = "8", maxB = "64M", stepB = "0";
  std::vector<std::string> colls{"all"}, transports{"auto"}, dtypes{"float32"};
  std::string placement = "both";
  int timeoutS = 45;
  std::string corrupt;
  app.add_option("-b,--minbytes", minB, "smallest size (8, 1K, 64M, 8G; K = 1024)")->capture_default_str();
  app.add_option("-e,--maxbytes", maxB, "largest size")->capture_default_str();
  app.add_option("-f,--stepfactor", o.stepFactor, "multiply the size by this between rows")->capture_default_str();
  app.add_option("-i,--stepbytes", stepB, "add this many bytes between rows instead of -f");
  std::vector<std::string> counts;
  app.add_option("--counts", counts, "explicit element counts per rank (e.g. 0,1,3,1000003) instead of -b/-e/-f")
      ->delimiter(',')->allow_extra_args(false);
  app.add_option("-n,--iters", o.runner.iters, "timed operations per size")->capture_default_str();
  app.add_option("-w,--warmup", o.runner.warmupIters, "untimed operations per size first")->capture_default_str();
  app.add_option("-c,--check", o.runner.checkRounds,
                 "verification rounds per size (fresh data each; 0 = no check, row says so)")
      ->capture_default_str();
  std::string collHelp, transportHelp;
  for (const CollDescriptor* d : allCollectives())
    collHelp += fmt::format("\n  {:<14} {}", d->name, d->summary);
  for (const auto& e : backendTable())
    transportHelp += fmt::format("\n  {:<6} {}{}", e.name, e.help, e.built ? "" : " [" + e.notBuilt + "]");
  app.add_option("--collective", colls, "comma-separated, or all:" + collHelp)->delimiter(',')->allow_extra_args(false)->capture_default_str();
  app.add_option("--transport", transports, "comma-separated, or auto (every backend this build has):" + transportHelp)
      ->delimiter(',')->allow_extra_args(false)->capture_default_str();
  app.add_option("--dtype", dtypes, "float32,float64,int32,float16,bfloat16")->delimiter(',')->allow_extra_args(false)->capture_default_str();
  std::vector<std::string> opNames{"sum"};
  app.add_option("-o,--op", opNames, "reduction operators of allreduce/reducescatter: sum,prod,min,max,avg or all "
                                     "(nccl-tests' -o; avg is NCCL's ncclAvg)")
      ->delimiter(',')->allow_extra_args(false)->capture_default_str();
  app.add_option("--root", o.root, "root rank of broadcast (nccl-tests' -r)")->capture_default_str();
  app.add_option("--placement", placement, "out, in or both (out-of-place / in-place, as nccl-tests)")
      ->capture_default_str();
  app.add_flag("--graph", o.coll.cudaGraph, "GPU backends: capture the timed batch in a CUDA graph and replay it");
  for (const auto& e : backendTable())
    if (e.addOptions) e.addOptions(app, o);
  app.add_flag("--rotate-buffers", o.coll.rotateBuffers,
               "nccl: each operation of a batch uses the next of several buffer copies (512 MiB in all), so "
               "none finds its data in the GPU's L2 cache, as nccl-tests shifts its buffers per iteration");
  app.add_flag("--gpu-staging", o.coll.gpuStaging,
               "tcp/verbs: keep the data in GPU memory and copy it through host memory before and after each "
               "operation (timed; rows labelled 'GPU memory staged via host'); replaces --gpu-memory");
  std::string timer = "gpu";
  int average = -1;
  app.add_option("--timer", timer,
                 "gpu: each rank times its own batch (CUDA events on its stream; steady clock on host backends); "
                 "host: nccl-tests' method (barrier, host clock until the stream is synchronised)")
      ->capture_default_str();
  app.add_option("-a,--average", average,
                 "how a batch's time is combined over ranks, nccl-tests' codes: 0 rank 0, 1 average, 2 minimum, "
                 "3 maximum (default: 3 with --timer gpu, 1 with --timer host)");
  app.add_option("--repeat", o.runner.repeat,
                 "timed batches per size; the row holds their median, min and max (0 = auto: 3, fewer once a "
                 "size's batches took 2 s; --benchmark_repetitions=N means the same)")
      ->capture_default_str();
  app.add_flag("--per-op", o.runner.perOp,
               "one more batch timed operation by operation: p50/p99 latency columns (events on GPU backends)");
  std::vector<std::string> required;
  app.add_option("--require", required,
                 "tcp,mpi,verbs,nccl,cuda or gpu (= nccl or cuda): the run is 'partial' (exit 4), not passed, "
                 "unless each produced rows (the Slurm scripts require gpu when GPUs were requested)")
      ->delimiter(',');
  app.add_flag("--allow-single-rank", o.allowSingleRank,
               "run with 1 rank (busbw factor 0 for allreduce/allgather/reducescatter: no fabric is measured)");
  app.add_option("--timeout", timeoutS, "seconds any one batch may take before the run fails")->capture_default_str();
  app.add_option("--results-dir", o.resultsDir, "parent folder of results/<run-id>/")->capture_default_str();
  app.add_option("--run-id", o.runId, "result folder name (default: $SLURM_JOB_ID, else date-time-host)");
  app.add_flag("!--no-files", o.writeFiles, "print the table only; write no result folder");
  app.add_flag("--force", o.force, "run a sweep of more than " + std::to_string(kMaxRowsWithoutForce) +
                                      " rows per backend (refused without it: e.g. -i 1 -e 1M is a million rows)");
  app.add_flag("--list", o.list, "show which transports and collectives this build and machine can run, and why not");
  app.add_flag("--doctor", o.doctor,
               "check every node for the fabric pitfalls (GPU topology/P2P, GPUDirect RDMA, PCIe ACS/IOMMU/links, "
               "RDMA ports/GID/MTU/firmware, limits, versions, interface variables, reachability); table + doctor.json; "
               "exit 0 no fail, 1 a check failed");
  app.add_option("--fb-test-corrupt", corrupt, "TEST HOOK: RANK:INDEX corrupts one output element per check")
      ->group("");

  std::vector<std::string> rev(ours.rbegin(), ours.rend());
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    if (printHelp) std::cout << app.help();
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    throw ConfigError(e.what());
  }

  o.minBytes = sizeFlag("--minbytes", minB);
  o.maxBytes = sizeFlag("--maxbytes", maxB);
  o.stepBytes = sizeFlag("--stepbytes", stepB);
  // Validates, and counts the sizes without building a sweep of a billion entries.
  o.sweepSizes = sizeSweep(o.minBytes, o.maxBytes, o.stepFactor, o.stepBytes, kMaxRowsWithoutForce + 1).size();
  for (const auto& c : splitList("--counts", counts)) {
    std::size_t v = 0;
    auto [ptr, ec] = std::from_chars(c.data(), c.data() + c.size(), v);
    if (ec != std::errc() || ptr != c.data() + c.size())
      throw ConfigError("--counts: '" + c + "' is not an element count");
    o.counts.push_back(v);
  }
  if (o.runner.iters < 1) throw ConfigError(fmt::format("--iters must be >= 1 (got {})", o.runner.iters));
  if (o.runner.warmupIters < 0) throw ConfigError("--warmup must be >= 0");
  if (timer == "gpu") o.runner.timer = Timer::kGpu;
  else if (timer == "host") o.runner.timer = Timer::kHost;
  else throw ConfigError("unknown --timer '" + timer + "' (choose gpu or host)");
  if (average == -1) o.runner.rankTime = o.runner.timer == Timer::kHost ? RankTime::kAvg : RankTime::kMax;
  else if (average >= 0 && average <= 3) o.runner.rankTime = static_cast<RankTime>(average);
  else throw ConfigError(fmt::format("-a/--average must be 0 (rank 0), 1 (avg), 2 (min) or 3 (max) (got {})", average));
  if (o.runner.repeat < 0) throw ConfigError(fmt::format("--repeat must be >= 0 (got {})", o.runner.repeat));
  if (gbRepetitions > 0) {
    if (o.runner.repeat > 0 && o.runner.repeat != gbRepetitions)
      throw ConfigError(fmt::format("--repeat {} and --benchmark_repetitions={} disagree (they mean the same)",
                                    o.runner.repeat, gbRepetitions));
    o.runner.repeat = gbRepetitions;
  }
  if (o.runner.checkRounds < 0) throw ConfigError("--check must be >= 0");
  if (timeoutS < 1) throw ConfigError("--timeout must be >= 1 second");
  o.runner.timeout = std::chrono::seconds(timeoutS);

  for (const auto& c : splitList("--collective", colls)) {
    if (c == "all") {
      o.colls = allCollKinds();
      continue;
    }
    auto k = parseCollKind(c);
    if (!k) {
      std::string names;
      for (const CollDescriptor* d : allCollectives()) names += std::string(d->name) + ", ";
      throw ConfigError("unknown collective '" + c + "' (choose " + names + "or all)");
    }
    o.colls.push_back(*k);
  }
  for (const auto& t : splitList("--transport", transports)) {
    if (t == "auto") {
      o.transportsAuto = true;
      continue;
    }
    bool known = false;
    for (const auto& k : knownTransports()) known = known || k == t;
    if (!known) throw ConfigError(fmt::format("unknown transport '{}' (choose {} or auto)", t, fmt::join(knownTransports(), ", ")));
    o.transports.push_back(t);
    o.namedTransports.push_back(t);
  }
  for (const auto& r : splitList("--require", required)) {
    bool known = r == "gpu";
    for (const auto& k : knownTransports()) known = known || k == r;
    if (!known) throw ConfigError(fmt::format("--require: unknown '{}' (choose {} or gpu)", r, fmt::join(knownTransports(), ", ")));
    o.required.push_back(r);
  }
  if (o.transportsAuto) o.transports = knownTransports();
  for (const auto& d : splitList("--dtype", dtypes)) {
    auto t = parseDataType(d);
    if (!t) throw ConfigError("unknown dtype '" + d + "' (choose float32, float64, int32, float16, bfloat16)");
    o.dtypes.push_back(*t);
  }
  for (const auto& name : splitList("-o/--op", opNames)) {
    if (name == "all") {
      o.ops = allReduceOps();
      continue;
    }
    auto op = parseReduceOp(name);
    if (!op) throw ConfigError("unknown -o/--op '" + name + "' (choose sum, prod, min, max, avg or all)");
    if (std::find(o.ops.begin(), o.ops.end(), *op) == o.ops.end()) o.ops.push_back(*op);
  }
  if (o.root < 0) throw ConfigError(fmt::format("--root must be >= 0 (got {})", o.root));
  if (placement == "out") o.placements = {false};
  else if (placement == "in") o.placements = {true};
  else if (placement == "both") o.placements = {false, true};
  else throw ConfigError("unknown --placement '" + placement + "' (choose out, in or both)");
  for (const auto& e : backendTable())
    if (e.validate) e.validate(o);
  if (!o.runId.empty() && (o.runId.find('/') != std::string::npos || o.runId == "." || o.runId == ".."))
    throw ConfigError("--run-id '" + o.runId + "' must be a plain folder name");
  for (const auto* v : {&o.runId, &o.resultsDir})
    for (unsigned char ch : *v)
      if (ch < 0x20 || ch == 0x7f)
        throw ConfigError(std::string(v == &o.runId ? "--run-id" : "--results-dir") +
                          " contains a control character (a newline, tab, ...): give a plain name");
  if (o.resultsDir.empty()) throw ConfigError("--results-dir is empty (give a folder, or --no-files)");
  if (o.doctor && o.list) throw ConfigError("--doctor and --list are two different commands: give one");
  if (!corrupt.empty()) {
    auto colon = corrupt.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      o.runner.corrupt = std::make_pair(std::stoi(corrupt.substr(0, colon)),
                                        static_cast<std::size_t>(std::stoull(corrupt.substr(colon + 1))));
    } catch (const std::exception&) {
      throw ConfigError("--fb-test-corrupt wants RANK:INDEX (got '" + corrupt + "')");
    }
  }
  validateHostAlgoEnv();  // FB_HOST_ALGO, FB_PROGRESS: refused here, before any communication
  validateProgressEnv();
  // Staging through host memory replaces GPUDirect: the NIC sees host memory only.
  if (o.coll.gpuStaging) o.coll.transport.gpuDirect = false;
  // Everything that changes what is measured, normalized, for the cross-rank comparison.
  o.canonical = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
                            timer, static_cast<int>(o.runner.rankTime), o.runner.repeat, o.runner.perOp,
                            fmt::format("{}/{}", o.allowSingleRank, fmt::join(o.required, ",")), o.minBytes, o.maxBytes,
                            o.stepFactor, o.stepBytes, o.runner.iters, o.runner.warmupIters, o.runner.checkRounds,
                            fmt::join(colls, ","), fmt::join(o.transports, ","), fmt::join(dtypes, ","), placement,
                            o.coll.path, o.coll.cudaGraph, timeoutS, o.runId, corrupt, o.coll.transport.gidIndex,
                            o.coll.transport.verbsDevice, fmt::join(o.benchmarkArgs, " "), fmt::join(o.counts, ","),
                            o.coll.gpuStaging);
  // ... and every other flag: ranks started with different flags (an MPMD launch) are refused
  // whatever the flag, --list included.
  o.canonical += fmt::format("|{}|{}|{}|{}|{}|{}|{}", o.list, o.writeFiles, o.resultsDir, o.force,
                             o.coll.transport.tcpInterface, o.coll.transport.verbsPort, o.coll.transport.gpuDirect);
  o.canonical += fmt::format("|doctor={}|rotate={}", o.doctor, o.coll.rotateBuffers);
  o.canonical += fmt::format("|ops={}|root={}", fmt::join(opNames, ","), o.root);
  return o;
}

}  // namespace fb

#include "app/options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <iostream>
#include <sstream>

#include "app/backends.h"
#include "collectives/host_algorithms.h"
#include "core/error.h"
#include "core/timer_names.h"
#include "core/units.h"
#include "model/host_choice.h"
#include "topology/nccl_attest.h"
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

namespace {

// nccl-tests flags fabricbench does not take, each with what to use instead (one line, exit 2).
struct Unsupported {
  const char* names;  // CLI11 names
  const char* what;   // the message after "nccl-tests' <flag> is not supported: "
};
const Unsupported kUnsupported[] = {
    {"-t,--nthreads", "fabricbench runs one rank per process and one GPU per rank: start more ranks (mpirun -np N)"},
    {"-g,--ngpus", "fabricbench uses one GPU per rank: start one rank per GPU (mpirun -np <GPUs>)"},
    {"-m,--agg_iters", "operations are not aggregated into groups: use -n/--iters for more operations per timed batch"},
    {"-N,--run_cycles", "use --repeat R (timed batches per size, the row gives their median, min and max)"},
    {"-p,--parallel_init", "each backend sets up its own connections or communicator: there is nothing to choose"},
    {"-z,--blocking", "every backend's timed batch is asynchronous, and the batch ends when the data has arrived"},
    {"-y,--stream_null", "each rank uses its own CUDA stream (the default stream is never used)"},
    {"-C,--report_cputime", "use --timer nccl-tests for nccl-tests' host-clock timing"},
    {"-R,--local_register", "each backend registers its buffers as it needs (NCCL, verbs)"},
    {"-J,--output_file", "results go to <results-dir>/<run-id>/ (run.json, table.csv); "
                         "Google Benchmark JSON with --benchmark_out=FILE"},
};

const char* kHelpFooter = R"(
nccl-tests' flags -b -e -f -i -n -w -c -d -o -a -G -T -r mean what they mean there (-d also takes
nccl-tests' type names: float, half, double, int, bfloat16, all). A repeated flag: the last one wins
(lists such as --transport and --collective add up).

Examples:
  mpirun -np 2 fabricbench --transport tcp,mpi -b 8 -e 64M -f 2
  mpirun -np 8 fabricbench --transport nccl -d half -b 8 -e 8G -n 40 -w 10
  mpirun -np 2 fabricbench --list          # what this build and machine can run, and why not
  mpirun -np 2 fabricbench --collective allreduce --benchmark_out=ar.json   # Google Benchmark JSON too
  sbatch slurm/allreduce.sbatch            # under Slurm (results/<job>.<step>/)

Results: <results-dir>/<run-id>/ {table.csv, run.json, report.md}. An existing run id is never
overwritten: the default one gets a suffix (-2, -3...), an explicit --run-id that exists is
refused unless --resume (measure only the missing rows) or --overwrite.

Exit codes: 0 every row ran and passed its data check, and the fabric asked for was measured;
1 wrong data, a lost peer, a time-out or a path that was not the one forced; 2 bad input (one
line, before any communication, no result folder); 3 nothing ran (every backend skipped or
filtered out); 4 partial (every row right, but a named, --require'd or GPU path was not measured).
)";

}  // namespace

std::optional<Options> parseOptions(const std::vector<std::string>& argsIn, bool printHelp) {
  Options o;
  std::vector<std::string> ours = argsIn;
  o.gb = takeBenchmarkFlags(ours);

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

  CLI::App app{"fabricbench: AllReduce / AllGather / ReduceScatter / P2P ring / AllToAll / Broadcast over NCCL, raw TCP, verbs, "
               "CUDA peer memory and MPI, with nccl-tests' definitions and flags.\nLaunch with mpirun/srun "
               "(one rank per GPU). Google Benchmark's --benchmark_filter, _list_tests, _format, _out, "
               "_out_format, _repetitions, _time_unit and _context are honoured; other --benchmark_* flags are "
               "refused.",
               "fabricbench"};
  app.footer(kHelpFooter);
  std::string minB = "8", maxB = "64M", stepB = "0";
  std::vector<std::string> colls{"all"}, transports{"auto"}, dtypes{"float32"};
  std::string placement = "both";
  int timeoutS = 45;
  int graphLaunches = -1;
  bool showVersion = false;
  std::string corrupt;
  app.add_option("-b,--minbytes", minB, "smallest size (8, 1K, 64M, 8G; K = 1024)")->capture_default_str();
  app.add_option("-e,--maxbytes", maxB, "largest size")->capture_default_str();
  app.add_option("-f,--stepfactor", o.stepFactor, "multiply the size by this between rows")->capture_default_str();
  app.add_option("-i,--stepbytes", stepB, "add this many bytes between rows instead of -f");
  std::vector<std::string> counts;
  app.add_option("--counts", counts, "explicit element counts per rank (e.g. 0,1,3,1000003) instead of -b/-e/-f")
      ->delimiter(',')->allow_extra_args(false);
  app.add_option("-n,--iters", o.runner.iters, "timed operations per size")->capture_default_str();
  app.add_option("-w,--warmup,--warmup_iters", o.runner.warmupIters, "untimed operations per size first")
      ->capture_default_str();
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
  app.add_option("-d,--dtype,--datatype", dtypes,
                 "float32,float64,int32,float16,bfloat16 or all (nccl-tests' float, double, int, half too)")
      ->delimiter(',')->allow_extra_args(false)->capture_default_str();
  std::vector<std::string> opNames{"sum"};
  app.add_option("-o,--op", opNames, "reduction operators of allreduce/reducescatter: sum,prod,min,max,avg or all "
                                     "(nccl-tests' -o; avg is NCCL's ncclAvg)")
      ->delimiter(',')->allow_extra_args(false)->capture_default_str();
  app.add_option("-r,--root", o.root, "root rank of broadcast (nccl-tests' -r)")->capture_default_str();
  app.add_option("--placement", placement, "out, in or both (out-of-place / in-place, as nccl-tests)")
      ->capture_default_str();
  app.add_flag("--graph", o.coll.cudaGraph, "GPU backends: capture the timed batch in a CUDA graph and replay it");
  app.add_option("-G,--cudagraph", graphLaunches,
                 "nccl-tests' -G: 1 = --graph (the timed batch of -n operations launched as one graph), 0 = off");
  for (const auto& e : backendTable())
    if (e.addOptions) e.addOptions(app, o);
  bool reuseBuffers = false;
  app.add_flag("--rotate-buffers", o.coll.rotateBuffers,
               "nccl: move each operation's buffers by its size inside a buffer as large as the sweep's "
               "largest size (-e), as nccl-tests does, so no operation finds its data in the GPU's L2 cache "
               "(the default, with either timer)");
  app.add_flag("--reuse-buffers", reuseBuffers,
               "nccl: one buffer for every operation instead (cache-warm below the GPU's L2 size: faster than "
               "nccl-tests there; the rows say so)");
  app.add_flag("--gpu-staging", o.coll.gpuStaging,
               "tcp/verbs: keep the data in GPU memory and copy it through host memory before and after each "
               "operation (timed; rows labelled 'GPU memory staged via host')");
  std::string timer(kTimerRank);
  int average = -1;
  app.add_option("--timer", timer,
                 "rank: each rank's own clock around its batch (CUDA events on its stream; the steady clock on host "
                 "backends); nccl-tests: nccl-tests' host clock (barrier, then until the stream is synchronised). "
                 "The old names gpu and host mean the same")
      ->capture_default_str();
  app.add_option("-a,--average", average,
                 "how a batch's time is combined over ranks, nccl-tests' codes: 0 rank 0, 1 average, 2 minimum, "
                 "3 maximum (default: 3 with --timer rank, 1 with --timer nccl-tests)");
  app.add_option("--repeat", o.runner.repeat,
                 "timed batches per size; the row holds their median, min and max (0 = auto: 3, fewer once a "
                 "size's batches took 2 s; --benchmark_repetitions=N means the same)")
      ->capture_default_str();
  app.add_flag("--per-op", o.runner.perOp,
               "one more batch timed operation by operation: p50/p99 latency columns (events on GPU backends)");
  std::vector<std::string> required;
  app.add_option("--require", required,
                 "tcp,mpi,verbs (= rdma),nccl,cuda or gpu (= nccl or cuda): the run is 'partial' (exit 4), not passed, "
                 "unless each produced rows (the Slurm scripts require gpu when GPUs were requested); with --doctor: "
                 "every node must have the device (a GPU, an active RDMA port), else the doctor fails (exit 1). "
                 "ib, roce, gdr, nvlink, rails=N: what NCCL's own log must attest (inter-node transport InfiniBand / "
                 "RoCE, GPUDirect RDMA on every NET connection, P2P over NVLink inside a node, at least N distinct "
                 "NICs per node); one that does not hold fails the run (exit 4) with the reason, before measuring")
      ->delimiter(',');
  app.add_flag("--allow-single-rank", o.allowSingleRank,
               "run with 1 rank (no link is crossed: busbw 0 for every collective, no plateau or headline)");
  app.add_option("-T,--timeout", timeoutS,
                 "seconds a batch may take beyond what its size needs (the deadline grows with size x operations)")
      ->capture_default_str();
  app.add_option("--results-dir", o.resultsDir, "parent folder of results/<run-id>/")->capture_default_str();
  app.add_option("--run-id", o.runId,
                 "result folder name (default: <job>.<step> under Slurm, else date-time-host; "
                 "-2, -3... appended when taken)");
  app.add_flag("--resume", o.resume, "with an existing --run-id: keep its rows, measure only the missing ones");
  app.add_flag("--overwrite", o.overwrite, "with an existing --run-id: delete that folder and start again");
  app.add_flag("!--no-files", o.writeFiles, "print the table only; write no result folder");
  app.add_flag("--wide", o.wide,
               "console: one row per placement with every column (t_min/t_max, p50/p99), over 120 columns; "
               "default: out-of-place | in-place side by side, the path once per group, 120 columns");
  app.add_option("--progress", o.progressSeconds,
                 "seconds between 'k/N rows, elapsed, ETA' lines on stderr (0 = off; a bar when stderr is a terminal)")
      ->capture_default_str();
  app.add_flag("--force", o.force, "run a sweep of more than " + std::to_string(kMaxRowsWithoutForce) +
                                      " rows per backend (refused without it: e.g. -i 1 -e 1M is a million rows)");
  app.add_flag("--list", o.list, "show which transports and collectives this build and machine can run, and why not");
  app.add_flag("--doctor", o.doctor,
               "check every node for the fabric pitfalls (GPU topology/P2P, GPUDirect RDMA, PCIe ACS/IOMMU/links, "
               "RDMA ports/GID/MTU/firmware, limits, versions, interface variables, reachability); table + doctor.json; "
               "exit 0 no fail, 1 a check failed");
  std::string accBw = std::to_string(o.acc.bwBytes), accLat = std::to_string(o.acc.latBytes);
  std::vector<std::string> accPaths = o.acc.paths;
  app.add_flag("--accept", o.accept,
               "acceptance of the whole allocation: the doctor on every node, every node pair (circle method) per "
               "path, then the collectives as a normal run; verdicts against the line rate and --expect; "
               "acceptance.json, report.md, evidence.json; exit 0 accepted, 1 fails, 2 bad input, 4 partial "
               "(doc/acceptance.md)");
  app.add_option("--expect", o.acc.expectFile,
                 "--accept: expectation file (fabricbench-expect/1 JSON: min GB/s and max latency per path, "
                 "collective and size), e.g. written by --accept-baseline");
  app.add_option("--accept-floor", o.acc.floor, "--accept: a pair's bandwidth must reach this fraction of the line rate, where known")
      ->capture_default_str();
  app.add_option("--accept-paths", accPaths, fmt::format("--accept: pair-test paths, from {} (absent ones are skipped "
                                                         "with the reason; --require makes one mandatory: exit 4)",
                                                         fmt::join(acceptPathNames(), ",")))
      ->delimiter(',')->allow_extra_args(false)->capture_default_str();
  app.add_option("--accept-bw-bytes", accBw, "--accept: the pair bandwidth size")->capture_default_str();
  app.add_option("--accept-lat-bytes", accLat, "--accept: the pair latency size")->capture_default_str();
  app.add_option("--accept-bw-iters", o.acc.bwIters, "--accept: timed exchanges per pair at the bandwidth size")->capture_default_str();
  app.add_option("--accept-lat-iters", o.acc.latIters, "--accept: timed round trips per pair at the latency size")->capture_default_str();
  app.add_option("--accept-retests", o.acc.retests, "--accept: rounds re-testing the slow pairs before the verdict")->capture_default_str();
  app.add_flag("--accept-ranks-as-nodes", o.acc.ranksAsNodes,
               "--accept: treat every rank as a node (tests of the control plane on one host)");
  app.add_flag("--accept-no-collectives", o.acc.noCollectives, "--accept: leave out the collectives phase");
  app.add_flag("--accept-no-pairs", o.acc.noPairs, "--accept: leave out the pair test");
  app.add_option("--accept-baseline", o.acc.baselineDir,
                 "write RUN_DIR/expect.json from an acceptance run's folder (\"accept this as the baseline\"), for --expect");
  app.add_option("--accept-margin", o.acc.margin, "--accept-baseline: expected = margin x measured (latency: / margin)")
      ->capture_default_str();
  app.add_flag("--version", showVersion, "fabricbench's version, git revision, and the NCCL/CUDA/MPI/rdma-core it was built with");
  app.add_option("--fb-test-corrupt", corrupt, "TEST HOOK: RANK:INDEX corrupts one output element per check")
      ->group("");
  std::vector<std::pair<CLI::Option*, const Unsupported*>> unsupported;
  std::vector<std::string> unsupportedValues(std::size(kUnsupported));
  auto taken = [&app](const std::string& names) {  // a flag another part (the backend table) registers
    std::stringstream ss(names);
    for (std::string n; std::getline(ss, n, ',');)
      if (app.get_option_no_throw(n)) return true;
    return false;
  };
  for (std::size_t i = 0; i < std::size(kUnsupported); ++i)
    if (!taken(kUnsupported[i].names))
      unsupported.emplace_back(app.add_option(kUnsupported[i].names, unsupportedValues[i])->expected(0, 1)->group(""),
                               &kUnsupported[i]);
  // getopt's rule for a repeated flag: the last one wins (wrapper scripts append overrides).
  for (CLI::Option* opt : app.get_options())
    if (opt->get_items_expected_max() <= 1) opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  std::vector<std::string> rev(ours.rbegin(), ours.rend());
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    if (printHelp) std::cout << app.help();
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    throw ConfigError(e.what());
  }
  for (auto& [opt, u] : unsupported)
    if (opt->count() > 0) {
      std::string flag = u->names;
      throw ConfigError(fmt::format("nccl-tests' {} is not supported: {}", flag.substr(0, flag.find(',')) + "/" +
                                                                              flag.substr(flag.find(',') + 1),
                                    u->what));
    }
  if (showVersion) {
    if (printHelp) std::cout << versionText();
    return std::nullopt;
  }
  if (graphLaunches > 1)
    throw ConfigError(fmt::format("-G {}: fabricbench launches the captured batch once (-G 1 = --graph); "
                                  "use -n for more operations per graph", graphLaunches));
  if (graphLaunches < -1) throw ConfigError(fmt::format("-G {}: expected 0 or 1", graphLaunches));
  if (graphLaunches >= 0) o.coll.cudaGraph = o.coll.cudaGraph || graphLaunches == 1;
  o.reduceOp = fmt::format("{}", fmt::join(opNames, ","));
  if (o.resume && o.overwrite) throw ConfigError("--resume and --overwrite exclude each other");
  if ((o.resume || o.overwrite) && o.runId.empty())
    throw ConfigError(std::string(o.resume ? "--resume" : "--overwrite") + " needs the --run-id of the run");
  if (!(o.progressSeconds >= 0) || o.progressSeconds > 86400)
    throw ConfigError(fmt::format("--progress {}: expected seconds between 0 (off) and 86400", o.progressSeconds));
  if (o.gb.format != "console" && o.gb.listTests)
    throw ConfigError("--benchmark_list_tests prints names only: leave out --benchmark_format");

  o.minBytes = sizeFlag("--minbytes", minB);
  o.maxBytes = sizeFlag("--maxbytes", maxB);
  o.coll.rotateSpan = o.maxBytes;  // nccl-tests' maxbytes: the extent of --rotate-buffers (never less than a size)
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
  auto timerFlag = parseTimerFlag(timer);
  if (!timerFlag) throw ConfigError("unknown --timer '" + timer + "' (choose rank or nccl-tests)");
  o.runner.timer = *timerFlag == kTimerNcclTests ? Timer::kNcclTests : Timer::kRank;
  // Buffers move as nccl-tests moves them (no operation finds its data in the GPU's L2), with
  // either timer, unless --reuse-buffers asks for one cache-warm buffer.
  if (o.coll.rotateBuffers && reuseBuffers) throw ConfigError("--rotate-buffers and --reuse-buffers exclude each other");
  o.coll.rotateBuffers = !reuseBuffers;
  o.coll.rotateOps = std::max(o.runner.iters, o.runner.warmupIters);
  if (average == -1) o.runner.rankTime = o.runner.timer == Timer::kNcclTests ? RankTime::kAvg : RankTime::kMax;
  else if (average >= 0 && average <= 3) o.runner.rankTime = static_cast<RankTime>(average);
  else throw ConfigError(fmt::format("-a/--average must be 0 (rank 0), 1 (avg), 2 (min) or 3 (max) (got {})", average));
  if (o.runner.repeat < 0) throw ConfigError(fmt::format("--repeat must be >= 0 (got {})", o.runner.repeat));
  // Google Benchmark's repetitions are the suite's own (--repeat): separate timed batches of the
  // same row, which holds their median and spread.
  if (o.gb.repetitions > 0) {
    if (o.runner.repeat > 0 && o.runner.repeat != o.gb.repetitions)
      throw ConfigError(fmt::format("--repeat {} and --benchmark_repetitions={} disagree (they mean the same)",
                                    o.runner.repeat, o.gb.repetitions));
    o.runner.repeat = o.gb.repetitions;
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
  for (auto r : splitList("--require", required)) {
    // Attestations of NCCL's run (the row fails with exit 4 and the reason when one does not hold).
    if (topo::isAttestRequirement(r)) {
      if (auto why = topo::requirementFormError(r); !why.empty()) throw ConfigError(why);
      o.coll.require.push_back(r);
      continue;
    }
    if (r == "rdma") r = "verbs";  // the device (--doctor) and the path (a run) have one name
    bool known = r == "gpu";
    for (const auto& k : knownTransports()) known = known || k == r;
    if (!known)
      throw ConfigError(fmt::format("--require: unknown '{}' (choose {}, gpu, or of NCCL's attestation ib, roce, gdr, "
                                    "nvlink, rails=N)", r, fmt::join(knownTransports(), ", ")));
    o.required.push_back(r);
  }
  if (o.transportsAuto) o.transports = knownTransports();
  for (const auto& d : splitList("--dtype", dtypes)) {
    if (d == "all") {
      o.dtypes = allDataTypes();
      continue;
    }
    auto t = parseDataType(d);
    if (!t)
      throw ConfigError("unknown dtype '" + d + "' (choose float32/float, float64/double, int32/int, float16/half, "
                        "bfloat16 or all)");
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
  if (int cmds = int(o.doctor) + int(o.list) + int(o.accept) + int(!o.acc.baselineDir.empty()); cmds > 1)
    throw ConfigError("--doctor, --list, --accept and --accept-baseline are different commands: give one");
  o.acc.paths.clear();
  for (const auto& p : splitList("--accept-paths", accPaths)) {
    if (const auto known = acceptPathNames(); std::find(known.begin(), known.end(), p) == known.end())
      throw ConfigError(fmt::format("--accept-paths: unknown path '{}' (choose {})", p, fmt::join(known, ", ")));
    if (std::find(o.acc.paths.begin(), o.acc.paths.end(), p) == o.acc.paths.end()) o.acc.paths.push_back(p);
  }
  o.acc.bwBytes = sizeFlag("--accept-bw-bytes", accBw);
  o.acc.latBytes = sizeFlag("--accept-lat-bytes", accLat);
  if (o.acc.bwBytes == 0 || o.acc.latBytes == 0 || o.acc.bwBytes > (std::size_t(1) << 30) || o.acc.latBytes > (std::size_t(1) << 30))
    throw ConfigError("--accept-bw-bytes/--accept-lat-bytes: expected 1 byte to 1G");
  if (!(o.acc.floor >= 0 && o.acc.floor <= 1)) throw ConfigError(fmt::format("--accept-floor {}: expected a fraction 0..1", o.acc.floor));
  if (o.acc.bwIters < 1 || o.acc.latIters < 1 || o.acc.retests < 0)
    throw ConfigError("--accept-bw-iters/--accept-lat-iters must be >= 1, --accept-retests >= 0");
  if (!(o.acc.margin > 0 && o.acc.margin <= 1)) throw ConfigError(fmt::format("--accept-margin {}: expected (0, 1]", o.acc.margin));
  if (!o.acc.expectFile.empty() && !o.accept) throw ConfigError("--expect is read by --accept only");
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
  model::validateHostLinksEnv();
  validateProgressEnv();
  // Staging through host memory replaces GPUDirect: the NIC sees host memory only.
  if (o.coll.gpuStaging) o.coll.transport.gpuDirect = false;
  // Everything that changes what is measured, normalized, for the cross-rank comparison.
  o.canonical = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
                            timerName(o.runner.timer), static_cast<int>(o.runner.rankTime), o.runner.repeat, o.runner.perOp,
                            fmt::format("{}/{}", o.allowSingleRank, fmt::join(o.required, ",")), o.minBytes, o.maxBytes,
                            o.stepFactor, o.stepBytes, o.runner.iters, o.runner.warmupIters, o.runner.checkRounds,
                            fmt::join(colls, ","), fmt::join(o.transports, ","), fmt::join(dtypes, ","), placement,
                            o.coll.path, o.coll.cudaGraph, timeoutS, o.runId, corrupt, o.coll.transport.gidIndex,
                            o.coll.transport.verbsDevice, fmt::join(o.gb.given, " "), fmt::join(o.counts, ","),
                            o.coll.gpuStaging) +
                fmt::format("|{}|{}|{}|{}", o.resume, o.overwrite, o.reduceOp, o.progressSeconds);
  // ... and every other flag: ranks started with different flags (an MPMD launch) are refused
  // whatever the flag, --list included.
  o.canonical += fmt::format("|{}|{}|{}|{}|{}|{}|{}", o.list, o.writeFiles, o.resultsDir, o.force,
                             o.coll.transport.tcpInterface, o.coll.transport.verbsPort, o.coll.transport.gpuDirect);
  o.canonical += fmt::format("|doctor={}|rotate={}", o.doctor, o.coll.rotateBuffers);
  o.canonical += fmt::format("|ops={}|root={}", fmt::join(opNames, ","), o.root);
  o.canonical += fmt::format("|accept={}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", o.accept, fmt::join(o.acc.paths, ","),
                             o.acc.expectFile, o.acc.floor, o.acc.bwBytes, o.acc.latBytes, o.acc.bwIters, o.acc.latIters,
                             o.acc.retests, o.acc.ranksAsNodes, o.acc.noCollectives, o.acc.noPairs, o.acc.baselineDir,
                             o.acc.margin, 0);
  return o;
}

}  // namespace fb

#include "app/options_flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sstream>

#include "app/backends.h"
#include "collectives/spec.h"

namespace fb {
namespace {

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

// Sizes, counts and operations per size: -b -e -f -i --counts -n -w -c.
void addSweepOptions(CLI::App& app, Options& o, RawFlags& flags) {
  app.add_option("-b,--minbytes", flags.minB, "smallest size (8, 1K, 64M, 8G; K = 1024)")->capture_default_str();
  app.add_option("-e,--maxbytes", flags.maxB, "largest size")->capture_default_str();
  app.add_option("-f,--stepfactor", o.stepFactor, "multiply the size by this between rows")->capture_default_str();
  app.add_option("-i,--stepbytes", flags.stepB, "add this many bytes between rows instead of -f");
  app.add_option("--counts", flags.counts, "explicit element counts per rank (e.g. 0,1,3,1000003) instead of -b/-e/-f")
      ->delimiter(',')->allow_extra_args(false);
  app.add_option("-n,--iters", o.runner.iters, "timed operations per size")->capture_default_str();
  app.add_option("-w,--warmup,--warmup_iters", o.runner.warmupIters, "untimed operations per size first")
      ->capture_default_str();
  app.add_option("-c,--check", o.runner.checkRounds,
                 "verification rounds per size (fresh data each; 0 = no check, row says so)")
      ->capture_default_str();
}

// What is measured: collectives, backends (and their own options), types, operators, root,
// placement, graphs, buffers.
void addSelectionOptions(CLI::App& app, Options& o, RawFlags& flags) {
  std::string collHelp, transportHelp;
  for (const CollDescriptor* d : allCollectives())
    collHelp += fmt::format("\n  {:<14} {}", d->name, d->summary);
  for (const auto& e : backendTable())
    transportHelp += fmt::format("\n  {:<6} {}{}", e.name, e.help, e.built ? "" : " [" + e.notBuilt + "]");
  app.add_option("--collective", flags.colls, "comma-separated, or all:" + collHelp)->delimiter(',')->allow_extra_args(false)->capture_default_str();
  app.add_option("--transport", flags.transports, "comma-separated, or auto (every backend this build has):" + transportHelp)
      ->delimiter(',')->allow_extra_args(false)->capture_default_str();
  app.add_option("-d,--dtype,--datatype", flags.dtypes,
                 "float32,float64,int32,float16,bfloat16 or all (nccl-tests' float, double, int, half too)")
      ->delimiter(',')->allow_extra_args(false)->capture_default_str();
  app.add_option("-o,--op", flags.opNames, "reduction operators of allreduce/reducescatter: sum,prod,min,max,avg or all "
                                     "(nccl-tests' -o; avg is NCCL's ncclAvg)")
      ->delimiter(',')->allow_extra_args(false)->capture_default_str();
  app.add_option("-r,--root", o.root, "root rank of broadcast (nccl-tests' -r)")->capture_default_str();
  app.add_option("--placement", flags.placement, "out, in or both (out-of-place / in-place, as nccl-tests)")
      ->capture_default_str();
  app.add_flag("--graph", o.coll.cudaGraph, "GPU backends: capture the timed batch in a CUDA graph and replay it");
  app.add_option("-G,--cudagraph", flags.graphLaunches,
                 "nccl-tests' -G: 1 = --graph (the timed batch of -n operations launched as one graph), 0 = off");
  for (const auto& e : backendTable())
    if (e.addOptions) e.addOptions(app, o);
  app.add_flag("--rotate-buffers", o.coll.rotateBuffers,
               "nccl: move each operation's buffers by its size inside a buffer as large as the sweep's "
               "largest size (-e), as nccl-tests does, so no operation finds its data in the GPU's L2 cache "
               "(the default, with either timer)");
  app.add_flag("--reuse-buffers", flags.reuseBuffers,
               "nccl: one buffer for every operation instead (cache-warm below the GPU's L2 size: faster than "
               "nccl-tests there; the rows say so)");
  app.add_flag("--gpu-staging", o.coll.gpuStaging,
               "tcp/verbs: keep the data in GPU memory and copy it through host memory before and after each "
               "operation (timed; rows labelled 'GPU memory staged via host')");
}

// How a row is timed and judged: timer, average, repeat, per-op, require, single rank, time-out.
void addTimingOptions(CLI::App& app, Options& o, RawFlags& flags) {
  app.add_option("--timer", flags.timer,
                 "rank: each rank's own clock around its batch (CUDA events on its stream; the steady clock on host "
                 "backends); nccl-tests: nccl-tests' host clock (barrier, then until the stream is synchronised). "
                 "The old names gpu and host mean the same")
      ->capture_default_str();
  app.add_option("-a,--average", flags.average,
                 "how a batch's time is combined over ranks, nccl-tests' codes: 0 rank 0, 1 average, 2 minimum, "
                 "3 maximum (default: 3 with --timer rank, 1 with --timer nccl-tests)");
  app.add_option("--repeat", o.runner.repeat,
                 "timed batches per size; the row holds their median, min and max (0 = auto: 3, fewer once a "
                 "size's batches took 2 s; --benchmark_repetitions=N means the same)")
      ->capture_default_str();
  app.add_flag("--per-op", o.runner.perOp,
               "one more batch timed operation by operation: p50/p99 latency columns (events on GPU backends; "
               "with --timer nccl-tests in nccl-tests' -I loop: a clock read and cudaSetDevice before each event)");
  app.add_option("--require", flags.required,
                 "tcp,mpi,verbs (= rdma),nccl,cuda or gpu (= nccl or cuda): the run is 'partial' (exit 4), not passed, "
                 "unless each produced rows (the Slurm scripts require gpu when GPUs were requested); with --doctor: "
                 "every node must have the device (a GPU, an active RDMA port), else the doctor fails (exit 1). "
                 "ib, roce, gdr, nvlink, rails=N: what NCCL's own log must attest (inter-node transport InfiniBand / "
                 "RoCE, GPUDirect RDMA on every NET connection, P2P over NVLink inside a node, at least N distinct "
                 "NICs per node); one that does not hold fails the run (exit 4) with the reason, before measuring")
      ->delimiter(',');
  app.add_flag("--allow-single-rank", o.allowSingleRank,
               "run with 1 rank (no link is crossed: busbw 0 for every collective, no plateau or headline)");
  app.add_option("-T,--timeout", flags.timeoutS,
                 "seconds a batch may take beyond what its size needs (the deadline grows with size x operations)")
      ->capture_default_str();
}

// The result folder, the console and the other commands (--list, --doctor).
void addRunOptions(CLI::App& app, Options& o) {
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
}

// --accept and --accept-baseline.
void addAcceptOptions(CLI::App& app, Options& o, RawFlags& flags) {
  flags.accBw = std::to_string(o.acc.bwBytes);
  flags.accLat = std::to_string(o.acc.latBytes);
  flags.accPaths = o.acc.paths;
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
  app.add_option("--accept-paths", flags.accPaths, fmt::format("--accept: pair-test paths, from {} (absent ones are skipped "
                                                         "with the reason; --require makes one mandatory: exit 4)",
                                                         fmt::join(acceptPathNames(), ",")))
      ->delimiter(',')->allow_extra_args(false)->capture_default_str();
  app.add_option("--accept-bw-bytes", flags.accBw, "--accept: the pair bandwidth size")->capture_default_str();
  app.add_option("--accept-lat-bytes", flags.accLat, "--accept: the pair latency size")->capture_default_str();
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
}

// --version, the test hook, nccl-tests' flags we refuse, and the last-one-wins rule.
void addOtherOptions(CLI::App& app, RawFlags& flags) {
  app.add_flag("--version", flags.showVersion, "fabricbench's version, git revision, and the NCCL/CUDA/MPI/rdma-core it was built with");
  app.add_option("--fb-test-corrupt", flags.corrupt, "TEST HOOK: RANK:INDEX corrupts one output element per check")
      ->group("");
  auto taken = [&app](const std::string& names) {  // a flag another part (the backend table) registers
    std::stringstream ss(names);
    for (std::string n; std::getline(ss, n, ',');)
      if (app.get_option_no_throw(n)) return true;
    return false;
  };
  flags.unsupportedValues.resize(std::size(kUnsupported));  // before options bind to its elements
  for (std::size_t i = 0; i < std::size(kUnsupported); ++i)
    if (!taken(kUnsupported[i].names))
      flags.unsupported.emplace_back(app.add_option(kUnsupported[i].names, flags.unsupportedValues[i])->expected(0, 1)->group(""),
                               &kUnsupported[i]);
  // getopt's rule for a repeated flag: the last one wins (wrapper scripts append overrides).
  for (CLI::Option* opt : app.get_options())
    if (opt->get_items_expected_max() <= 1) opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

}  // namespace

void registerFlags(CLI::App& app, Options& o, RawFlags& flags) {
  app.footer(kHelpFooter);
  addSweepOptions(app, o, flags);
  addSelectionOptions(app, o, flags);
  addTimingOptions(app, o, flags);
  addRunOptions(app, o);
  addAcceptOptions(app, o, flags);
  addOtherOptions(app, flags);
}

}  // namespace fb

#include "app/options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <iostream>
#include <sstream>

#include "app/backends.h"
#include "app/options_flags.h"
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

// List flags: an empty element (--collective '', "a,,b", a lone ",") is refused here, before
// CLI11 drops it or takes the next flag as the value.
void refuseEmptyListElements(const std::vector<std::string>& ours) {
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
}

// ---- validation, in the order the errors are reported

// nccl-tests' flags fabricbench does not take: one line saying what to use instead.
void refuseUnsupported(const RawFlags& flags) {
  for (auto& [opt, u] : flags.unsupported)
    if (opt->count() > 0) {
      std::string flag = u->names;
      throw ConfigError(fmt::format("nccl-tests' {} is not supported: {}", flag.substr(0, flag.find(',')) + "/" +
                                                                              flag.substr(flag.find(',') + 1),
                                    u->what));
    }
}

// -G, the run folder's commands, --progress, the Google Benchmark format.
void validateRunFlags(Options& o, const RawFlags& flags) {
  if (flags.graphLaunches > 1)
    throw ConfigError(fmt::format("-G {}: fabricbench launches the captured batch once (-G 1 = --graph); "
                                  "use -n for more operations per graph", flags.graphLaunches));
  if (flags.graphLaunches < -1) throw ConfigError(fmt::format("-G {}: expected 0 or 1", flags.graphLaunches));
  if (flags.graphLaunches >= 0) o.coll.cudaGraph = o.coll.cudaGraph || flags.graphLaunches == 1;
  o.reduceOp = fmt::format("{}", fmt::join(flags.opNames, ","));
  if (o.resume && o.overwrite) throw ConfigError("--resume and --overwrite exclude each other");
  if ((o.resume || o.overwrite) && o.runId.empty())
    throw ConfigError(std::string(o.resume ? "--resume" : "--overwrite") + " needs the --run-id of the run");
  if (!(o.progressSeconds >= 0) || o.progressSeconds > 86400)
    throw ConfigError(fmt::format("--progress {}: expected seconds between 0 (off) and 86400", o.progressSeconds));
  if (o.gb.format != "console" && o.gb.listTests)
    throw ConfigError("--benchmark_list_tests prints names only: leave out --benchmark_format");
}

// -b/-e/-i into bytes, the sweep's size count, --counts.
void validateSweep(Options& o, const RawFlags& flags) {
  o.minBytes = sizeFlag("--minbytes", flags.minB);
  o.maxBytes = sizeFlag("--maxbytes", flags.maxB);
  o.coll.rotateSpan = o.maxBytes;  // nccl-tests' maxbytes: the extent of --rotate-buffers (never less than a size)
  o.stepBytes = sizeFlag("--stepbytes", flags.stepB);
  // Validates, and counts the sizes without building a sweep of a billion entries.
  o.sweepSizes = sizeSweep(o.minBytes, o.maxBytes, o.stepFactor, o.stepBytes, kMaxRowsWithoutForce + 1).size();
  for (const auto& c : splitList("--counts", flags.counts)) {
    std::size_t v = 0;
    auto [ptr, ec] = std::from_chars(c.data(), c.data() + c.size(), v);
    if (ec != std::errc() || ptr != c.data() + c.size())
      throw ConfigError("--counts: '" + c + "' is not an element count");
    o.counts.push_back(v);
  }
}

// Iterations, the timer and the buffers it implies, -a, --repeat, --check, --timeout.
void validateTiming(Options& o, const RawFlags& flags) {
  if (o.runner.iters < 1) throw ConfigError(fmt::format("--iters must be >= 1 (got {})", o.runner.iters));
  if (o.runner.warmupIters < 0) throw ConfigError("--warmup must be >= 0");
  auto timerFlag = parseTimerFlag(flags.timer);
  if (!timerFlag) throw ConfigError("unknown --timer '" + flags.timer + "' (choose rank or nccl-tests)");
  o.runner.timer = *timerFlag == kTimerNcclTests ? Timer::kNcclTests : Timer::kRank;
  o.coll.ncclTestsLoop = o.runner.timer == Timer::kNcclTests;
  // Buffers move as nccl-tests moves them (no operation finds its data in the GPU's L2), with
  // either timer, unless --reuse-buffers asks for one cache-warm buffer.
  if (o.coll.rotateBuffers && flags.reuseBuffers) throw ConfigError("--rotate-buffers and --reuse-buffers exclude each other");
  o.coll.rotateBuffers = !flags.reuseBuffers;
  o.coll.rotateOps = std::max(o.runner.iters, o.runner.warmupIters);
  if (flags.average == -1) o.runner.rankTime = o.runner.timer == Timer::kNcclTests ? RankTime::kAvg : RankTime::kMax;
  else if (flags.average >= 0 && flags.average <= 3) o.runner.rankTime = static_cast<RankTime>(flags.average);
  else throw ConfigError(fmt::format("-a/--average must be 0 (rank 0), 1 (avg), 2 (min) or 3 (max) (got {})", flags.average));
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
  if (flags.timeoutS < 1) throw ConfigError("--timeout must be >= 1 second");
  o.runner.timeout = std::chrono::seconds(flags.timeoutS);
}

// Collectives, transports, --require, types, operators, root, placement.
void validateSelection(Options& o, const RawFlags& flags) {
  for (const auto& c : splitList("--collective", flags.colls)) {
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
  for (const auto& t : splitList("--transport", flags.transports)) {
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
  for (auto r : splitList("--require", flags.required)) {
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
  for (const auto& d : splitList("--dtype", flags.dtypes)) {
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
  for (const auto& name : splitList("-o/--op", flags.opNames)) {
    if (name == "all") {
      o.ops = allReduceOps();
      continue;
    }
    auto op = parseReduceOp(name);
    if (!op) throw ConfigError("unknown -o/--op '" + name + "' (choose sum, prod, min, max, avg or all)");
    if (std::find(o.ops.begin(), o.ops.end(), *op) == o.ops.end()) o.ops.push_back(*op);
  }
  if (o.root < 0) throw ConfigError(fmt::format("--root must be >= 0 (got {})", o.root));
  if (flags.placement == "out") o.placements = {false};
  else if (flags.placement == "in") o.placements = {true};
  else if (flags.placement == "both") o.placements = {false, true};
  else throw ConfigError("unknown --placement '" + flags.placement + "' (choose out, in or both)");
}

// Each backend's own options, the result folder's names, one command at most.
void validateBackendsAndFolder(Options& o) {
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
}

// --accept's paths, sizes, floors and counts.
void validateAccept(Options& o, const RawFlags& flags) {
  o.acc.paths.clear();
  for (const auto& p : splitList("--accept-paths", flags.accPaths)) {
    if (const auto known = acceptPathNames(); std::find(known.begin(), known.end(), p) == known.end())
      throw ConfigError(fmt::format("--accept-paths: unknown path '{}' (choose {})", p, fmt::join(known, ", ")));
    if (std::find(o.acc.paths.begin(), o.acc.paths.end(), p) == o.acc.paths.end()) o.acc.paths.push_back(p);
  }
  o.acc.bwBytes = sizeFlag("--accept-bw-bytes", flags.accBw);
  o.acc.latBytes = sizeFlag("--accept-lat-bytes", flags.accLat);
  if (o.acc.bwBytes == 0 || o.acc.latBytes == 0 || o.acc.bwBytes > (std::size_t(1) << 30) || o.acc.latBytes > (std::size_t(1) << 30))
    throw ConfigError("--accept-bw-bytes/--accept-lat-bytes: expected 1 byte to 1G");
  if (!(o.acc.floor >= 0 && o.acc.floor <= 1)) throw ConfigError(fmt::format("--accept-floor {}: expected a fraction 0..1", o.acc.floor));
  if (o.acc.bwIters < 1 || o.acc.latIters < 1 || o.acc.retests < 0)
    throw ConfigError("--accept-bw-iters/--accept-lat-iters must be >= 1, --accept-retests >= 0");
  if (!(o.acc.margin > 0 && o.acc.margin <= 1)) throw ConfigError(fmt::format("--accept-margin {}: expected (0, 1]", o.acc.margin));
  if (!o.acc.expectFile.empty() && !o.accept) throw ConfigError("--expect is read by --accept only");
}

// The test hook, the environment variables read later, staging's effect on GPUDirect.
void validateHooksAndEnv(Options& o, const RawFlags& flags) {
  if (!flags.corrupt.empty()) {
    auto colon = flags.corrupt.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      o.runner.corrupt = std::make_pair(std::stoi(flags.corrupt.substr(0, colon)),
                                        static_cast<std::size_t>(std::stoull(flags.corrupt.substr(colon + 1))));
    } catch (const std::exception&) {
      throw ConfigError("--fb-test-corrupt wants RANK:INDEX (got '" + flags.corrupt + "')");
    }
  }
  validateHostAlgoEnv();  // FB_HOST_ALGO, FB_PROGRESS: refused here, before any communication
  model::validateHostLinksEnv();
  validateProgressEnv();
  // Staging through host memory replaces GPUDirect: the NIC sees host memory only.
  if (o.coll.gpuStaging) o.coll.transport.gpuDirect = false;
}

// Options::canonical, compared across ranks.
void setCanonical(Options& o, const RawFlags& flags) {
  // Everything that changes what is measured, normalized, for the cross-rank comparison.
  o.canonical = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
                            timerName(o.runner.timer), static_cast<int>(o.runner.rankTime), o.runner.repeat, o.runner.perOp,
                            fmt::format("{}/{}", o.allowSingleRank, fmt::join(o.required, ",")), o.minBytes, o.maxBytes,
                            o.stepFactor, o.stepBytes, o.runner.iters, o.runner.warmupIters, o.runner.checkRounds,
                            fmt::join(flags.colls, ","), fmt::join(o.transports, ","), fmt::join(flags.dtypes, ","), flags.placement,
                            o.coll.path, o.coll.cudaGraph, flags.timeoutS, o.runId, flags.corrupt, o.coll.transport.gidIndex,
                            o.coll.transport.verbsDevice, fmt::join(o.gb.given, " "), fmt::join(o.counts, ","),
                            o.coll.gpuStaging) +
                fmt::format("|{}|{}|{}|{}", o.resume, o.overwrite, o.reduceOp, o.progressSeconds);
  // ... and every other flag: ranks started with different flags (an MPMD launch) are refused
  // whatever the flag, --list included.
  o.canonical += fmt::format("|{}|{}|{}|{}|{}|{}|{}", o.list, o.writeFiles, o.resultsDir, o.force,
                             o.coll.transport.tcpInterface, o.coll.transport.verbsPort, o.coll.transport.gpuDirect);
  o.canonical += fmt::format("|doctor={}|rotate={}", o.doctor, o.coll.rotateBuffers);
  o.canonical += fmt::format("|ops={}|root={}", fmt::join(flags.opNames, ","), o.root);
  o.canonical += fmt::format("|accept={}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", o.accept, fmt::join(o.acc.paths, ","),
                             o.acc.expectFile, o.acc.floor, o.acc.bwBytes, o.acc.latBytes, o.acc.bwIters, o.acc.latIters,
                             o.acc.retests, o.acc.ranksAsNodes, o.acc.noCollectives, o.acc.noPairs, o.acc.baselineDir,
                             o.acc.margin, 0);
}

}  // namespace

std::optional<Options> parseOptions(const std::vector<std::string>& argsIn, bool printHelp) {
  Options o;
  std::vector<std::string> ours = argsIn;
  o.gb = takeBenchmarkFlags(ours);
  refuseEmptyListElements(ours);

  CLI::App app{"fabricbench: AllReduce / AllGather / ReduceScatter / P2P ring / AllToAll / Broadcast over NCCL, raw TCP, verbs, "
               "CUDA peer memory and MPI, with nccl-tests' definitions and flags.\nLaunch with mpirun/srun "
               "(one rank per GPU). Google Benchmark's --benchmark_filter, _list_tests, _format, _out, "
               "_out_format, _repetitions, _time_unit and _context are honoured; other --benchmark_* flags are "
               "refused.",
               "fabricbench"};
  RawFlags flags;
  registerFlags(app, o, flags);

  std::vector<std::string> rev(ours.rbegin(), ours.rend());
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    if (printHelp) std::cout << app.help();
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    throw ConfigError(e.what());
  }
  refuseUnsupported(flags);
  if (flags.showVersion) {
    if (printHelp) std::cout << versionText();
    return std::nullopt;
  }
  validateRunFlags(o, flags);
  validateSweep(o, flags);
  validateTiming(o, flags);
  validateSelection(o, flags);
  validateBackendsAndFolder(o);
  validateAccept(o, flags);
  validateHooksAndEnv(o, flags);
  setCanonical(o, flags);
  return o;
}

}  // namespace fb

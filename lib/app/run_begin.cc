// The run's settings into its recorder (fabricbench): what makes rows comparable for --resume,
// the checks before any communication, the claim from the options, and RunRecorder::begin with
// the console table and the progress line.
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "app/options.h"
#include "app/plan.h"
#include "app/run_recorder.h"
#include "bootstrap/agree.h"
#include "core/timer_names.h"
#include "report/fingerprint.h"
#include "report/run_folder.h"

namespace fb {

nlohmann::json measurementConfig(const Options& o) {
  std::vector<std::string> ops;
  for (auto op : o.ops) ops.emplace_back(opName(op));
  return {{"iters", o.runner.iters},
          {"warmup", o.runner.warmupIters},
          {"path", o.coll.path},
          {"cuda_graph", o.coll.cudaGraph},
          {"ops", ops},
          {"root", o.root},
          {"rotate_buffers", o.coll.rotateBuffers},
          {"timer", timerName(o.runner.timer)},
          {"rank_time", rankTimeName(o.runner.rankTime)},
          {"average", static_cast<int>(o.runner.rankTime)},
          {"repeat", o.runner.repeat == 0 ? nlohmann::json("auto") : nlohmann::json(o.runner.repeat)},
          {"per_op", o.runner.perOp},
          // --per-op's p50: nccl-tests' sorted[n/2]; run.json files without this key hold the nearest rank.
          {"per_op_p50", o.runner.perOp ? "sorted[n/2]" : ""},
          {"op", o.reduceOp}};
}

void checkResumable(const Options& o, const std::filesystem::path& dir) {
  auto runJson = dir / "run.json";
  if (!std::filesystem::exists(runJson)) return;
  nlohmann::json earlier;
  try {
    std::ifstream in(runJson);
    earlier = nlohmann::json::parse(in).value("config", nlohmann::json::object());
  } catch (const std::exception& e) {
    throw ConfigError("--resume: cannot read " + runJson.string() + ": " + e.what());
  }
  const nlohmann::json current = measurementConfig(o);
  if (o.runner.perOp && earlier.value("per_op", false) == true && !earlier.contains("per_op_p50"))
    throw ConfigError("--resume: the earlier run in " + dir.string() + " took --per-op's p50 as the nearest rank (a "
                      "fabricbench before per_op_p50); its rows and new ones would differ (choose another --run-id)");
  // In the order a user sets them ("average" repeats rank_time as nccl-tests' -a number).
  for (const char* key : {"iters", "warmup", "timer", "rank_time", "repeat", "per_op", "op", "ops", "root", "path",
                          "cuda_graph", "rotate_buffers"}) {
    const nlohmann::json& now = current.at(key);
    if (!earlier.contains(key) || earlier[key] == now) continue;
    // run.json files from before the timer names said gpu/host (core/timer_names.h).
    if (std::string_view(key) == "timer" && earlier[key].is_string() && now.is_string() &&
        parseTimerFlag(earlier[key].get<std::string>()) == parseTimerFlag(now.get<std::string>()))
      continue;
    throw ConfigError(fmt::format("--resume: the earlier run in {} was measured with {} = {}, this one with {} = {} "
                                  "(resume with the same settings, or choose another --run-id)",
                                  dir.string(), key, earlier[key].dump(), key, now.dump()));
  }
}

void preflight(const Options& o) {
  namespace fs = std::filesystem;
  if (!o.list && !o.gb.listTests && o.writeFiles && !o.runId.empty()) {
    auto dir = fs::path(o.resultsDir) / o.runId;
    if (fs::exists(dir) && !o.resume && !o.overwrite)
      throw ConfigError("result folder " + dir.string() +
                        " already exists (choose another --run-id, or --resume to measure only its missing rows, "
                        "or --overwrite)");
    if (o.resume && fs::exists(dir / "table.csv")) {
      try {
        readCsv((dir / "table.csv").string());
      } catch (const std::exception& e) {
        throw ConfigError(std::string("--resume: cannot read the earlier rows: ") + e.what());
      }
      checkResumable(o, dir);
    }
  }
  if (!o.gb.out.empty() && !o.list && !o.gb.listTests) {
    fs::path parent = fs::path(o.gb.out).parent_path();
    if (parent.empty()) parent = ".";
    if (!fs::is_directory(parent) || ::access(parent.c_str(), W_OK) != 0)
      throw ConfigError("--benchmark_out=" + o.gb.out + ": folder " + parent.string() + " does not exist or is not writable");
    if (fs::is_directory(o.gb.out)) throw ConfigError("--benchmark_out=" + o.gb.out + " is a folder");
  }
}

std::string timeDefinition(const RunnerConfig& r) {
  std::string how = r.timer == Timer::kNcclTests
                        ? "--timer nccl-tests: host clock from after a barrier until the stream is synchronised "
                          "(nccl-tests' method)"
                        : "--timer rank: each rank's own clock around its batch (CUDA events on its stream on GPU "
                          "backends, rows rank-events; the steady clock on host backends, rows rank-clock)";
  return fmt::format("per operation: median over {} timed batches of ({}) / iters, combined over ranks by {} (-a {})",
                     r.repeat == 0 ? std::string("3 (auto: fewer once a size's batches took 2 s)") : std::to_string(r.repeat),
                     how, rankTimeName(r.rankTime), static_cast<int>(r.rankTime));
}

FolderRequest folderRequest(const Options& o) {
  FolderRequest f = folderRequest(o.resultsDir, o.runId, "", o.writeFiles);
  f.resume = o.resume;
  f.overwrite = o.overwrite;
  return f;
}

ClaimedRun claimRun(Bootstrap& bs, const Options& o) { return claimRun(bs, folderRequest(o)); }

std::string RunRecorder::begin(Bootstrap& bs, const Options& o, const ClaimedRun& run, const RunPlan& plan,
                               const std::vector<std::string>& fps, const std::vector<std::string>& hosts,
                               const std::string& commandLine, std::FILE* tableOut) {
  notes = plan.notes;
  skipped = plan.skipped;
  if (!plan.filterNote.empty()) notes.push_back(plan.filterNote);
  const auto& previousRows = run.previousRows;
  std::string folder = o.writeFiles ? (std::filesystem::path(o.resultsDir) / run.runId).string() : std::string();
  std::string dir = onRankZero(bs, "the result files", [&]() -> std::string {
    RunMeta meta;
    meta.runId = run.runId;
    meta.commandLine = commandLine;
    meta.fingerprint = runFingerprint(fps, hosts);
    meta.config = {{"minbytes", o.minBytes}, {"maxbytes", o.maxBytes}, {"stepfactor", o.stepFactor},
                   {"stepbytes", o.stepBytes}, {"check", o.runner.checkRounds},
                   {"timeout_s", o.runner.timeout.count() / 1000}, {"transports", o.transports},
                   {"require", o.required}, {"time", timeDefinition(o.runner)}};
    meta.config.update(measurementConfig(o));
    if (!previousRows.empty()) {
      meta.config["resumed_rows"] = previousRows.size();
      notes.push_back(fmt::format("resumed: {} rows measured by an earlier run of {} are kept, not measured again",
                                  previousRows.size(), run.runId));
    }
    meta.previousRows = previousRows;
    meta.resultDir = folder;
    std::lock_guard<std::timed_mutex> lk(mu);
    resultDir = folder;
    // The table on stdout (stderr when --benchmark_format puts JSON/CSV on stdout), and into
    // --benchmark_out with --benchmark_out_format=console.
    // Side by side where both placements are measured (a collective without in-place: its own layout).
    ConsoleOptions copt;
    copt.wide = o.wide;
    if (o.placements.size() == 2)
      for (CollKind k : o.colls)
        if (describe(k).hasInPlace) copt.paired.insert(std::string(collName(k)));
    std::vector<std::unique_ptr<ResultSink>> consoles;
    consoles.push_back(makeConsoleSink(tableOut, copt));
    if (!o.gb.out.empty() && o.gb.outFormat == "console") {
      gbConsoleFile = std::fopen(o.gb.out.c_str(), "w");
      if (gbConsoleFile) consoles.push_back(makeConsoleSink(gbConsoleFile, copt));
    }
    console = makeTeeSink(std::move(consoles));
    if (!folder.empty()) {
      try {
        openFiles(folder, meta);  // table.csv, run.json, report.md
      } catch (const std::exception& e) {
        dropFiles();
        std::error_code ec;
        std::filesystem::remove_all(folder, ec);
        throw AgreedFailure(e.what());  // every rank: exit 1, no abort
      }
    }
    console->begin(meta);
    begun = true;
    ownProgress = std::make_unique<Progress>(stderr, o.progressSeconds, ::isatty(2) != 0);
    ownProgress->plan(plan.rows());
    progress = ownProgress.get();
    return folder;
  });
  // Every row is kept for Google Benchmark's JSON/CSV only where they are written (a long sweep
  // must not grow every rank's memory by a row's details each).
  keepNamed = bs.rank() == 0 && ((!o.gb.out.empty() && o.gb.outFormat != "console") ||
                                 o.gb.format == "json" || o.gb.format == "csv");
  return dir;
}

}  // namespace fb

#include "app/measure.h"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "app/backends.h"
#include "app/doctor_command.h"
#include "app/phases.h"
#include "app/plan.h"
#include "bootstrap/agree.h"
#include "core/config.h"
#include "harness/runner.h"
#include "report/fingerprint.h"
#include "report/plot.h"
#include "report/verdict.h"

namespace fb {
namespace {

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

// One run's parts, shared by its phases.
struct Run {
  MpiBootstrap& bs;
  Options& o;
  RunRecorder& state;
  std::FILE* tableOut;  // the console table: stdout, unless --benchmark_format puts JSON/CSV there
  ClaimedRun claimed;
  RunPlan plan;
  std::vector<std::string> fps;  // every rank's fingerprint (JSON text)
  int nodes = 1;
  std::string resultDir;
};

// Backends and benchmarks: one backend at a time is open (its connections or communicator exist
// only while its rows run), so an idle transport never competes with the next one. Returns the
// number of benchmarks Google Benchmark ran.
std::size_t measureBackends(Run& run) {
  auto& bs = run.bs;
  auto& o = run.o;
  auto& state = run.state;
  auto& plan = run.plan;
  auto& backends = plan.backends;
  Progress* progress = state.progress;
  std::FILE* tableOut = run.tableOut;
  const int nodes = run.nodes;
  Runner runner(bs, o.runner);
  std::size_t ran = 0, rowIndex = 0;
  for (CollKind k : o.colls) {
    const CollDescriptor& d = describe(k);
    if (!d.hasInPlace && std::find(o.placements.begin(), o.placements.end(), true) != o.placements.end())
      state.notes.push_back(fmt::format("{} is measured out-of-place only: {}", d.name, d.noInPlaceWhy));
  }
  auto flushNotes = [&, shown = std::size_t(0)]() mutable {
    if (bs.rank() != 0) return;
    if (progress) progress->beforeOutput();
    state.flushConsole();
    for (; shown < state.notes.size(); ++shown)
      std::fputs(consoleComment(state.notes[shown], o.wide ? 0 : kConsoleWidth).c_str(), tableOut);
    std::fflush(tableOut);
    if (progress) progress->afterOutput();
  };
  // Test runs (FB_TEST_FAIL) show every rank's verdict, so a test can see they are the same.
  const bool showVerdicts = showVerdictsEnv();
  auto showVerdict = [&](const std::string& text) {
    if (showVerdicts) ::fb::printLine(identity() + " verdict: " + text);
  };
  flushNotes();
  for (std::size_t b = 0; b < backends.size(); ++b) {
    auto& be = backends[b];
    const auto& points = plan.points[b];
    std::size_t firstRow = rowIndex;
    rowIndex += points.size();
    if (points.empty()) continue;
    try {
      CollFactory make = be.entry->open(bs, o, be.path);
      using Key = std::tuple<CollKind, DataType, bool, ReduceOp, int>;
      std::map<Key, std::shared_ptr<Collective>> colls;
      // Google Benchmark keeps every run's result until its benchmarks are cleared: they are
      // registered and run in batches, so a long sweep does not grow memory row by row.
      constexpr std::size_t kBatchRows = 256;
      std::size_t registered = 0;
      std::optional<Key> current;
      auto runRegistered = [&] {
        if (registered == 0) return;
        NullReporter quiet;
        ran += benchmark::RunSpecifiedBenchmarks(&quiet);
        benchmark::ClearRegisteredBenchmarks();  // the batch's lambdas, and their collectives
        registered = 0;
        // The plan runs each (collective, dtype, placement, op) over all its sizes before the
        // next: a collective whose rows are done is freed with its buffers (every rank is past
        // its last row: each row ends in an agreement), so memory does not grow over a sweep.
        for (auto it = colls.begin(); it != colls.end();) {
          if (it->second && (!current || it->first != *current)) {
            runner.forget(it->second.get());
            it = colls.erase(it);
          } else {
            ++it;
          }
        }
      };
      for (std::size_t i = 0; i < points.size(); ++i) {
        const auto& pt = points[i];
        const CollRequest& r = pt.req;
        auto key = std::make_tuple(r.kind, r.dtype, r.inPlace, r.op, r.root);
        current = key;
        auto it = colls.find(key);
        if (it == colls.end()) {
          Support sup;
          agree(bs, be.label(), [&] { sup = make(r); });
          if (!sup.impl) {
            std::string rows = fmt::format("{} {}{}{}", collName(r.kind), dtypeName(r.dtype),
                                           r.inPlace ? " in-place" : "",
                                           describe(r.kind).reduces ? " " + std::string(opName(r.op)) : "");
            std::string what = fmt::format("skipped {} {}: {}", be.label(), rows, sup.whyNot);
            state.notes.push_back(what);
            state.declined.emplace_back(be.label(), rows + ": " + sup.whyNot);
            showVerdict(what);
          }
          it = colls.emplace(key, std::shared_ptr<Collective>(std::move(sup.impl))).first;
        }
        if (!it->second) {  // declined: its rows are skipped (noted once)
          if (progress) progress->skip(firstRow + i);
          continue;
        }
        CollShape shape = makeShape(r.kind, r.dtype, pt.bytes, bs.size(), r.inPlace, r.op, r.root);
        auto coll = it->second;
        std::size_t index = firstRow + i;
        std::string name = pt.name;
        std::string label = be.label();
        benchmark::RegisterBenchmark(pt.name.c_str(), [&, coll, shape, nodes, index, name, label](benchmark::State& st) {
          for (auto _ : st) {
            if (progress) progress->rowStart(index, name);
            Sample s = runner.run(*coll, shape);
            if (progress) progress->rowDone();
            s.nNodes = nodes;
            st.SetIterationTime(s.timeUs * 1e-6);
            st.counters["algbw_GBps"] = s.algBwGBps;
            st.counters["busbw_GBps"] = s.busBwGBps;
            st.counters["wrong"] = static_cast<double>(s.wrong);
            state.add(s, label, name);
            // Rank 0 could not write its files: everyone stops here, together.
            if (bs.allReduceSum(state.stopRequested() ? 1 : 0) > 0)
              throw RunStopped("writing the result files stopped on rank 0");
          }
        })->Iterations(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
        if (++registered == kBatchRows) runRegistered();
      }
      runRegistered();
    } catch (const UnavailableError& e) {
      state.notes.push_back("skipped " + be.label() + ": " + e.what());
      state.skipped.emplace_back(be.label(), e.what());
      showVerdict("skipped " + be.label() + ": " + e.what());
      if (progress) progress->skipGroupPrefix(be.label() + "/");
    }
    // Free this backend (sockets, QPs, communicators, MPI ops) before the next one opens.
    benchmark::ClearRegisteredBenchmarks();
    bs.clearLivenessProbes();
    flushNotes();
  }
  return ran;
}

// The verdict: every rank holds the same rows, skips and fingerprints, so the same exit code.
// Then the console's last line, the plots, and the files' end.
int finishRun(Run& run, std::size_t ran, const std::string& executable) {
  auto& bs = run.bs;
  auto& o = run.o;
  auto& state = run.state;
  Progress* progress = state.progress;
  const auto& previousRows = run.claimed.previousRows;
  const auto& runId = run.claimed.runId;
  const auto& fps = run.fps;
  const auto& resultDir = run.resultDir;
  std::FILE* tableOut = run.tableOut;
  auto writeBenchmarkOutputs = [&] {
    if (bs.rank() != 0) return;
    std::vector<std::pair<std::string, std::string>> ctx = {
        {"executable", executable}, {"host_name", bs.hostname()}, {"fabricbench_version", FB_VERSION},
        {"num_ranks", std::to_string(bs.size())}, {"run_id", runId}, {"result_dir", resultDir},
        {"time_definition", timeDefinition(o.runner)}};
    if (!o.gb.out.empty() && o.gb.outFormat != "console") {
      try {
        writeFileAtomic(o.gb.out, o.gb.outFormat == "csv" ? benchmarkCsv(state.named, o.gb)
                                                          : benchmarkJson(state.named, o.gb, ctx));
      } catch (const std::exception& e) {
        ::fb::printLine("fabricbench: error: --benchmark_out=", o.gb.out, ": ", e.what());
      }
    }
    if (o.gb.format == "json") std::cout << benchmarkJson(state.named, o.gb, ctx) << std::flush;
    if (o.gb.format == "csv") std::cout << benchmarkCsv(state.named, o.gb) << std::flush;
    if (state.gbConsoleFile) std::fclose(state.gbConsoleFile);
    state.gbConsoleFile = nullptr;
  };
  // The verdict: every rank holds the same rows, skips and fingerprints, so the same exit code.
  VerdictInput vin;
  vin.rows = (ran == 0 ? 0 : state.rows) + static_cast<std::int64_t>(previousRows.size());
  for (const auto& r : previousRows)  // --resume: the earlier rows count as measured
    if (std::find(state.measured.begin(), state.measured.end(), r.impl) == state.measured.end())
      state.measured.push_back(r.impl);
  vin.badRows = state.badRows;
  vin.wrongTotal = state.wrongTotal;
  vin.checked = o.runner.checkRounds > 0;
  vin.measured = state.measured;
  vin.skipped = state.skipped;
  vin.declined = state.declined;
  vin.named = o.namedTransports;
  vin.autoTransports = o.transportsAuto;
  vin.gpus = gpusOnNodes(fps);
  vin.required = o.required;
  vin.attestRequired = o.coll.require;
  vin.gpuBackends = gpuBackendNames();
  Verdict verdict = judgeRun(vin);
  RunSummary sum;
  sum.ok = verdict.ok;
  sum.status = verdict.status;
  if (!previousRows.empty())
    sum.status += fmt::format(" (of them {} kept from the earlier run of {})", previousRows.size(), runId);
  sum.exitCode = verdict.exitCode;
  sum.measured = state.measured;
  for (auto& [label, why] : state.skipped) sum.skipped.push_back(label + ": " + why);
  for (auto& [label, what] : state.declined) sum.skipped.push_back(label + " " + what);
  if (bs.rank() == 0) {
    if (progress) progress->stop();
    state.flushConsole();
    std::fputs(consoleComment(sum.status + (resultDir.empty() ? "" : "; results in " + resultDir + "/"),
                              o.wide ? 0 : kConsoleWidth).c_str(), tableOut);
    std::fflush(tableOut);
  }
  // plots/ from table.csv where gnuplot exists, drawn before report.md so that it links them
  // (within a third of the time-out); the other ranks wait, so that all reach the shutdown together.
  if (bs.rank() == 0 && state.hasFiles())
    if (auto why = drawRunPlots(resultDir, bs.timeout() / 3); !why.empty()) state.notes.push_back(why);
  try {
    bs.barrier();
  } catch (const std::exception&) {  // a rank lost at the very end: the shutdown deals with it
  }
  state.end(sum);
  writeBenchmarkOutputs();
  return verdict.exitCode;
}

}  // namespace

// Every rank's fingerprint, with each built backend's extras.
std::vector<std::string> gatherFingerprints(Bootstrap& bs, const Options& o) {
  FingerprintOptions fpo;
  fpo.mpiVersion = mpiLibraryVersion();
  fpo.extra = {{"rank", bs.rank()}, {"local_rank", bs.localRank()}};
  addVersionsToFingerprint(linkedVersions(), fpo.extra);
  for (const auto& e : backendTable())
    if (e.built && e.fingerprint) e.fingerprint(fpo, o);
  nlohmann::json local = collectLocalFingerprint(fpo);
  return bs.allGatherStrings(local.dump());
}

std::string gpusOnNodes(const std::vector<std::string>& fingerprints) {
  std::map<std::string, std::set<std::string>> byModel;  // model -> "host#index"
  for (const auto& f : fingerprints) {
    try {
      auto j = nlohmann::json::parse(f);
      if (!j.contains("gpus") || !j["gpus"].is_array()) continue;
      std::string host = j.value("hostname", std::string("?"));
      for (const auto& g : j["gpus"])
        byModel[g.contains("name") && g["name"].is_string() ? g["name"].get<std::string>() : "GPU"].insert(
            host + "#" + g.dump());
    } catch (const nlohmann::json::exception&) {
    }
  }
  std::string out;
  for (const auto& [model, ids] : byModel) out += (out.empty() ? "" : ", ") + fmt::format("{} × {}", ids.size(), model);
  return out;
}

void printList(Bootstrap& bs, const Options& o) {
  std::vector<BackendStatus> st;
  for (const auto& e : backendTable()) st.push_back(e.probe(bs, o));
  if (bs.rank() != 0) return;
  fmt::print("fabricbench {} — what this build and this machine can run\n\n", FB_VERSION);
  fmt::print("{:<8} {:<6} {:<7} {}\n", "backend", "built", "usable", "details / why not");
  for (const auto& s : st)
    fmt::print("{:<8} {:<6} {:<7} {}\n", s.name, s.built ? "yes" : "no", s.usable ? "yes" : "no", s.reason);
  std::string colls;
  for (const CollDescriptor* d : allCollectives()) colls += (colls.empty() ? "" : " ") + std::string(d->name);
  fmt::print("\ncollectives: {} (a backend that does not run one says why in the run's notes)\n", colls);
  fmt::print("dtypes: float32 float64 int32 float16 bfloat16 (cuda: float32 float16 bfloat16)\n");
  for (const auto& e : backendTable()) {
    if (!e.listDetails) continue;
    std::string d = e.listDetails(o);
    if (!d.empty()) fmt::print("\n{}\n", d);
  }
}

int runMeasurements(MpiBootstrap& bs, Options& o, const std::string& commandLine, const std::string& executable,
                    RunRecorder& state) {
  // One rank measures no fabric (busbw 0 for every collective): refused before
  // anything is created, unless asked for.
  if (bs.size() == 1 && !o.allowSingleRank && !o.gb.listTests) {
    std::cerr << "fabricbench: error: 1 rank: nothing crosses a fabric (busbw 0); launch at least 2 ranks "
                 "(mpirun -np 2 ...), or pass --allow-single-rank\n";
    return kExitBadInput;
  }
  Run run{bs, o, state, o.gb.format == "console" ? stdout : stderr, {}, {}, {}, 1, {}};

  // 1. Run identity (not for --benchmark_list_tests).
  run.claimed.runId = o.runId;
  if (!o.gb.listTests) {
    try {
      run.claimed = claimRun(bs, o);
    } catch (const ConfigError& e) {
      if (bs.rank() == 0) ::fb::printLine("fabricbench: error: ", e.what());
      return kExitBadInput;
    }
  }

  // 2. The plan: backends (nothing opened yet) and their points, in run order.
  run.plan = makePlan(bs, o, run.claimed.done);
  if (!run.plan.filterNote.empty() && bs.rank() == 0 && o.gb.listTests)
    ::fb::printLine("fabricbench: ", run.plan.filterNote);
  if (o.gb.listTests) {
    if (bs.rank() == 0)
      for (auto& pts : run.plan.points)
        for (auto& pt : pts) std::cout << pt.name << "\n";
    std::cout << std::flush;
    return 0;
  }

  // 3. Fingerprint of every rank; 4. the result folder and the console on rank 0.
  auto hosts = bs.hostnames();
  run.nodes = static_cast<int>(std::set<std::string>(hosts.begin(), hosts.end()).size());
  run.fps = gatherFingerprints(bs, o);
  try {
    run.resultDir = state.begin(bs, o, run.claimed, run.plan, run.fps, hosts, commandLine, run.tableOut);
  } catch (const AgreedFailure& e) {
    if (bs.rank() == 0)
      ::fb::printLine("fabricbench: error: cannot create the result files in ",
                      (std::filesystem::path(o.resultsDir) / run.claimed.runId).string(), ": ", e.what());
    return 1;
  }
  // Every rank saves its backend logs (NCCL's INFO output) next to the results.
  o.coll.logDir = run.resultDir.empty() ? std::string() : run.resultDir + "/logs";

  // 5. The measurements, 6. the verdict and the end.
  Progress* progress = state.progress;
  const auto& previousRows = run.claimed.previousRows;
  const auto& resultDir = run.resultDir;
  try {
    std::size_t ran = measureBackends(run);
    return finishRun(run, ran, executable);
  } catch (const ConfigError& e) {
    // Bad settings found when a backend opened (a GID index that does not exist, ...): every rank
    // got the same verdict through agree(), so no abort is needed. Nothing was measured yet
    // by this backend; a folder without rows is removed.
    if (progress) progress->stop();
    if (bs.rank() == 0) ::fb::printLine("fabricbench: error: ", e.what());
    RunSummary sum;
    sum.ok = false;
    sum.status = std::string("bad input: ") + e.what();
    state.end(sum);
    if (bs.rank() == 0 && state.rows == 0 && previousRows.empty() && !resultDir.empty())
      std::filesystem::remove_all(resultDir);
    benchmark::ClearRegisteredBenchmarks();
    bs.clearLivenessProbes();
    return kExitBadInput;
  } catch (const AgreedFailure& e) {
    // Every rank got the same verdict through agree(): end cleanly everywhere (rows kept).
    if (bs.rank() == 0) ::fb::printLine(e.what());
    if (showVerdictsEnv()) ::fb::printLine(identity() + " verdict: failed: " + e.what());
    // Every rank is alive (they agreed): nobody leaves before all have said their verdict, so the
    // launcher, which ends the job once the first rank exits non-zero, cannot cut a rank's last words.
    try {
      bs.barrier();
    } catch (const std::exception&) {
    }
    RunSummary sum;
    sum.ok = false;
    sum.status = std::string("failed: ") + e.what();
    sum.measured = state.measured;
    state.end(sum);
    benchmark::ClearRegisteredBenchmarks();
    bs.clearLivenessProbes();
    return 1;
  } catch (const RunStopped& e) {
    // Agreed by every rank at the end of a row: a clean end, exit 1. Rank 0 said why already.
    RunSummary sum;
    sum.ok = false;
    sum.status = "failed: writing the result files stopped after " + std::to_string(state.rows) + " rows";
    state.end(sum);
    benchmark::ClearRegisteredBenchmarks();
    bs.clearLivenessProbes();
    return 1;
  } catch (const std::exception& e) {
    failJob(bs, &state, e);
  }
}

}  // namespace fb

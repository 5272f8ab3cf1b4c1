// fabricbench: the one Google Benchmark executable, with our own main.
//   MPI_Init → parse flags (ours + --benchmark_*) → every rank checks it got the same flags
//   → --list, or: fingerprint → for each transport × collective × dtype × placement × size,
//   register a benchmark named  <coll>/<impl>[:<path>]/<bytes>[/<dtype>][/inplace]
//   → Google Benchmark runs them in registration order (identical on every rank); each
//   benchmark is ONE Google Benchmark iteration = one Runner point (warm-up, timed batch of -n
//   ops, max over ranks, verification), fed to SetIterationTime per operation.
// Google Benchmark under MPI, the three traps: the iteration count is fixed (1 per benchmark,
// -n ops inside), random interleaving is refused, only rank 0 reports or writes files.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <tuple>

#include "backends.h"
#include "bootstrap/agree.h"
#include "bootstrap/mpi_bootstrap.h"
#include "collectives/collective.h"
#include "core/config.h"
#include "core/error.h"
#include "core/units.h"
#include "harness/runner.h"
#include "doctor_main.h"
#include "options.h"
#include "report/fingerprint.h"
#include "report/result_sink.h"
#include "report/verdict.h"
#include "transport/transport.h"

namespace fb {
namespace {

constexpr int kExitBadInput = 2;

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

// One backend variant that produces rows, e.g. {"tcp"}, {"nccl", "nvlink"}.
struct Backend {
  const BackendEntry* entry;
  std::string path;  // "" when the implementation has one path
  std::string label() const { return path.empty() ? entry->name : entry->name + ":" + path; }
};

bool showVerdictsEnv() { return std::getenv("FB_TEST_FAIL") != nullptr; }

std::string defaultRunId(const std::string& host) {
  if (const char* job = std::getenv("SLURM_JOB_ID"); job && *job) return job;
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", std::gmtime(&now));
  return std::string(buf) + "-" + host;
}

std::string joinArgs(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    std::string a = argv[i];
    bool quote = a.find_first_of(" \t\"'") != std::string::npos || a.empty();
    s += quote ? "'" + a + "'" : a;
  }
  return s;
}

// The backends the user asked for, in order, from the backend table. Nothing is opened here;
// variants (NCCL's paths for --path=auto) are asked for on every rank at the same point.
std::vector<Backend> listBackends(Bootstrap& bs, const Options& o, std::vector<std::string>& notes,
                                  std::vector<std::pair<std::string, std::string>>& skipped) {
  std::vector<Backend> out;
  for (const auto& t : o.transports) {
    const BackendEntry* e = findBackend(t);
    if (!e) continue;  // validated by parseOptions
    if (!e->built) {
      notes.push_back("skipped " + e->name + ": " + e->notBuilt);
      skipped.emplace_back(e->name, e->notBuilt);
      continue;
    }
    try {
      for (const auto& v : e->variants(bs, o)) out.push_back({e, v});
    } catch (const UnavailableError& err) {
      notes.push_back("skipped " + e->name + ": " + err.what());
      skipped.emplace_back(e->name, err.what());
    }
  }
  return out;
}

// Google Benchmark's --benchmark_filter semantics (regex search; a leading '-' negates), so a
// backend none of whose benchmarks would run is never opened.
bool filterMatches(const std::vector<std::string>& benchmarkArgs, const std::string& name) {
  std::string filter;
  for (const auto& a : benchmarkArgs)
    if (a.rfind("--benchmark_filter=", 0) == 0) filter = a.substr(19);
  if (filter.empty() || filter == "all") return true;
  bool negate = filter[0] == '-';
  if (negate) filter = filter.substr(1);
  bool hit = std::regex_search(name, std::regex(filter));
  return negate ? !hit : hit;
}

struct RunState {
  std::vector<std::unique_ptr<ResultSink>> sinks;
  std::int64_t rows = 0, badRows = 0, wrongTotal = 0;
  std::vector<std::string> notes;
  std::vector<std::string> measured;                          // backend labels with rows, in order
  std::vector<std::pair<std::string, std::string>> skipped;   // backend label, why
  void add(const Sample& s, const std::string& backend) {
    if (std::find(measured.begin(), measured.end(), backend) == measured.end()) measured.push_back(backend);
    ++rows;
    if (s.wrong > 0) {
      ++badRows;
      wrongTotal += s.wrong;
    }
    for (auto& k : sinks) k->add(s);
  }
  void end(RunSummary sum) {
    sum.notes = notes;
    for (auto& k : sinks) k->end(sum);
    sinks.clear();
  }
};

// What "time" means in this run, for run.json.
std::string timeDefinition(const RunnerConfig& r) {
  std::string how = r.timer == Timer::kHost
                        ? "host clock from after a barrier until the stream is synchronised (nccl-tests' method)"
                        : "each rank's own batch time (CUDA events on its stream; steady clock on host backends)";
  return fmt::format("per operation: median over {} timed batches of ({}) / iters, combined over ranks by {} (-a {})",
                     r.repeat == 0 ? std::string("3 (auto: fewer once a size's batches took 2 s)") : std::to_string(r.repeat),
                     how, rankTimeName(r.rankTime), static_cast<int>(r.rankTime));
}

// "2 × NVIDIA H200" when any rank's node reported GPUs in its fingerprint, else "".
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

int realMain(int argc, char** argv, MpiBootstrap& bs) {
  // 1. Flags, checked on every rank, agreed before any communication of data.
  std::vector<std::string> args(argv + 1, argv + argc);
  std::optional<Options> parsed;
  std::string err;
  try {
    parsed = parseOptions(args, bs.rank() == 0);
    if (!parsed) return 0;  // --help
    if (bs.rank() == 0 && !parsed->list && parsed->writeFiles && !parsed->runId.empty()) {
      auto dir = std::filesystem::path(parsed->resultsDir) / parsed->runId;
      if (std::filesystem::exists(dir))
        throw ConfigError("result folder " + dir.string() + " already exists (choose another --run-id)");
    }
  } catch (const ConfigError& e) {
    err = e.what();
  }
  // What each rank was told: its normalized flags, and its raw arguments for the message.
  std::string raw;
  for (auto& a : args) raw += (raw.empty() ? "" : " ") + a;
  auto all = bs.allGatherStrings(err.empty() ? "OK" + parsed->canonical + '\x1f' + raw : "ER" + err);
  auto canonicalOf = [](const std::string& s) { return s.substr(0, s.find('\x1f')); };
  auto rawOf = [](const std::string& s) { return s.substr(s.find('\x1f') + 1); };
  for (int r = 0; r < bs.size(); ++r) {
    if (all[r].rfind("ER", 0) == 0) {
      if (bs.rank() == 0)
        std::cerr << "fabricbench: error: " << all[r].substr(2) << (bs.size() > 1 ? fmt::format(" (rank {})", r) : "")
                  << "\n";
      return kExitBadInput;
    }
  }
  for (int r = 1; r < bs.size(); ++r) {
    if (canonicalOf(all[r]) != canonicalOf(all[0])) {
      if (bs.rank() == 0)
        std::cerr << "fabricbench: error: ranks were started with different flags (rank 0: '" << rawOf(all[0])
                  << "', rank " << r << ": '" << rawOf(all[r]) << "')\n";
      return kExitBadInput;
    }
  }
  Options& o = *parsed;
  bs.setTimeout(o.runner.timeout);
  for (CollKind k : o.colls) {
    if (describe(k).needsRoot && o.root >= bs.size()) {  // the same flags on every rank: the same verdict
      if (bs.rank() == 0)
        std::cerr << fmt::format("fabricbench: error: --root {} is not a rank of this job ({} ranks)\n", o.root, bs.size());
      return kExitBadInput;
    }
  }

  if (o.list) {
    printList(bs, o);
    return 0;
  }
  if (o.doctor) {  // benchmarks/doctor_main.cc, lib/doctor
    std::string id = bs.rank() == 0 ? (o.runId.empty() ? "doctor-" + defaultRunId(bs.hostname()) : o.runId) : "";
    auto b = bs.broadcastFromRoot(std::as_bytes(std::span<const char>(id.data(), id.size())));
    return runDoctorCommand(bs, o, std::string(reinterpret_cast<const char*>(b.data()), b.size()), joinArgs(argc, argv));
  }
  // One rank measures no fabric (busbw factor 0 for the reductions and gathers): refused before
  // anything is created, unless asked for.
  if (bs.size() == 1 && !o.allowSingleRank) {
    std::cerr << "fabricbench: error: 1 rank: nothing crosses a fabric (busbw factor 0); launch at least 2 ranks "
                 "(mpirun -np 2 ...), or pass --allow-single-rank\n";
    return kExitBadInput;
  }

  // 2. Run identity, fingerprint of every rank, sinks on rank 0.
  auto hosts = bs.hostnames();
  int nodes = static_cast<int>(std::set<std::string>(hosts.begin(), hosts.end()).size());
  std::string runId = o.runId;
  if (runId.empty()) {
    std::string mine = bs.rank() == 0 ? defaultRunId(bs.hostname()) : std::string();
    auto b = bs.broadcastFromRoot(std::as_bytes(std::span<const char>(mine.data(), mine.size())));
    runId.assign(reinterpret_cast<const char*>(b.data()), b.size());
  }
  FingerprintOptions fpo;
  fpo.mpiVersion = mpiLibraryVersion();
  fpo.extra = {{"rank", bs.rank()}, {"local_rank", bs.localRank()}};
  addVersionsToFingerprint(linkedVersions(), fpo.extra);
  for (const auto& e : backendTable())
    if (e.built && e.fingerprint) e.fingerprint(fpo, o);
  nlohmann::json local = collectLocalFingerprint(fpo);
  auto fps = bs.allGatherStrings(local.dump());

  RunState state;
  std::string resultDir;
  if (bs.rank() == 0) {
    RunMeta meta;
    meta.runId = runId;
    meta.commandLine = joinArgs(argc, argv);
    std::vector<nlohmann::json> per;
    for (auto& f : fps) per.push_back(nlohmann::json::parse(f));
    meta.fingerprint = mergeFingerprints(per);
    meta.fingerprint["ranks"] = bs.size();
    meta.fingerprint["nodes"] = nodes;
    meta.config = {{"minbytes", o.minBytes}, {"maxbytes", o.maxBytes}, {"stepfactor", o.stepFactor},
                   {"stepbytes", o.stepBytes}, {"iters", o.runner.iters}, {"warmup", o.runner.warmupIters},
                   {"check", o.runner.checkRounds}, {"timeout_s", o.runner.timeout.count() / 1000},
                   {"transports", o.transports}, {"path", o.coll.path}, {"cuda_graph", o.coll.cudaGraph},
                   {"ops", [&] { std::vector<std::string> v; for (auto op : o.ops) v.emplace_back(opName(op)); return v; }()},
                   {"root", o.root},
                   {"timer", timerName(o.runner.timer)}, {"rank_time", rankTimeName(o.runner.rankTime)},
                   {"average", static_cast<int>(o.runner.rankTime)},
                   {"repeat", o.runner.repeat == 0 ? nlohmann::json("auto") : nlohmann::json(o.runner.repeat)},
                   {"per_op", o.runner.perOp}, {"require", o.required},
                   {"time", timeDefinition(o.runner)}};
    if (o.writeFiles) resultDir = (std::filesystem::path(o.resultsDir) / runId).string();
    meta.resultDir = resultDir;
    state.sinks.push_back(makeRunSinks(resultDir));  // console + table.csv, run.json, report.md
    for (auto& k : state.sinks) k->begin(meta);
  }
  // Every rank saves its backend logs (NCCL's INFO output) next to the results.
  {
    auto b = bs.broadcastFromRoot(std::as_bytes(std::span<const char>(resultDir.data(), resultDir.size())));
    resultDir.assign(reinterpret_cast<const char*>(b.data()), b.size());
  }
  o.coll.logDir = resultDir.empty() ? std::string() : resultDir + "/logs";

  // 3. Backends and benchmarks: one backend at a time is open (its connections or communicator
  // exist only while its rows run), so an idle transport never competes with the next one.
  try {
    auto backends = listBackends(bs, o, state.notes, state.skipped);
    Runner runner(bs, o.runner);
    auto sizes = sizeSweep(o.minBytes, o.maxBytes, o.stepFactor, o.stepBytes);
    std::size_t ran = 0;
    for (CollKind k : o.colls) {
      const CollDescriptor& d = describe(k);
      if (!d.hasInPlace && std::find(o.placements.begin(), o.placements.end(), true) != o.placements.end())
        state.notes.push_back(fmt::format("{} is measured out-of-place only: {}", d.name, d.noInPlaceWhy));
    }
    auto flushNotes = [&, shown = std::size_t(0)]() mutable {
      if (bs.rank() == 0)
        for (; shown < state.notes.size(); ++shown) std::cout << "# " << state.notes[shown] << "\n" << std::flush;
    };
    // Test runs (FB_TEST_FAIL) show every rank's verdict, so a test can see they are the same.
    const bool showVerdicts = showVerdictsEnv();
    auto showVerdict = [&](const std::string& text) {
      if (showVerdicts) std::cerr << identity() + " verdict: " + text + "\n" << std::flush;  // one write
    };
    flushNotes();
    for (auto& be : backends) {
      struct Point {
        std::string name;
        CollRequest req;
        std::size_t bytes;
      };
      std::vector<Point> points;
      for (CollKind k : o.colls) {
        const CollDescriptor& d = describe(k);
        const std::vector<ReduceOp> ops = d.reduces ? o.ops : std::vector<ReduceOp>{ReduceOp::kSum};
        for (ReduceOp op : ops)
        for (DataType dt : o.dtypes) {
          for (bool inPlace : o.placements) {
            if (inPlace && !d.hasInPlace) continue;
            std::vector<std::size_t> byteList = sizes;
            if (!o.counts.empty()) {
              byteList.clear();
              for (std::size_t c : o.counts)
                byteList.push_back(c * dtypeSize(dt) * (d.splitPerRank ? static_cast<std::size_t>(bs.size()) : 1));
            }
            for (std::size_t bytes : byteList) {
              std::string name = fmt::format("{}/{}/{}", d.name, be.label(), bytes);
              if (dt != DataType::kFloat32) name += fmt::format("/{}", dtypeName(dt));
              if (inPlace) name += "/inplace";
              if (op != ReduceOp::kSum) name += fmt::format("/{}", opName(op));
              if (d.needsRoot && o.root != 0) name += fmt::format("/root{}", o.root);
              CollRequest req{k, dt, inPlace, op, d.needsRoot ? o.root : 0};
              if (filterMatches(o.benchmarkArgs, name)) points.push_back({name, req, bytes});
            }
          }
        }
      }
      if (points.empty()) continue;
      try {
        CollFactory make = be.entry->open(bs, o, be.path);
        using Key = std::tuple<CollKind, DataType, bool, ReduceOp, int>;
        std::map<Key, std::shared_ptr<Collective>> colls;
        for (const auto& pt : points) {
          const CollRequest& r = pt.req;
          auto key = std::make_tuple(r.kind, r.dtype, r.inPlace, r.op, r.root);
          auto it = colls.find(key);
          if (it == colls.end()) {
            Support sup;
            agree(bs, be.label(), [&] { sup = make(r); });
            if (!sup.impl) {
              std::string what = fmt::format("skipped {} {} {}{}{}: {}", be.label(), collName(r.kind),
                                             dtypeName(r.dtype), r.inPlace ? " in-place" : "",
                                             describe(r.kind).reduces ? " " + std::string(opName(r.op)) : "", sup.whyNot);
              state.notes.push_back(what);
              showVerdict(what);
            }
            it = colls.emplace(key, std::shared_ptr<Collective>(std::move(sup.impl))).first;
          }
          if (!it->second) continue;  // declined: its rows are skipped (noted once)
          CollShape shape = makeShape(r.kind, r.dtype, pt.bytes, bs.size(), r.inPlace, r.op, r.root);
          auto coll = it->second;
          std::string label = be.label();
          benchmark::RegisterBenchmark(pt.name.c_str(), [&, coll, shape, nodes, label](benchmark::State& st) {
            for (auto _ : st) {
              Sample s = runner.run(*coll, shape);
              s.nNodes = nodes;
              st.SetIterationTime(s.timeUs * 1e-6);
              st.counters["algbw_GBps"] = s.algBwGBps;
              st.counters["busbw_GBps"] = s.busBwGBps;
              st.counters["wrong"] = static_cast<double>(s.wrong);
              state.add(s, label);
            }
          })->Iterations(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
        }
        NullReporter quiet;
        ran += benchmark::RunSpecifiedBenchmarks(&quiet);
      } catch (const UnavailableError& e) {
        state.notes.push_back("skipped " + be.label() + ": " + e.what());
        state.skipped.emplace_back(be.label(), e.what());
        showVerdict("skipped " + be.label() + ": " + e.what());
      }
      // Free this backend (sockets, QPs, communicators, MPI ops) before the next one opens.
      benchmark::ClearRegisteredBenchmarks();
      bs.clearLivenessProbes();
      flushNotes();
    }
    // The verdict: every rank holds the same rows, skips and fingerprints, so the same exit code.
    VerdictInput vin;
    vin.rows = ran == 0 ? 0 : state.rows;
    vin.badRows = state.badRows;
    vin.wrongTotal = state.wrongTotal;
    vin.checked = o.runner.checkRounds > 0;
    vin.measured = state.measured;
    vin.skipped = state.skipped;
    vin.named = o.namedTransports;
    vin.autoTransports = o.transportsAuto;
    vin.gpus = gpusOnNodes(fps);
    vin.required = o.required;
    Verdict verdict = judgeRun(vin);
    RunSummary sum;
    sum.ok = verdict.ok;
    sum.status = verdict.status;
    sum.exitCode = verdict.exitCode;
    sum.measured = state.measured;
    for (auto& [label, why] : state.skipped) sum.skipped.push_back(label + ": " + why);
    if (bs.rank() == 0) {
      std::cout << "# " << sum.status << (resultDir.empty() ? "" : "; results in " + resultDir + "/") << "\n"
                << std::flush;
    }
    state.end(sum);
    return verdict.exitCode;
  } catch (const ConfigError& e) {
    // Bad settings found when a backend opened (a GID index that does not exist, ...): every rank
    // got the same verdict through agree(), so no abort is needed. Nothing was measured yet
    // by this backend; a folder without rows is removed.
    if (bs.rank() == 0) std::cerr << "fabricbench: error: " << e.what() << "\n";
    RunSummary sum;
    sum.ok = false;
    sum.status = std::string("bad input: ") + e.what();
    state.end(sum);
    if (bs.rank() == 0 && state.rows == 0 && !resultDir.empty()) std::filesystem::remove_all(resultDir);
    benchmark::ClearRegisteredBenchmarks();
    bs.clearLivenessProbes();
    return kExitBadInput;
  } catch (const AgreedFailure& e) {
    // Every rank got the same verdict through agree(): end cleanly everywhere (rows kept).
    if (bs.rank() == 0) std::cerr << e.what() << "\n" << std::flush;
    if (showVerdictsEnv()) std::cerr << identity() + " verdict: failed: " + e.what() + "\n" << std::flush;
    RunSummary sum;
    sum.ok = false;
    sum.status = std::string("failed: ") + e.what();
    sum.measured = state.measured;
    state.end(sum);
    benchmark::ClearRegisteredBenchmarks();
    bs.clearLivenessProbes();
    return 1;
  } catch (const std::exception& e) {
    RunSummary sum;
    sum.ok = false;
    sum.status = std::string("aborted: ") + e.what();
    std::cerr << e.what() << "\n" << std::flush;
    state.end(sum);
    bs.abortJob(1);
    return 1;  // abortJob does not return
  }
}

}  // namespace
}  // namespace fb

int main(int argc, char** argv) {
  // Google Benchmark reads its own flags; ours are parsed by CLI11 in parseOptions.
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    fb::MpiBootstrap bs;
    fb::setIdentity(bs.hostname(), bs.rank());
    std::vector<char*> gbArgs{argv[0]};
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--benchmark_", 0) != 0) continue;
      // Trap 3: --benchmark_out on every rank would truncate the same file. Only rank 0 writes.
      if (bs.rank() != 0 && a.rfind("--benchmark_out", 0) == 0) continue;
      // Repetitions are the suite's own (--repeat, see parseOptions): one row per size.
      if (a.rfind("--benchmark_repetitions", 0) == 0) continue;
      gbArgs.push_back(argv[i]);
    }
    int gbArgc = static_cast<int>(gbArgs.size());
    benchmark::Initialize(&gbArgc, gbArgs.data());
    try {
      rc = fb::realMain(argc, argv, bs);
    } catch (const fb::ConfigError& e) {
      if (bs.rank() == 0) std::cerr << "fabricbench: error: " << e.what() << "\n";
      rc = 2;
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n" << std::flush;
      bs.abortJob(1);
    }
    benchmark::Shutdown();
  }
  MPI_Finalize();
  return rc;
}

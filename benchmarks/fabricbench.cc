// fabricbench: the one Google Benchmark executable, with our own main.
//   MPI_Init → parse flags (ours + --benchmark_*) → every rank checks it got the same flags
//   → --list, or: fingerprint → for each transport × collective × dtype × placement × size,
//   register a benchmark named  <coll>/<impl>[:<path>]/<bytes>[/<dtype>][/inplace]
//   → Google Benchmark runs them in registration order (identical on every rank); each
//   benchmark is ONE Google Benchmark iteration = one Runner point (warm-up, timed batch of -n
//   ops, max over ranks, verification), fed to SetIterationTime per operation.
// Google Benchmark under MPI, the three traps: the iteration count is fixed (1 per benchmark,
// -n ops inside), random interleaving is refused, only rank 0 reports or writes files (its
// --benchmark_* flags are read by fabricbench itself: gbench_flags.h).
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <csignal>
#include <ctime>
#include <mutex>
#include <thread>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "app/backends.h"
#include "bootstrap/agree.h"
#include "bootstrap/mpi_bootstrap.h"
#include "collectives/collective.h"
#include "core/config.h"
#include "core/error.h"
#include "core/timer_names.h"
#include "core/units.h"
#include "harness/runner.h"
#include "app/gbench_flags.h"
#include "app/accept_command.h"
#include "app/doctor_command.h"
#include "app/options.h"
#include "app/progress.h"
#include "report/fingerprint.h"
#include "app/shutdown.h"
#include "app/validate.h"
#include "report/plot.h"
#include "report/result_sink.h"
#include "report/run_folder.h"
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

// What identifies a row for --resume: the same collective, implementation, dtype, placement
// and size.
std::string rowKey(std::string_view coll, std::string_view impl, std::string_view dtype, bool inPlace,
                   std::size_t bytes) {
  return fmt::format("{}|{}|{}|{}|{}", coll, impl, dtype, inPlace ? "in" : "out", bytes);
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

// One benchmark (= one row): <coll>/<impl>[:<path>]/<bytes>[/<dtype>][/inplace].
struct Point {
  std::string name;
  CollRequest req;
  std::size_t bytes;
};

// The points of one backend, in run order, that pass --benchmark_filter (so a backend none of
// whose benchmarks would run is never opened) and, with --resume, are not measured yet.
std::vector<Point> planPoints(const Options& o, const Backend& be, int nRanks, const std::set<std::string>& done) {
  std::vector<Point> points;
  auto sizes = sizeSweep(o.minBytes, o.maxBytes, o.stepFactor, o.stepBytes);
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
            byteList.push_back(c * dtypeSize(dt) * (d.splitPerRank ? static_cast<std::size_t>(nRanks) : 1));
        }
        for (std::size_t bytes : byteList) {
          std::string name = fmt::format("{}/{}/{}", d.name, be.label(), bytes);
          if (dt != DataType::kFloat32) name += fmt::format("/{}", dtypeName(dt));
          if (inPlace) name += "/inplace";
          if (op != ReduceOp::kSum) name += fmt::format("/{}", opName(op));
          if (d.needsRoot && o.root != 0) name += fmt::format("/root{}", o.root);
          if (!benchmarkSelected(o.gb, name)) continue;
          if (done.count(rowKey(d.name, be.entry->name, dtypeName(dt), inPlace, bytes))) continue;
          points.push_back({name, CollRequest{k, dt, inPlace, op, d.needsRoot ? o.root : 0}, bytes});
        }
      }
    }
  }
  return points;
}

// The run's rows and where they go. Rank 0 holds the sinks: the console table, and the result
// files (table.csv, run.json, report.md). The signal thread may end the run at any time, so every
// call takes the lock. When writing a result file fails (disk full, folder gone), the files stop
// (the last good run.json stays, a marker WRITING-STOPPED.txt says why when it can be written)
// and the run stops at the end of the row, on every rank (stopRequested() is agreed per row).
struct RunState {
  std::timed_mutex mu;
  std::unique_ptr<ResultSink> console;
  std::unique_ptr<ResultSink> csv, json, md;  // result files (rank 0, unless --no-files)
  std::string resultDir;
  bool begun = false, ended = false;
  std::string writeError;
  std::int64_t rows = 0, badRows = 0, wrongTotal = 0;
  std::vector<std::string> notes;
  std::vector<NamedSample> named;  // for Google Benchmark's JSON/CSV (rank 0, only when asked for)
  bool keepNamed = false;
  Progress* progress = nullptr;
  std::vector<std::string> measured;                          // backend labels with rows, in order
  std::vector<std::pair<std::string, std::string>> skipped;   // backend label, why
  std::vector<std::pair<std::string, std::string>> declined;  // backend label, "rows: why" (verdict.h)

  void add(const Sample& s, const std::string& backend, const std::string& name = "") {
    std::lock_guard<std::timed_mutex> lk(mu);
    if (ended) return;
    if (keepNamed) named.push_back({name, s});
    if (std::find(measured.begin(), measured.end(), backend) == measured.end()) measured.push_back(backend);
    ++rows;
    if (s.wrong > 0) {
      ++badRows;
      wrongTotal += s.wrong;
    }
    if (progress) progress->beforeOutput();
    if (console) console->add(s);
    if (progress) progress->afterOutput();
    if (csv) {
      try {
        csv->add(s);
        json->add(s);
        md->add(s);
      } catch (const std::exception& e) {
        stopWriting(e.what(), rows - 1);
      }
    }
  }
  // The console's held rows go out before other text on its stream.
  void flushConsole() {
    std::lock_guard<std::timed_mutex> lk(mu);
    if (console && begun && !ended) console->flush();
  }
  bool hasFiles() const { return csv != nullptr; }
  void openFiles(const std::string& dir, const RunMeta& meta) {
    resultDir = dir;
    csv = makeCsvSink(dir + "/table.csv");
    json = makeJsonSink(dir + "/run.json");
    md = makeMarkdownSink(dir + "/report.md");
    csv->begin(meta);
    json->begin(meta);
    md->begin(meta);
  }
  void dropFiles() { csv.reset(), json.reset(), md.reset(); }
  // run.json and report.md as they would be if the run ended now with `sum`, without closing
  // anything: a later row rewrites run.json as "running", the end rewrites both (SIGCONT).
  void checkpoint(RunSummary sum, std::chrono::milliseconds wait) {
    bool locked = mu.try_lock_for(wait);
    if (begun && !ended && json && writeError.empty()) {
      sum.notes = notes;
      try {
        json->end(sum);
        md->end(sum);
      } catch (const std::exception&) {
      }
    }
    if (locked) mu.unlock();
  }
  bool stopRequested() {
    std::lock_guard<std::timed_mutex> lk(mu);
    return !writeError.empty();
  }
  void end(RunSummary sum) {
    std::lock_guard<std::timed_mutex> lk(mu);
    endLocked(std::move(sum));
  }
  // For the signal thread: waits at most `wait` for a row being written, then ends anyway (each
  // file is replaced atomically, so two writers never leave a torn file).
  void endSoon(RunSummary sum, std::chrono::milliseconds wait) {
    bool locked = mu.try_lock_for(wait);
    endLocked(std::move(sum));
    if (locked) mu.unlock();
  }

 private:
  void endLocked(RunSummary sum) {
    if (ended || !begun) return;
    ended = true;
    if (progress) progress->stop();
    sum.notes = notes;
    if (!writeError.empty()) sum.notes.push_back("writing result files stopped: " + writeError);
    if (csv) {
      try {
        csv->end(sum);
        json->end(sum);  // run.json first: the status matters most when time is short
        md->end(sum);
      } catch (const std::exception& e) {
        stopWriting(e.what(), rows);
      }
    }
    dropFiles();
    if (console) console->end(sum);
  }
  void stopWriting(const std::string& why, std::int64_t written) {
    writeError = why;
    dropFiles();
    std::string marker = resultDir + "/WRITING-STOPPED.txt";
    std::string text = fmt::format("Writing the result files stopped after {} rows: {}\n"
                                   "run.json and table.csv hold the rows written before that.\n", written, why);
    int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ssize_t w = ::write(fd, text.data(), text.size());
      (void)w;
      ::close(fd);
    }
    ::fb::printLine("fabricbench: error: writing results stopped: ", why, "; ", resultDir, "/run.json keeps the rows written before (marker WRITING-STOPPED.txt); the run stops");
  }
};

// The run stops on every rank (agreed at the end of a row): rank 0 could not write its files.
class RunStopped : public Error {
  using Error::Error;
};

// The settings that make rows comparable: --resume keeps an earlier run's rows only when the run
// measured them the same way (run.json's "config" holds these keys).
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
          {"op", o.reduceOp}};
}

// --resume into a run measured another way would mix incomparable rows in one table: refused,
// naming the first setting that differs.
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

// Checks only rank 0 can make (it owns the files), before any communication of data.
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

// What "time" means in this run, for run.json.
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

// Ends the job after a failure that not every rank may know about (a lost or stuck peer, a
// time-out, an error on one rank). Never returns.
//   1. This rank closes its connections, so peers blocked on it learn it now.
//   2. Every rank that is still there tells the others what it saw and hears theirs, for 3 s
//      (point-to-point, MpiBootstrap::exchangeFailureReports); a rank that says nothing is
//      lost or stuck, and it is the one named, whatever the others' errors say about each other.
//   3. The lowest rank still there prints the verdict (one line); rank 0, when there, finalises
//      run.json and report.md with it; then the job is ended (MPI_Abort: the runtime also ends a
//      stopped rank).
[[noreturn]] void failJob(MpiBootstrap& bs, RunState* state, const std::exception& e) {
  for (auto& w : openTransports())
    if (auto t = w.lock()) t->abandon();
  std::string mine;
  if (dynamic_cast<const PeerFailedError*>(&e)) mine = "P|";  // joined because another rank failed
  else if (auto* io = dynamic_cast<const IoError*>(&e)) mine = "L" + std::to_string(io->peer()) + "|";
  else if (dynamic_cast<const TimeoutError*>(&e)) mine = "T|";
  else mine = "E|";
  mine += e.what();
  auto reports = bs.exchangeFailureReports(mine, std::chrono::seconds(3));
  std::vector<int> silent;
  for (int r = 0; r < bs.size(); ++r)
    if (!reports[r]) silent.push_back(r);
  std::string verdict;
  if (!silent.empty()) {
    verdict = silent.size() == 1 ? "lost or stuck: rank " : "lost or stuck: ranks ";
    for (std::size_t i = 0; i < silent.size(); ++i)
      verdict += fmt::format("{}{} ({})", i ? ", " : "", silent[i], bs.describeRank(silent[i]));
    verdict += " stopped answering";
    // What a surviving rank saw of it, when one says so.
    for (int r = 0; r < bs.size(); ++r) {
      if (!reports[r] || (*reports[r])[0] == 'P') continue;
      const std::string& t = *reports[r];
      bool namesSilent = false;
      for (int x : silent) namesSilent = namesSilent || t.rfind("L" + std::to_string(x) + "|", 0) == 0;
      if (namesSilent || (t[0] == 'T' && t.find("rank " + std::to_string(silent[0])) != std::string::npos)) {
        verdict += "; rank " + std::to_string(r) + " saw: " + t.substr(t.find('|') + 1);
        break;
      }
    }
  } else {
    for (int r = 0; r < bs.size() && verdict.empty(); ++r)
      if (reports[r] && (*reports[r])[0] != 'P') verdict = "rank " + std::to_string(r) + ": " + reports[r]->substr(reports[r]->find('|') + 1);
    if (verdict.empty()) verdict = e.what();
  }
  int leader = 0;
  while (leader < bs.size() && !reports[leader]) ++leader;
  if (bs.rank() == leader) ::fb::printLine("fabricbench: error: ", verdict);
  if (state && bs.rank() == 0) {
    RunSummary sum;
    sum.ok = false;
    sum.status = "aborted: " + verdict;
    state->end(sum);
  }
  std::cout << std::flush;
  if (bs.rank() == leader) bs.abortJob(1);
  // The leader ends the job; should it not, leave anyway.
  std::this_thread::sleep_for(std::chrono::seconds(10));
  std::_Exit(1);
}

int runMeasurements(MpiBootstrap& bs, Options& o, int argc, char** argv, RunState& state);

int realMain(int argc, char** argv, MpiBootstrap& bs, RunState& state, int startupTimeout) {
  // 1. Flags, checked on every rank (the form of each flag, then what needs this machine:
  // interfaces, memory, the result folder), and agreed in the first exchange before any other
  // communication: a bad flag on any rank, or ranks started with different flags (any flag,
  // --help and --list included), end every rank with one line and exit 2.
  std::vector<std::string> args(argv + 1, argv + argc);
  std::optional<Options> parsed;
  std::string err;
  bool info = false;  // --help: printed by rank 0 once every rank agrees
  try {
    parsed = parseOptions(args, false);
    if (!parsed) info = true;
    else {
      validateOnThisRank(*parsed, bs.size(), bs.rank(), bs.hostname());
      if (bs.rank() == 0) preflight(*parsed);
    }
  } catch (const ConfigError& e) {
    err = e.what();
  } catch (const std::exception& e) {  // a check that failed in an unexpected way is still bad input
    err = e.what();
  }
  // What each rank was told: its normalized flags, and its raw arguments for the message.
  std::string raw;
  for (auto& a : args) raw += (raw.empty() ? "" : " ") + a;
  bs.setTimeout(std::chrono::seconds(startupTimeout));
  auto all = bs.allGatherStrings(!err.empty() ? "ER" + err
                                 : info       ? "HP" + raw + '\x1f' + raw
                                              : "OK" + parsed->canonical + '\x1f' + raw);
  auto canonicalOf = [](const std::string& s) { return s.substr(0, s.find('\x1f')); };
  auto rawOf = [](const std::string& s) { return s.substr(s.find('\x1f') + 1); };
  for (int r = 0; r < bs.size(); ++r) {
    if (all[r].rfind("ER", 0) == 0) {
      if (bs.rank() == 0)
        ::fb::printLine("fabricbench: error: ", all[r].substr(2), (bs.size() > 1 ? fmt::format(" (rank {})", r) : ""));
      return kExitBadInput;
    }
  }
  for (int r = 1; r < bs.size(); ++r) {
    if (canonicalOf(all[r]) != canonicalOf(all[0])) {
      if (bs.rank() == 0)
        ::fb::printLine("fabricbench: error: ranks were started with different flags (rank 0: '", rawOf(all[0]), "', rank ", r, ": '", rawOf(all[r]), "')");
      return kExitBadInput;
    }
  }
  if (info) {
    if (bs.rank() == 0) parseOptions(args, true);
    return 0;
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
  // --benchmark_list_tests lists the points of the normal run (--accept's collectives phase) and
  // starts nothing else.
  if (!o.acc.baselineDir.empty() && !o.gb.listTests) {  // benchmarks/accept_main.cc: local, rank 0 writes
    int rc = bs.rank() == 0 ? writeBaseline(o) : 0;
    return static_cast<int>(bs.allReduceMax(rc));
  }
  if (o.accept && !o.gb.listTests)  // the doctor, the pair test, then this run's measurements as the collectives phase
    return runAcceptance(bs, o, joinArgs(argc, argv),
                         [&](Options& c) { return runMeasurements(bs, c, argc, argv, state); });
  return runMeasurements(bs, o, argc, argv, state);
}

// The normal run (and --accept's collectives phase): backends x points, rows, files, the verdict.
int runMeasurements(MpiBootstrap& bs, Options& o, int argc, char** argv, RunState& state) {
  // One rank measures no fabric (busbw 0 for every collective): refused before
  // anything is created, unless asked for.
  if (bs.size() == 1 && !o.allowSingleRank && !o.gb.listTests) {
    std::cerr << "fabricbench: error: 1 rank: nothing crosses a fabric (busbw 0); launch at least 2 ranks "
                 "(mpirun -np 2 ...), or pass --allow-single-rank\n";
    return kExitBadInput;
  }
  // The console table goes to stdout, unless --benchmark_format asks for JSON/CSV there.
  std::FILE* tableOut = o.gb.format == "console" ? stdout : stderr;
  auto broadcastString = [&bs](std::string s) {
    auto b = bs.broadcastFromRoot(std::as_bytes(std::span<const char>(s.data(), s.size())));
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  };

  // 2. Run identity. Rank 0 claims the folder (never an earlier run's) and reads the rows an
  // earlier run left with --resume; every rank learns the outcome.
  std::set<std::string> done;
  std::vector<Sample> previousRows;
  std::string runId = o.runId;
  if (!o.gb.listTests) {
    std::string claim;
    if (bs.rank() == 0) {
      namespace fs = std::filesystem;
      try {
        if (runId.empty()) {
          runId = defaultRunId(bs.hostname());
          if (o.writeFiles) runId = claimRunDir(o.resultsDir, runId);
        } else if (o.writeFiles) {
          fs::path dir = fs::path(o.resultsDir) / runId;
          if (o.overwrite && fs::exists(dir)) fs::remove_all(dir);
          if (o.resume && fs::exists(dir / "table.csv")) previousRows = readCsv((dir / "table.csv").string());
        }
        std::string keys;
        for (const auto& r : previousRows) keys += rowKey(r.coll, r.impl, r.dtype, r.inPlace, r.bytes) + "\n";
        claim = "OK" + runId + '\x1f' + keys;
      } catch (const std::exception& e) {
        claim = std::string("ER") + e.what();
      }
    }
    claim = broadcastString(claim);
    if (claim.rfind("ER", 0) == 0) {
      if (bs.rank() == 0) ::fb::printLine("fabricbench: error: ", claim.substr(2));
      return kExitBadInput;
    }
    auto sep = claim.find('\x1f');
    runId = claim.substr(2, sep - 2);
    std::stringstream keys(claim.substr(sep + 1));
    for (std::string k; std::getline(keys, k);) done.insert(k);
  }

  // 3. The plan: backends (nothing opened yet) and their points, in run order.
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, std::string>> skipped;
  auto backends = listBackends(bs, o, notes, skipped);
  std::vector<std::vector<Point>> plan;
  for (auto& be : backends) plan.push_back(planPoints(o, be, bs.size(), done));
  // A filter that selects nothing: say what the names are (the same on every rank).
  std::string filterNote;
  if (std::all_of(plan.begin(), plan.end(), [](const auto& p) { return p.empty(); })) {
    Options all = o;
    all.gb.filter.clear();
    std::vector<std::string> names;
    for (auto& be : backends)
      for (auto& pt : planPoints(all, be, bs.size(), done)) names.push_back(pt.name);
    filterNote = filterHint(o.gb, names);
    if (!filterNote.empty() && bs.rank() == 0 && o.gb.listTests) ::fb::printLine("fabricbench: ", filterNote);
  }
  if (o.gb.listTests) {
    if (bs.rank() == 0)
      for (auto& pts : plan)
        for (auto& pt : pts) std::cout << pt.name << "\n";
    std::cout << std::flush;
    return 0;
  }

  // 4. Fingerprint of every rank, sinks on rank 0.
  auto hosts = bs.hostnames();
  int nodes = static_cast<int>(std::set<std::string>(hosts.begin(), hosts.end()).size());
  FingerprintOptions fpo;
  fpo.mpiVersion = mpiLibraryVersion();
  fpo.extra = {{"rank", bs.rank()}, {"local_rank", bs.localRank()}};
  addVersionsToFingerprint(linkedVersions(), fpo.extra);
  for (const auto& e : backendTable())
    if (e.built && e.fingerprint) e.fingerprint(fpo, o);
  nlohmann::json local = collectLocalFingerprint(fpo);
  auto fps = bs.allGatherStrings(local.dump());

  state.notes = notes;
  state.skipped = skipped;
  if (!filterNote.empty()) state.notes.push_back(filterNote);
  std::unique_ptr<Progress> progress;
  std::FILE* gbConsoleFile = nullptr;
  // The result folder is created here, by rank 0, after every check passed. Should that fail
  // (the disk filled up since the check), every rank hears it with the folder's name and ends
  // with exit 1, no abort.
  std::string resultDir, beginError;
  if (bs.rank() == 0) {
    RunMeta meta;
    meta.runId = runId;
    meta.commandLine = joinArgs(argc, argv);
    meta.fingerprint = runFingerprint(fps, hosts);
    meta.config = {{"minbytes", o.minBytes}, {"maxbytes", o.maxBytes}, {"stepfactor", o.stepFactor},
                   {"stepbytes", o.stepBytes}, {"check", o.runner.checkRounds},
                   {"timeout_s", o.runner.timeout.count() / 1000}, {"transports", o.transports},
                   {"require", o.required}, {"time", timeDefinition(o.runner)}};
    meta.config.update(measurementConfig(o));
    if (!previousRows.empty()) {
      meta.config["resumed_rows"] = previousRows.size();
      state.notes.push_back(fmt::format("resumed: {} rows measured by an earlier run of {} are kept, not measured again",
                                        previousRows.size(), runId));
    }
    meta.previousRows = previousRows;
    if (o.writeFiles) resultDir = (std::filesystem::path(o.resultsDir) / runId).string();
    meta.resultDir = resultDir;
    std::lock_guard<std::timed_mutex> lk(state.mu);
    state.resultDir = resultDir;
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
    state.console = makeTeeSink(std::move(consoles));
    if (!resultDir.empty()) {
      try {
        state.openFiles(resultDir, meta);  // table.csv, run.json, report.md
      } catch (const std::exception& e) {
        beginError = e.what();
        state.dropFiles();
        std::error_code ec;
        std::filesystem::remove_all(resultDir, ec);
      }
    }
    if (beginError.empty()) {
      state.console->begin(meta);
      state.begun = true;
      progress = std::make_unique<Progress>(stderr, o.progressSeconds, ::isatty(2) != 0);
      std::vector<PlannedRow> rows;
      for (std::size_t b = 0; b < backends.size(); ++b)
        for (auto& pt : plan[b]) rows.push_back({backends[b].label() + "/" + std::string(collName(pt.req.kind)), pt.bytes});
      progress->plan(std::move(rows));
      state.progress = progress.get();
    }
  }
  // Every rank saves its backend logs (NCCL's INFO output) next to the results.
  {
    std::string msg = beginError.empty() ? "D" + resultDir : "E" + beginError;
    auto b = bs.broadcastFromRoot(std::as_bytes(std::span<const char>(msg.data(), msg.size())));
    msg.assign(reinterpret_cast<const char*>(b.data()), b.size());
    if (msg[0] == 'E') {
      if (bs.rank() == 0)
        ::fb::printLine("fabricbench: error: cannot create the result files in ", (std::filesystem::path(o.resultsDir) / runId).string(), ": ", msg.substr(1));
      return 1;
    }
    resultDir = msg.substr(1);
  }
  o.coll.logDir = resultDir.empty() ? std::string() : resultDir + "/logs";
  // Every row is kept for Google Benchmark's JSON/CSV only where they are written (a long sweep
  // must not grow every rank's memory by a row's details each).
  state.keepNamed = bs.rank() == 0 && ((!o.gb.out.empty() && o.gb.outFormat != "console") ||
                                       o.gb.format == "json" || o.gb.format == "csv");
  auto writeBenchmarkOutputs = [&] {
    if (bs.rank() != 0) return;
    std::vector<std::pair<std::string, std::string>> ctx = {
        {"executable", argv[0]}, {"host_name", bs.hostname()}, {"fabricbench_version", FB_VERSION},
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
    if (gbConsoleFile) std::fclose(gbConsoleFile);
    gbConsoleFile = nullptr;
  };

  // 5. Backends and benchmarks: one backend at a time is open (its connections or communicator
  // exist only while its rows run), so an idle transport never competes with the next one.
  try {
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
      const auto& points = plan[b];
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

}  // namespace
}  // namespace fb

int main(int argc, char** argv) {
  // Signals first (every thread MPI starts inherits the mask), then a watchdog over MPI_Init and
  // the bootstrap's first collective: a rank stuck there (a stopped peer) ends with one line
  // within --timeout instead of hanging without a word.
  fb::shutdown::installSignalThread();
  const int startupTimeout = fb::shutdown::timeoutFromArgs(argc, argv, 45);
  fb::shutdown::armStartupWatchdog(std::chrono::seconds(startupTimeout));
  fb::prepareMpiInit();  // FB_PROGRESS=block/yield: Open MPI yields too
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    fb::MpiBootstrap bs;  // collective: pids and hosts of every rank
    fb::shutdown::disarmStartupWatchdog();
    fb::setIdentity(bs.hostname(), bs.rank());
    fb::RunState state;
    // SIGCONT (the launcher is about to end the job, or it was resumed): rank 0 writes run.json
    // and report.md as interrupted now, while there is time; the run goes on if it may.
    fb::shutdown::onContinue([&bs, &state] {
      if (bs.rank() != 0 || !state.begun) return;
      fb::RunSummary sum;
      sum.ok = false;
      sum.status = fmt::format("interrupted (signal SIGCONT: the launcher is ending the job) after {} finished rows",
                               state.rows);
      fb::setDurableWrites(false);
      state.checkpoint(sum, std::chrono::milliseconds(300));
      fb::setDurableWrites(true);
    });
    // SIGTERM/SIGINT/SIGHUP: rank 0 finalises run.json and report.md with the finished rows.
    fb::shutdown::onSignal([&bs, &state](int sig) {
      if (bs.rank() != 0) return;
      std::string name = fb::shutdown::signalName(sig);
      std::int64_t rows = state.rows;
      if (state.begun) {
        fb::setDurableWrites(false);
        fb::RunSummary sum;
        sum.ok = false;
        sum.status = fmt::format("interrupted (signal {}) after {} finished rows", name, rows);
        state.endSoon(sum, std::chrono::milliseconds(300));
      }
      std::string dir = state.resultDir;
      std::string line = "fabricbench: interrupted by " + name +
                         (state.begun && !dir.empty()
                              ? fmt::format(": {} finished rows kept in {}/ (run.json, report.md)", rows, dir)
                              : std::string(": no result files were written")) + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
    });
    // Google Benchmark gets no flags: fabricbench reads --benchmark_* itself (gbench_flags.h), so
    // that only rank 0 reports and the outputs hold per-operation real time and bytes_per_second.
    std::vector<char*> gbArgs{argv[0]};
    int gbArgc = 1;
    benchmark::Initialize(&gbArgc, gbArgs.data());
    try {
      rc = fb::realMain(argc, argv, bs, state, startupTimeout);
    } catch (const fb::ConfigError& e) {
      if (bs.rank() == 0) ::fb::printLine("fabricbench: error: ", e.what());
      rc = 2;
    } catch (const std::exception& e) {
      fb::failJob(bs, state.begun ? &state : nullptr, e);
    }
    fb::shutdown::onSignal(nullptr);
    fb::shutdown::onContinue(nullptr);
    benchmark::Shutdown();
  }
  // Tests only (tests/mpi/faults.py, phase "shutdown"): a pause before shutdown, to stop a rank there.
  if (const char* p = std::getenv("FB_TEST_SHUTDOWN_PAUSE_MS"))
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(p)));
  fb::shutdown::armShutdownWatchdog(std::chrono::seconds(startupTimeout), rc);
  MPI_Finalize();
  return rc;
}

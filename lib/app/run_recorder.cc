#include "app/run_recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "app/shutdown.h"
#include "bootstrap/agree.h"
#include "report/run_folder.h"

namespace fb {

std::string rowKey(std::string_view coll, std::string_view impl, std::string_view dtype, bool inPlace,
                   std::size_t bytes) {
  return fmt::format("{}|{}|{}|{}|{}", coll, impl, dtype, inPlace ? "in" : "out", bytes);
}

ClaimedRun claimRunHere(const FolderRequest& f, const std::string& host) {
  namespace fs = std::filesystem;
  ClaimedRun run;
  run.runId = f.runId;
  try {
    if (run.runId.empty()) {
      run.runId = defaultRunId(host, f.suffix);
      if (f.writeFiles) run.runId = claimRunDir(f.resultsDir, run.runId);
    } else if (f.writeFiles) {
      fs::path dir = fs::path(f.resultsDir) / run.runId;
      if (!f.resume && !f.overwrite && fs::exists(dir))
        throw ConfigError("result folder " + dir.string() + " already exists (choose another --run-id)");
      if (f.overwrite && fs::exists(dir)) fs::remove_all(dir);
      if (f.resume && fs::exists(dir / "table.csv")) run.previousRows = readCsv((dir / "table.csv").string());
    }
  } catch (const std::exception& e) {
    throw ConfigError(e.what());  // one line, exit 2
  }
  for (const auto& r : run.previousRows) run.done.insert(rowKey(r.coll, r.impl, r.dtype, r.inPlace, r.bytes));
  return run;
}

FolderRequest folderRequest(std::string resultsDir, std::string runId, std::string suffix, bool writeFiles) {
  FolderRequest f;
  f.resultsDir = std::move(resultsDir);
  f.runId = std::move(runId);
  f.suffix = std::move(suffix);
  f.writeFiles = writeFiles;
  return f;
}

ClaimedRun claimRun(Bootstrap& bs, const FolderRequest& f) {
  ClaimedRun run;
  // Rank 0 claims; the others hear "<run id>\x1f<row keys, one a line>", or its error (every rank:
  // one line, exit 2).
  std::string claim = onRankZero(bs, "the result folder", [&] {
    run = claimRunHere(f, bs.hostname());
    std::string keys;
    for (const auto& k : run.done) keys += k + "\n";
    return run.runId + '\x1f' + keys;
  });
  auto sep = claim.find('\x1f');
  run.runId = claim.substr(0, sep);
  std::stringstream keys(claim.substr(sep + 1));
  run.done.clear();
  for (std::string k; std::getline(keys, k);) run.done.insert(k);
  return run;
}

void RunRecorder::beginFiles(const std::string& dir, RunMeta meta) {
  std::lock_guard<std::timed_mutex> lk(mu);
  meta.resultDir = dir;
  resultDir = dir;
  if (!dir.empty()) openFiles(dir, meta);
  begun = true;
}

void RunRecorder::add(const Sample& s, const std::string& backend, const std::string& name) {
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
      checkpointedRows = -1;  // run.json says "running" again
    } catch (const std::exception& e) {
      stopWriting(e.what(), rows - 1);
    }
  }
}

void RunRecorder::flushConsole() {
  std::lock_guard<std::timed_mutex> lk(mu);
  if (console && begun && !ended) console->flush();
}

void RunRecorder::openFiles(const std::string& dir, const RunMeta& meta) {
  resultDir = dir;
  csv = makeCsvSink(dir + "/table.csv");
  json = makeJsonSink(dir + "/run.json");
  md = makeMarkdownSink(dir + "/report.md");
  csv->begin(meta);
  json->begin(meta);
  md->begin(meta);
}

void RunRecorder::checkpoint(RunSummary sum, std::chrono::milliseconds wait) {
  bool locked = mu.try_lock_for(wait);
  if (begun && !ended && json && writeError.empty()) {
    sum.notes = notes;
    try {
      json->end(sum);
      md->end(sum);
      checkpointedRows = rows;
    } catch (const std::exception&) {
    }
  }
  if (locked) mu.unlock();
}

bool RunRecorder::stopRequested() {
  std::lock_guard<std::timed_mutex> lk(mu);
  return !writeError.empty();
}

void RunRecorder::end(RunSummary sum) {
  std::lock_guard<std::timed_mutex> lk(mu);
  endLocked(std::move(sum));
}

void RunRecorder::endSoon(RunSummary sum, std::chrono::milliseconds wait) {
  bool locked = mu.try_lock_for(wait);
  // The SIGCONT checkpoint already wrote these rows as interrupted: no second write. Open MPI's orted
  // sends SIGKILL right after SIGTERM, and a write cut between its link and rename left a temporary.
  if (locked && checkpointedRows == rows) dropFiles();
  endLocked(std::move(sum));
  if (locked) mu.unlock();
}

void RunRecorder::endLocked(RunSummary sum) {
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

void RunRecorder::stopWriting(const std::string& why, std::int64_t written) {
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
  ::fb::printLine(tool, ": error: writing results stopped: ", why, "; ", resultDir, "/run.json keeps the rows written before (marker WRITING-STOPPED.txt); the run stops");
}

void RunRecorder::handleSignals(bool writes, const std::string& tool) {
  handlers_ = true;
  this->tool = tool;
  // SIGCONT (the launcher is about to end the job, or it was resumed): rank 0 writes run.json
  // and report.md as interrupted now, while there is time; the run goes on if it may.
  shutdown::onContinue([writes, this] {
    if (!writes || !begun) return;
    RunSummary sum;
    sum.ok = false;
    sum.status = fmt::format("interrupted (signal SIGCONT: the launcher is ending the job) after {} finished rows", rows);
    setDurableWrites(false);
    checkpoint(sum, std::chrono::milliseconds(300));
    setDurableWrites(true);
  });
  // SIGTERM/SIGINT/SIGHUP: rank 0 finalises run.json and report.md with the finished rows.
  shutdown::onSignal([writes, this, tool](int sig) {
    if (!writes) return;
    std::string name = shutdown::signalName(sig);
    std::int64_t n = rows;
    if (begun) {
      setDurableWrites(false);
      RunSummary sum;
      sum.ok = false;
      sum.status = fmt::format("interrupted (signal {}) after {} finished rows", name, n);
      endSoon(sum, std::chrono::milliseconds(300));
    }
    std::string dir = resultDir;
    std::string line = tool + ": interrupted by " + name +
                       (begun && !dir.empty() ? fmt::format(": {} finished rows kept in {}/ (run.json, report.md)", n, dir)
                                              : std::string(": no result files were written")) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  });
}

void RunRecorder::stopHandlingSignals() {
  if (!handlers_) return;
  shutdown::onSignal(nullptr);
  shutdown::onContinue(nullptr);
  handlers_ = false;
}

RunRecorder::~RunRecorder() {
  stopHandlingSignals();
  if (gbConsoleFile) std::fclose(gbConsoleFile);
}

}  // namespace fb

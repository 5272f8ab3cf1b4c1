// Progress of a run on rank 0's stderr: "k/N rows, elapsed, ETA" at least every `interval`
// seconds while rows run (also while one long row runs), or a redrawn bar when stderr is a
// terminal. The table itself stays a line per size on stdout.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fb {

// One planned row: `group` is what shares a speed (backend label + collective), `bytes` its size.
struct PlannedRow {
  std::string group;
  std::size_t bytes = 0;
};
struct FinishedRow {
  std::string group;
  std::size_t bytes = 0;
  double seconds = 0;  // wall time of the row (warm-up, timed batches, check)
};

// Seconds a row of `bytes` in `group` is expected to take, from what the finished rows cost:
// linear in size between the group's finished rows (flat below the smallest; beyond the largest,
// the slope of its two largest), so rows of a latency-bound sweep are not scaled up with their
// size; a group with one finished row follows the other groups' growth; a group with none takes
// every group's rows. Negative when nothing has finished yet.
double estimateRowSeconds(const std::vector<FinishedRow>& done, const std::string& group, std::size_t bytes);
// "1:02:03" / "02:03".
std::string formatDuration(double seconds);

class Progress {
 public:
  // interval <= 0: silent. bar: draw a bar redrawn in place (stderr is a terminal).
  Progress(std::FILE* out, double intervalSeconds, bool bar);
  ~Progress();
  void plan(std::vector<PlannedRow> rows);
  void skipGroupPrefix(const std::string& prefix);  // a backend was skipped: its rows will not run
  void skip(std::size_t index);                      // one row will not run (a declined collective)
  void rowStart(std::size_t index, const std::string& name);
  void rowDone();
  // Around anything else written to the terminal (the table): the bar is wiped, then redrawn.
  void beforeOutput();
  void afterOutput();
  void stop();
  std::string line();  // the current progress text (tests)

 private:
  void loop();
  std::string lineLocked();
  void drawLocked(bool force);
  std::FILE* out_;
  double interval_;
  bool bar_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  std::vector<PlannedRow> plan_;
  std::vector<bool> skipped_;
  std::vector<FinishedRow> done_;
  std::size_t current_ = SIZE_MAX;
  std::size_t nextIndex_ = 0;  // rows before this one have finished (or were skipped)
  std::string currentName_;
  std::chrono::steady_clock::time_point t0_, rowT0_, lastPrint_;
  bool drawn_ = false;
};

}  // namespace fb

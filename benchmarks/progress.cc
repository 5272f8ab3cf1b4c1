#include "progress.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace fb {

double estimateRowSeconds(const std::vector<FinishedRow>& done, const std::string& group, std::size_t bytes) {
  const FinishedRow* best = nullptr;
  double bestDist = 0;
  for (int pass = 0; pass < 2 && !best; ++pass) {
    for (const auto& d : done) {
      if (pass == 0 && d.group != group) continue;
      double dist = std::fabs(std::log2(static_cast<double>(d.bytes) + 1) - std::log2(static_cast<double>(bytes) + 1));
      if (!best || dist < bestDist || (dist == bestDist && d.bytes > best->bytes)) {
        best = &d;
        bestDist = dist;
      }
    }
  }
  if (!best) return -1;
  double scale = bytes > best->bytes && best->bytes > 0 ? static_cast<double>(bytes) / static_cast<double>(best->bytes) : 1;
  return best->seconds * scale;
}

std::string formatDuration(double s) {
  if (!(s >= 0)) return "?";
  auto t = static_cast<long long>(std::llround(s));
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60);
  return fmt::format("{:02}:{:02}", t / 60, t % 60);
}

Progress::Progress(std::FILE* out, double interval, bool bar) : out_(out), interval_(interval), bar_(bar) {
  t0_ = lastPrint_ = std::chrono::steady_clock::now();
  if (interval_ > 0) thread_ = std::thread([this] { loop(); });
}

Progress::~Progress() { stop(); }

void Progress::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_) return;
    stop_ = true;
    if (bar_ && drawn_) {
      std::fputs("\r\033[K", out_);
      std::fflush(out_);
      drawn_ = false;
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Progress::plan(std::vector<PlannedRow> rows) {
  std::lock_guard<std::mutex> lk(mu_);
  plan_ = std::move(rows);
  skipped_.assign(plan_.size(), false);
}

void Progress::skipGroupPrefix(const std::string& prefix) {
  std::lock_guard<std::mutex> lk(mu_);
  for (std::size_t i = 0; i < plan_.size(); ++i)
    if (i >= nextIndex_ && i != current_ && plan_[i].group.rfind(prefix, 0) == 0) skipped_[i] = true;
}

void Progress::skip(std::size_t index) {
  std::lock_guard<std::mutex> lk(mu_);
  if (index < skipped_.size() && index != current_) skipped_[index] = true;
}

void Progress::rowStart(std::size_t index, const std::string& name) {
  std::lock_guard<std::mutex> lk(mu_);
  current_ = index;
  currentName_ = name;
  rowT0_ = std::chrono::steady_clock::now();
}

void Progress::rowDone() {
  std::lock_guard<std::mutex> lk(mu_);
  if (current_ >= plan_.size()) return;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - rowT0_).count();
  done_.push_back({plan_[current_].group, plan_[current_].bytes, s});
  skipped_[current_] = false;
  nextIndex_ = current_ + 1;
  current_ = SIZE_MAX;
}

std::string Progress::line() {
  std::lock_guard<std::mutex> lk(mu_);
  return lineLocked();
}

std::string Progress::lineLocked() {
  auto now = std::chrono::steady_clock::now();
  std::size_t total = 0;
  for (std::size_t i = 0; i < plan_.size(); ++i)
    if (!skipped_[i]) ++total;
  std::size_t k = done_.size();
  double elapsed = std::chrono::duration<double>(now - t0_).count();
  // ETA: the rows not yet finished (rows run in plan order), each estimated from the finished
  // rows nearest in size; the running row counts what it still needs.
  bool known = !done_.empty();
  double eta = 0;
  if (known) {
    std::size_t start = current_ != SIZE_MAX ? current_ : nextIndex_;
    for (std::size_t i = start; i < plan_.size(); ++i) {
      if (skipped_[i]) continue;
      double e = estimateRowSeconds(done_, plan_[i].group, plan_[i].bytes);
      if (i == current_) e = std::max(0.0, e - std::chrono::duration<double>(now - rowT0_).count());
      eta += e;
    }
  }
  std::string s = fmt::format("{}/{} rows, elapsed {}, ETA {}", k, total, formatDuration(elapsed),
                              known ? "~" + formatDuration(eta) : std::string("?"));
  if (current_ != SIZE_MAX)
    s += fmt::format(" ({} running for {:.0f} s)", currentName_,
                     std::chrono::duration<double>(now - rowT0_).count());
  return s;
}

void Progress::drawLocked(bool force) {
  if (stop_) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && std::chrono::duration<double>(now - lastPrint_).count() < interval_) return;
  lastPrint_ = now;
  if (bar_) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < plan_.size(); ++i)
      if (!skipped_[i]) ++total;
    int width = 24;
    int fill = total ? static_cast<int>(width * done_.size() / total) : 0;
    std::string b(static_cast<std::size_t>(fill), '#');
    b += std::string(static_cast<std::size_t>(width - fill), '.');
    std::string text = lineLocked();
    if (text.size() > 110) text = text.substr(0, 110);
    std::fprintf(out_, "\r[%s] %s\033[K", b.c_str(), text.c_str());
    drawn_ = true;
  } else {
    std::fprintf(out_, "progress: %s\n", lineLocked().c_str());
  }
  std::fflush(out_);
}

void Progress::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  auto tick = std::chrono::duration<double>(bar_ ? std::min(interval_, 0.5) : interval_ / 4);
  while (!stop_) {
    cv_.wait_for(lk, tick);
    if (stop_) break;
    if (plan_.empty()) continue;
    drawLocked(bar_);
  }
}

void Progress::beforeOutput() {
  std::lock_guard<std::mutex> lk(mu_);
  if (bar_ && drawn_) {
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
    drawn_ = false;
  }
}

void Progress::afterOutput() {
  std::lock_guard<std::mutex> lk(mu_);
  if (bar_ && interval_ > 0 && !plan_.empty()) drawLocked(true);
}

}  // namespace fb

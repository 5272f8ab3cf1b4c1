#include "app/progress.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace fb {

namespace {

// Piecewise linear in bytes through the finished rows (cost per row by size), flat below the
// smallest, and beyond the largest the slope of the two largest (never negative): latency-bound
// rows cost about the same at every size, bandwidth-bound ones grow with it. Negative: no rows.
double interpolate(std::vector<std::pair<double, double>> pts, double bytes) {
  if (pts.empty()) return -1;
  std::sort(pts.begin(), pts.end());
  // Several finished rows of one size: their mean.
  std::vector<std::pair<double, double>> u;
  std::vector<int> n;
  for (const auto& p : pts) {
    if (!u.empty() && u.back().first == p.first) {
      u.back().second += p.second;
      ++n.back();
    } else {
      u.push_back(p);
      n.push_back(1);
    }
  }
  for (std::size_t i = 0; i < u.size(); ++i) u[i].second /= n[i];
  if (bytes <= u.front().first) return u.front().second;
  for (std::size_t i = 1; i < u.size(); ++i)
    if (bytes <= u[i].first) {
      const auto& [b0, s0] = u[i - 1];
      const auto& [b1, s1] = u[i];
      return s0 + (s1 - s0) * (bytes - b0) / (b1 - b0);
    }
  if (u.size() == 1) return u.back().second;
  const auto& [b0, s0] = u[u.size() - 2];
  const auto& [b1, s1] = u.back();
  return s1 + std::max(0.0, (s1 - s0) / (b1 - b0)) * (bytes - b1);
}

}  // namespace

double estimateRowSeconds(const std::vector<FinishedRow>& done, const std::string& group, std::size_t bytes) {
  std::vector<std::pair<double, double>> mine, others, all;
  for (const auto& d : done) {
    all.emplace_back(static_cast<double>(d.bytes), d.seconds);
    (d.group == group ? mine : others).emplace_back(static_cast<double>(d.bytes), d.seconds);
  }
  const double b = static_cast<double>(bytes);
  // The group's own rows when two or more say how its cost grows with size; one row of the group
  // scaled as the other groups' rows grow between its size and this one; no row of the group:
  // every group's rows.
  if (mine.size() >= 2 || (mine.size() == 1 && others.size() < 2)) return interpolate(mine, b);
  if (mine.size() == 1) {
    double at = interpolate(others, mine[0].first), here = interpolate(others, b);
    return at > 0 ? mine[0].second * here / at : mine[0].second;
  }
  return interpolate(all, b);
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

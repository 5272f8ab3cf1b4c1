// The live console table: one line per row, flushed as each size finishes.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/result_sink.h"
#include "report/summary.h"

namespace fb {
namespace {

class ConsoleSink : public ResultSink {
 public:
  explicit ConsoleSink(std::FILE* out) : out_(out) {}

  void begin(const RunMeta& meta) override {
    std::string h;
    h += fmt::format("# fabricbench run {}\n", meta.runId);
    if (!meta.resultDir.empty()) h += fmt::format("# results: {}/ (table.csv, run.json, report.md)\n", meta.resultDir);
    h += "# time_us    = per operation (microseconds): median over the timed batches (repeats) of batch / iters,\n";
    h += "#              each batch's time combined over ranks (rank_time; --timer and -a say how, see run.json)\n";
    h += "# t_min/t_max= the fastest / slowest batch; p50/p99 (--per-op) = per-operation percentiles\n";
    h += "# algbw_GBps = size_bytes / time; GB = 1e9 bytes\n";
    h += "# busbw_GBps = algbw x factor: allreduce 2(n-1)/n; allgather, reducescatter (n-1)/n with\n";
    h += "#              size = total buffer; p2pring 1 (send right, receive left)\n";
    h += "# wrong      = wrong elements summed over ranks (N/A: not checked); %nominal = busbw / nominal link rate\n";
    put(h);
  }

  void add(const Sample& s) override {
    std::string key = s.coll + '\x1f' + s.impl + '\x1f' + s.path;
    std::string ip = s.impl + "/" + s.path;
    if (key != lastKey_) {
      lastKey_ = key;
      ipWidth_ = std::max<std::size_t>(12, ip.size());
      perOp_ = s.p50Us >= 0;
      std::string h = fmt::format("#\n# {}  impl={}  path={}  ({} ranks, {} node{})\n", s.coll, s.impl, s.path,
                                  s.nRanks, s.nNodes, s.nNodes == 1 ? "" : "s");
      h += fmt::format("# timer={} rank_time={} repeats={}", s.timer, s.rankTime, s.repeats);
      for (const auto& [k, v] : s.extra)
        if (k == "nominal_basis" && !v.empty()) h += "  nominal: " + v;
      h += "\n";
      h += fmt::format("# {:>12} {:>12} {:>8} {:>13} {:<{}} {:>5} {:>12} {:>11} {:>11} {:>8} {:>8} {:>10} {:>10}",
                       "size(B)", "count(elts)", "type", "coll", "impl/path", ipWidth_, "place", "time_us",
                       "algbw_GBps", "busbw_GBps", "wrong", "%nominal", "t_min_us", "t_max_us");
      if (perOp_) h += fmt::format(" {:>10} {:>10}", "p50_us", "p99_us");
      put(h + "\n");
    }
    std::string wrong = s.wrong < 0 ? "N/A" : std::to_string(s.wrong);
    std::string pct = s.pctNominal < 0 ? "-" : fmt::format("{:.1f}", s.pctNominal);
    keep(s);
    auto us = [](double v) { return v < 0 ? std::string("-") : fmt::format("{:.2f}", v); };
    std::string line = fmt::format("  {:>12} {:>12} {:>8} {:>13} {:<{}} {:>5} {:>12.2f} {:>11.3f} {:>11.3f} {:>8} {:>8} {:>10} {:>10}",
                                   s.bytes, s.count, s.dtype, s.coll, ip, ipWidth_, s.inPlace ? "in" : "out", s.timeUs,
                                   s.algBwGBps, s.busBwGBps, wrong, pct, us(s.timeUsMin), us(s.timeUsMax));
    if (perOp_) line += fmt::format(" {:>10} {:>10}", us(s.p50Us), us(s.p99Us));
    put(line + "\n");
  }

  void end(const RunSummary& summary) override {
    std::string t = fmt::format("#\n# status: {} ({})\n", summary.ok ? "ok" : "NOT OK", summary.status);
    for (const auto& n : summary.notes) t += "# note: " + n + "\n";
    t += consoleHeadline(keptRows());
    put(t);
  }

 private:
  // The headline needs, per series, its labels once and each size's figures: a long sweep keeps
  // a few numbers per row, not the row.
  struct Point {
    std::size_t bytes;
    double busBwGBps, timeUs;
    std::int64_t wrong;
  };
  void keep(const Sample& s) {
    std::size_t k = 0;
    while (k < heads_.size() && !(heads_[k].coll == s.coll && heads_[k].impl == s.impl && heads_[k].path == s.path &&
                                   heads_[k].dtype == s.dtype && heads_[k].inPlace == s.inPlace))
      ++k;
    if (k == heads_.size()) {
      Sample h;
      h.coll = s.coll, h.impl = s.impl, h.path = s.path, h.dtype = s.dtype, h.inPlace = s.inPlace;
      h.nRanks = s.nRanks, h.nNodes = s.nNodes;
      heads_.push_back(std::move(h));
      points_.emplace_back();
    }
    points_[k].push_back({s.bytes, s.busBwGBps, s.timeUs, s.wrong});
  }
  std::vector<Sample> keptRows() const {
    std::vector<Sample> rows;
    for (std::size_t k = 0; k < heads_.size(); ++k)
      for (const auto& p : points_[k]) {
        rows.push_back(heads_[k]);
        rows.back().bytes = p.bytes, rows.back().busBwGBps = p.busBwGBps, rows.back().timeUs = p.timeUs;
        rows.back().wrong = p.wrong;
      }
    return rows;
  }

  void put(const std::string& s) {
    std::fwrite(s.data(), 1, s.size(), out_);
    std::fflush(out_);
  }
  std::FILE* out_;
  std::string lastKey_;
  std::vector<Sample> heads_;               // one per series, labels only
  std::vector<std::vector<Point>> points_;  // per series, in arrival order
  std::size_t ipWidth_ = 12;
  bool perOp_ = false;
};

}  // namespace

std::string consoleHeadline(const std::vector<Sample>& rows) {
  auto series = groupSeries(rows);
  if (series.empty()) return "";
  auto size = [](std::size_t b) {
    const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (i < 4 && b >= 1024 && b % 1024 == 0) {
      b /= 1024;
      ++i;
    }
    return fmt::format("{} {}", b, u[i]);
  };
  std::size_t w = 0;
  for (const auto& s : series) w = std::max(w, (s.coll + " " + s.dtype + " " + s.label()).size());
  std::string t = fmt::format("#\n# headline: plateau busbw = median over sizes >= 1/4 of the largest; floor = smallest "
                              "time for sizes <= {}\n", size(kFloorMaxBytes));
  for (const auto& s : series) {
    double plateau = plateauBusBw(s.rows);
    double floor = smallMessageFloorUs(s.rows);
    std::size_t maxB = 0;
    for (const auto& r : s.rows) maxB = std::max(maxB, r.bytes);
    std::string p = std::isnan(plateau)
                        ? std::string("plateau busbw —")
                        : fmt::format("plateau busbw {:.3f} GB/s ({} … {})", plateau,
                                      size(static_cast<std::size_t>(std::ceil(static_cast<double>(maxB) * kPlateauFraction))),
                                      size(maxB));
    std::string f = "floor —";
    if (!std::isnan(floor))
      for (const auto& r : s.rows)
        if (r.timeUs == floor && r.bytes > 0 && r.bytes <= kFloorMaxBytes && r.wrong <= 0) {
          f = fmt::format("floor {:.2f} us ({})", floor, size(r.bytes));
          break;
        }
    t += fmt::format("#   {:<{}}  {}, {}\n", s.coll + " " + s.dtype + " " + s.label(), w, p, f);
  }
  return t;
}

std::unique_ptr<ResultSink> makeConsoleSink(std::FILE* out) { return std::make_unique<ConsoleSink>(out); }
std::unique_ptr<ResultSink> makeConsoleSink() { return makeConsoleSink(stdout); }

}  // namespace fb

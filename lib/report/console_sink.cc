// The live console table. Two layouts:
//   default (fits 120 columns): the path once per group (collective, dtype, impl, path), then one
//     row per size; where a collective is measured both ways, out-of-place and in-place side by
//     side in one row as nccl-tests prints them. The sweep measures every out-of-place size
//     before the in-place ones, so those out-of-place rows are held until their in-place partner
//     comes (the CSV and run.json have them at once; the progress line on stderr moves on).
//   --wide: today's full rows, one per placement, each flushed as it finishes.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/markdown_text.h"
#include "report/result_sink.h"
#include "report/summary.h"

namespace fb {
namespace {

// Columns on a terminal: UTF-8 continuation bytes take none ("…" is one column).
std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::string consoleComment(const std::string& text, std::size_t maxWidth, std::size_t indent) {
  std::string lead = "#" + std::string(indent, ' ');
  std::string line = lead + " " + text;
  if (maxWidth == 0 || columns(line) <= maxWidth) return line + "\n";
  // Break at spaces; continuation lines are indented two more columns.
  std::string out, cur = lead;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t sp = text.find(' ', pos);
    std::string word = text.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos);
    pos = sp == std::string::npos ? text.size() : sp + 1;
    if (word.empty()) continue;
    if (columns(cur) + 1 + columns(word) > maxWidth && columns(cur) > columns(lead) + 2) {
      out += cur + "\n";
      cur = lead + "  ";
    }
    cur += " " + word;
  }
  return out + cur + "\n";
}

namespace {

std::string us(double v) { return v < 0 ? std::string("-") : fmt::format("{:.2f}", v); }
std::string wrongText(const Sample& s) { return s.wrong < 0 ? "N/A" : std::to_string(s.wrong); }
std::string pctText(const Sample& s) { return s.pctNominal < 0 ? "-" : fmt::format("{:.1f}", s.pctNominal); }

// One placement's figures in the side-by-side layout: time, algbw, busbw, wrong, %nominal.
constexpr const char* kHalfFmt = " {:>10} {:>10} {:>10} {:>6} {:>5}";
std::string half(const Sample* s) {
  if (!s) return fmt::format(kHalfFmt, "-", "-", "-", "-", "-");
  return fmt::format(kHalfFmt, fmt::format("{:.2f}", s->timeUs), fmt::format("{:.3f}", s->algBwGBps),
                     fmt::format("{:.3f}", s->busBwGBps), wrongText(*s), pctText(*s));
}

class ConsoleSink : public ResultSink {
 public:
  ConsoleSink(std::FILE* out, ConsoleOptions opt) : out_(out), opt_(std::move(opt)) {}

  void begin(const RunMeta& meta) override {
    std::string h;
    h += fmt::format("# fabricbench run {}\n", meta.runId);
    if (!meta.resultDir.empty()) h += fmt::format("# results: {}/ (table.csv, run.json, report.md)\n", meta.resultDir);
    h += "# time_us    = per operation (microseconds): median over the timed batches (repeats) of batch / iters,\n";
    h += "#              each batch's time combined over ranks (rank_time; --timer and -a say how, see run.json)\n";
    if (opt_.wide) h += "# t_min/t_max= the fastest / slowest batch; p50/p99 (--per-op) = per-operation percentiles\n";
    h += "# algbw_GBps = size_bytes / time; GB = 1e9 bytes\n";
    h += "# busbw_GBps = algbw x factor: allreduce 2(n-1)/n; allgather, reducescatter (n-1)/n with\n";
    h += "#              size = total buffer; p2pring 1 (send right, receive left)\n";
    if (opt_.wide) {
      h += "# wrong      = wrong elements summed over ranks (N/A: not checked); %nominal = busbw / nominal link rate\n";
    } else {
      h += "# wrong      = wrong elements summed over ranks (N/A: not checked); %nom = busbw / nominal link rate\n";
      h += "# rows       = out-of-place | in-place side by side; --wide: one row per placement with t_min/t_max\n";
      h += "#              (and p50/p99 with --per-op); table.csv and run.json hold every column\n";
    }
    put(h);
  }

  void add(const Sample& s) override {
    keep(s);
    if (opt_.wide) return addWide(s);
    std::string key = s.coll + '\x1f' + s.impl + '\x1f' + s.path + '\x1f' + s.dtype;
    if (key != groupKey_) {
      flushPending();
      groupKey_ = key;
      headerShown_ = false;
      paired_ = opt_.paired.count(s.coll) > 0;
    }
    if (!paired_) {
      if (!headerShown_) groupHeader(s, false, s.inPlace ? "in-place" : "out-of-place", s.p50Us >= 0);
      putSingle(s);
      return;
    }
    if (!s.inPlace) {
      pending_.push_back(s);
      return;
    }
    // An in-place row: its out-of-place partner (same size) is among the held rows. Held rows
    // of smaller sizes that found no partner go first, with an empty in-place half.
    auto partner = std::find_if(pending_.begin(), pending_.end(),
                                [&](const Sample& o) { return o.bytes == s.bytes && o.count == s.count; });
    if (!headerShown_) groupHeader(s, true, "", false);
    std::string text;
    if (partner != pending_.end()) {
      for (auto it = pending_.begin(); it != partner; ++it) text += pairLine(&*it, nullptr);
      text += pairLine(&*partner, &s);
      pending_.erase(pending_.begin(), partner + 1);
    } else {
      text += pairLine(nullptr, &s);
    }
    put(text);
  }

  void flush() override { flushPending(); }

  void end(const RunSummary& summary) override {
    flushPending();
    std::string t = "#\n" + consoleComment(fmt::format("status: {} ({})", summary.ok ? "ok" : "NOT OK", summary.status),
                                          opt_.wide ? 0 : kConsoleWidth);
    for (const auto& n : summary.notes) t += consoleComment("note: " + n, opt_.wide ? 0 : kConsoleWidth);
    t += consoleHeadline(keptRows(), opt_.wide ? 0 : kConsoleWidth);
    put(t);
  }

 private:
  // ---- --wide: one row per placement, every column (the table as it was) ----
  void addWide(const Sample& s) {
    std::string key = s.coll + '\x1f' + s.impl + '\x1f' + s.path;
    std::string ip = s.impl + "/" + s.path;
    if (key != lastKey_) {
      lastKey_ = key;
      ipWidth_ = std::max<std::size_t>(12, ip.size());
      perOp_ = s.p50Us >= 0;
      std::string h = fmt::format("#\n# {}  impl={}  path={}  ({} ranks, {} node{})\n", s.coll, s.impl, s.path,
                                  s.nRanks, s.nNodes, s.nNodes == 1 ? "" : "s");
      h += timerLine(s);
      h += fmt::format("# {:>12} {:>12} {:>8} {:>13} {:<{}} {:>5} {:>12} {:>11} {:>11} {:>8} {:>8} {:>10} {:>10}",
                       "size(B)", "count(elts)", "type", "coll", "impl/path", ipWidth_, "place", "time_us",
                       "algbw_GBps", "busbw_GBps", "wrong", "%nominal", "t_min_us", "t_max_us");
      if (perOp_) h += fmt::format(" {:>10} {:>10}", "p50_us", "p99_us");
      put(h + "\n");
    }
    std::string line = fmt::format("  {:>12} {:>12} {:>8} {:>13} {:<{}} {:>5} {:>12.2f} {:>11.3f} {:>11.3f} {:>8} {:>8} {:>10} {:>10}",
                                   s.bytes, s.count, s.dtype, s.coll, ip, ipWidth_, s.inPlace ? "in" : "out", s.timeUs,
                                   s.algBwGBps, s.busBwGBps, wrongText(s), pctText(s), us(s.timeUsMin), us(s.timeUsMax));
    if (perOp_) line += fmt::format(" {:>10} {:>10}", us(s.p50Us), us(s.p99Us));
    put(line + "\n");
  }

  // ---- the default layout ----
  static std::string timerLine(const Sample& s) {
    std::string h = fmt::format("# timer={} rank_time={} repeats={}", s.timer, s.rankTime, s.repeats);
    for (const auto& [k, v] : s.extra)
      if (k == "nominal_basis" && !v.empty()) h += "  nominal: " + v;
    return h + "\n";
  }
  // The group's label, once: "# allreduce float32  impl=nccl  path=NVLink ...  (2 ranks, 1 node)".
  void groupHeader(const Sample& s, bool paired, const std::string& placement, bool perOp) {
    headerShown_ = true;
    perOp_ = perOp;
    std::string shape = fmt::format("({} ranks, {} node{}{}{})", s.nRanks, s.nNodes, s.nNodes == 1 ? "" : "s",
                                    placement.empty() ? "" : ", ", placement);
    std::string h = fmt::format("# {} {}  impl={}  path={}  {}", s.coll, s.dtype, s.impl, s.path, shape);
    if (columns(h) > kConsoleWidth)
      h = fmt::format("# {} {}  impl={}  {}\n# path={}", s.coll, s.dtype, s.impl, shape, s.path);
    h = "#\n" + h + "\n";
    h += timerLine(s);
    if (paired) {
      std::string over = fmt::format("# {:>11} {:>11} {:^46} {:^46}", "", "", "out-of-place", "in-place");
      h += over.substr(0, over.find_last_not_of(' ') + 1) + "\n";
      h += fmt::format("# {:>11} {:>11}", "size(B)", "count(elts)");
      for (int i = 0; i < 2; ++i)
        h += fmt::format(kHalfFmt, "time_us", "algbw_GBps", "busbw_GBps", "wrong", "%nom");
    } else {
      h += fmt::format("# {:>11} {:>11} {:>10} {:>10} {:>10} {:>6} {:>8} {:>10} {:>10}", "size(B)", "count(elts)",
                       "time_us", "algbw_GBps", "busbw_GBps", "wrong", "%nominal", "t_min_us", "t_max_us");
      if (perOp_) h += fmt::format(" {:>10} {:>10}", "p50_us", "p99_us");
    }
    put(h + "\n");
  }
  std::string pairLine(const Sample* out, const Sample* in) const {
    const Sample& any = out ? *out : *in;
    return fmt::format("  {:>11} {:>11}", any.bytes, any.count) + half(out) + " " + half(in) + "\n";
  }
  void putSingle(const Sample& s) {
    std::string line = fmt::format("  {:>11} {:>11} {:>10.2f} {:>10.3f} {:>10.3f} {:>6} {:>8} {:>10} {:>10}", s.bytes,
                                   s.count, s.timeUs, s.algBwGBps, s.busBwGBps, wrongText(s), pctText(s),
                                   us(s.timeUsMin), us(s.timeUsMax));
    if (perOp_) line += fmt::format(" {:>10} {:>10}", us(s.p50Us), us(s.p99Us));
    put(line + "\n");
  }
  // Held out-of-place rows that got no in-place partner: side by side with an empty half when
  // the group had in-place rows, else the one-placement layout.
  void flushPending() {
    if (pending_.empty()) return;
    if (headerShown_) {
      std::string text;
      for (const auto& o : pending_) text += pairLine(&o, nullptr);
      put(text);
    } else {
      groupHeader(pending_.front(), false, "out-of-place", pending_.front().p50Us >= 0);
      for (const auto& o : pending_) putSingle(o);
    }
    pending_.clear();
  }

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
  ConsoleOptions opt_;
  // --wide
  std::string lastKey_;
  std::size_t ipWidth_ = 12;
  // default layout
  std::string groupKey_;
  bool headerShown_ = false, paired_ = false;
  std::vector<Sample> pending_;  // out-of-place rows waiting for their in-place partner
  bool perOp_ = false;
  // headline
  std::vector<Sample> heads_;               // one per series, labels only
  std::vector<std::vector<Point>> points_;  // per series, in arrival order
};

}  // namespace

std::string consoleHeadline(const std::vector<Sample>& rows, std::size_t maxWidth) {
  auto series = groupSeries(rows);
  if (series.empty()) return "";
  using md::humanSize;
  std::size_t w = 0;
  for (const auto& s : series) w = std::max(w, (s.coll + " " + s.dtype + " " + s.label()).size());
  std::string t;
  std::size_t oneRank = 0;
  for (const auto& s : series) {
    // One rank crosses no link: no busbw, so no headline (the rows are in the table).
    if (std::none_of(s.rows.begin(), s.rows.end(), crossesLink)) {
      ++oneRank;
      continue;
    }
    double plateau = plateauBusBw(s.rows);
    double floor = smallMessageFloorUs(s.rows);
    std::size_t maxB = 0;
    for (const auto& r : s.rows) maxB = std::max(maxB, r.bytes);
    std::string p;
    const Sample* last = nullptr;
    const Sample* prev = nullptr;
    if (!plateauWarning(s.rows).empty()) {  // rows are sorted by size: the two largest valid ones
      for (const auto& r : s.rows)
        if (validRow(r) && r.bytes > 0) prev = last, last = &r;
    }
    if (last && prev) {
      p = fmt::format("rising, no plateau: busbw {:.3f} GB/s at {} (+{:.0f}% from {})", last->busBwGBps,
                      humanSize(last->bytes), 100.0 * (last->busBwGBps / prev->busBwGBps - 1), humanSize(prev->bytes));
    } else {
      p = std::isnan(plateau)
              ? std::string("plateau busbw —")
              : fmt::format("plateau busbw {:.3f} GB/s ({} … {})", plateau,
                            humanSize(static_cast<std::size_t>(std::ceil(static_cast<double>(maxB) * kPlateauFraction))),
                            humanSize(maxB));
    }
    std::string f = "floor —";
    if (!std::isnan(floor))
      for (const auto& r : s.rows)
        if (r.timeUs == floor && r.bytes > 0 && r.bytes <= kFloorMaxBytes && r.wrong <= 0) {
          f = fmt::format("floor {:.2f} us ({})", floor, humanSize(r.bytes));
          break;
        }
    std::string label = s.coll + " " + s.dtype + " " + s.label();
    std::string line = fmt::format("#   {:<{}}  {}, {}", label, w, p, f);
    // Too wide: the label on its own line, the figures under it.
    if (maxWidth > 0 && columns(line) > maxWidth)
      t += consoleComment(label, maxWidth, 2) + consoleComment(p + ", " + f, maxWidth, 6);
    else
      t += line + "\n";
  }
  // The legend only above figures it explains.
  std::string head = "#\n# headline:";
  if (!t.empty())
    head = fmt::format("#\n# headline: plateau busbw = median over sizes >= 1/4 of the largest; floor = smallest "
                       "time for sizes <= {}\n", humanSize(kFloorMaxBytes)) +
           fmt::format("#           \"rising, no plateau\": the largest size's busbw is > {:.0f}% above the size "
                       "before it", 100 * kPlateauRise);
  t = head + "\n" + t;
  if (oneRank > 0)
    t += consoleComment(fmt::format("{} series measured at 1 rank left out: no link crossed (busbw 0)", oneRank),
                        maxWidth, 2);
  return t;
}

std::unique_ptr<ResultSink> makeConsoleSink(std::FILE* out, const ConsoleOptions& opt) {
  return std::make_unique<ConsoleSink>(out, opt);
}
std::unique_ptr<ResultSink> makeConsoleSink(std::FILE* out) { return makeConsoleSink(out, ConsoleOptions{}); }
std::unique_ptr<ResultSink> makeConsoleSink() { return makeConsoleSink(stdout); }

}  // namespace fb

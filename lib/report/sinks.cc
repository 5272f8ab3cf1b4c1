// The CSV and Markdown sinks, the tee, and rank 0's usual set.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "report/result_sink.h"
#include "report/summary.h"

namespace fb {
namespace {

void ensureParent(const std::string& path) {
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
}

// table.csv: header at begin(), then one line per row, each written with one write() call and
// fsync'ed, so a killed run keeps every finished row whole.
class CsvSink : public ResultSink {
 public:
  explicit CsvSink(std::string path) : path_(std::move(path)) {}
  ~CsvSink() override {
    if (fd_ >= 0) ::close(fd_);
  }
  void begin(const RunMeta& meta) override {
    ensureParent(path_);
    // --resume: the earlier rows stay; new rows are appended after them.
    bool append = !meta.previousRows.empty();
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
    if (fd_ < 0) throw IoError("cannot create " + path_ + ": " + std::strerror(errno));
    if (append) return;
    std::string h;
    for (const auto& c : csvColumns()) h += (h.empty() ? "" : ",") + c;
    put(h + "\n");
  }
  void add(const Sample& s) override { put(csvLine(s) + "\n"); }
  void end(const RunSummary&) override {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  void put(const std::string& line) {
    if (fd_ < 0) throw Error("CSV sink: add() before begin()");
    std::size_t off = 0;
    while (off < line.size()) {
      ssize_t w = ::write(fd_, line.data() + off, line.size() - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        int e = errno;
        // A line cut short (disk full) is taken back: the file keeps whole rows only.
        if (off > 0 && ::ftruncate(fd_, static_cast<off_t>(size_)) == 0) ::lseek(fd_, static_cast<off_t>(size_), SEEK_SET);
        throw IoError("write " + path_ + ": " + std::strerror(e));
      }
      off += static_cast<std::size_t>(w);
    }
    if (::fsync(fd_) != 0) throw IoError("fsync " + path_ + ": " + std::strerror(errno));
    size_ += line.size();
  }
  std::string path_;
  int fd_ = -1;
  std::size_t size_ = 0;  // bytes of whole lines written
};

class MarkdownSink : public ResultSink {
 public:
  explicit MarkdownSink(std::string path) : path_(std::move(path)) {}
  void begin(const RunMeta& meta) override {
    meta_ = meta;
    rows_ = meta.previousRows;
    ensureParent(path_);
  }
  void add(const Sample& s) override { rows_.push_back(s); }
  void end(const RunSummary& summary) override {
    std::string dir = std::filesystem::path(path_).parent_path().string();
    writeFileAtomic(path_, renderRunReport(meta_, rows_, summary, dir.empty() ? "." : dir));
  }

 private:
  std::string path_;
  RunMeta meta_;
  std::vector<Sample> rows_;
};

class TeeSink : public ResultSink {
 public:
  explicit TeeSink(std::vector<std::unique_ptr<ResultSink>> s) : sinks_(std::move(s)) {}
  void begin(const RunMeta& m) override {
    for (auto& s : sinks_)
      if (s) s->begin(m);
  }
  void add(const Sample& x) override {
    for (auto& s : sinks_)
      if (s) s->add(x);
  }
  void end(const RunSummary& r) override {
    for (auto& s : sinks_)
      if (s) s->end(r);
  }
  void flush() override {
    for (auto& s : sinks_)
      if (s) s->flush();
  }

 private:
  std::vector<std::unique_ptr<ResultSink>> sinks_;
};

}  // namespace

std::unique_ptr<ResultSink> makeCsvSink(const std::string& path) { return std::make_unique<CsvSink>(path); }
std::unique_ptr<ResultSink> makeMarkdownSink(const std::string& path) { return std::make_unique<MarkdownSink>(path); }
std::unique_ptr<ResultSink> makeTeeSink(std::vector<std::unique_ptr<ResultSink>> sinks) {
  return std::make_unique<TeeSink>(std::move(sinks));
}

std::unique_ptr<ResultSink> makeRunSinks(const std::string& resultDir, bool console) {
  std::vector<std::unique_ptr<ResultSink>> v;
  if (console) v.push_back(makeConsoleSink());
  if (!resultDir.empty()) {
    v.push_back(makeCsvSink(resultDir + "/table.csv"));
    v.push_back(makeJsonSink(resultDir + "/run.json"));
    v.push_back(makeMarkdownSink(resultDir + "/report.md"));
  }
  return makeTeeSink(std::move(v));
}

}  // namespace fb

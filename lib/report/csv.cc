// table.csv: RFC 4180 quoting, one flushed line per row, a strict reader.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/timer_names.h"
#include "core/error.h"
#include "report/columns.h"
#include "report/csv.h"
#include "report/result_sink.h"

namespace fb {
namespace {

std::string quoteField(const std::string& f) {
  bool need = f.find_first_of(",\"\r\n") != std::string::npos ||
              (!f.empty() && (f.front() == ' ' || f.back() == ' '));
  if (!need) return f;
  std::string out = "\"";
  for (char c : f) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string num(double v) { return fmt::format("{}", v); }

}  // namespace

// One RFC 4180 splitter for every CSV reader. Strict throws on a truncated write (an unterminated
// quote or no end of line after the last record); Tolerant keeps that last record as it stands and
// skips blank lines, for files that may still be being written (the HTML report of a live run).
std::vector<CsvRecord> splitCsvRecords(const std::string& text, const std::string& source,
                                       CsvMode mode) {
  const bool strict = mode == CsvMode::Strict;
  std::vector<CsvRecord> out;
  std::size_t line = 1, i = 0, n = text.size();
  while (i < n) {
    CsvRecord rec{line, {}};
    std::string field;
    bool done = false;
    while (!done) {
      if (i < n && text[i] == '"') {  // quoted field
        ++i;
        while (true) {
          if (i >= n) {
            if (!strict) break;
            throw Error(fmt::format("{}: line {}: unterminated quoted field (truncated file?)", source,
                                    rec.line));
          }
          char c = text[i++];
          if (c == '"') {
            if (i < n && text[i] == '"') {
              field += '"';
              ++i;
            } else {
              break;
            }
          } else {
            if (c == '\n') ++line;
            field += c;
          }
        }
        if (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
          throw Error(fmt::format("{}: line {}: characters after a closing quote", source, line));
      } else {
        while (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
          if (text[i] == '"')
            throw Error(fmt::format("{}: line {}: quote inside an unquoted field", source, line));
          field += text[i++];
        }
      }
      rec.fields.push_back(std::move(field));
      field.clear();
      if (i >= n) {
        if (!strict) break;
        throw Error(fmt::format("{}: line {} is truncated (no end of line)", source, rec.line));
      }
      if (text[i] == ',') {
        ++i;
        continue;
      }
      if (text[i] == '\r') {
        ++i;
        if (i >= n || text[i] != '\n')
          throw Error(fmt::format("{}: line {}: stray carriage return", source, line));
      }
      ++i;  // '\n'
      ++line;
      done = true;
    }
    bool blank = rec.fields.size() == 1 && rec.fields[0].empty();
    if (strict || !blank) out.push_back(std::move(rec));
  }
  return out;
}

namespace {
// The whole file, for the readers below; throws fb::Error naming the file and the OS reason.
std::string fileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

std::vector<std::vector<std::string>> readCsvTable(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  for (auto& r : splitCsvRecords(fileText(path), path, CsvMode::Tolerant)) rows.push_back(std::move(r.fields));
  return rows;
}

namespace {

template <typename T>
T parseInt(const std::string& f, const char* col, const std::string& where) {
  T v{};
  auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (f.empty() || ec != std::errc() || p != f.data() + f.size())
    throw Error(fmt::format("{}: column {}: '{}' is not an integer", where, col, f));
  return v;
}

double parseDouble(const std::string& f, const char* col, const std::string& where) {
  double v = 0;
  auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (f.empty() || ec != std::errc() || p != f.data() + f.size())
    throw Error(fmt::format("{}: column {}: '{}' is not a number", where, col, f));
  return v;
}

}  // namespace

std::vector<std::string> csvColumns() {
  // Order: up to "extra" the first files' columns; then --timer/-a/--repeat/--per-op (files written
  // before them end at "extra"); then NCCL's attestation (files written before it end at "p99_us").
  std::vector<std::string> out;
  for (const auto& c : csvColumnDocs()) out.push_back(c.name);
  return out;
}

namespace {
constexpr std::size_t kLegacyColumns = 16;  // up to "extra"
constexpr std::size_t kTimerColumns = 25;   // up to "p99_us"
// The attestation columns: extra keys, in csvColumns' order after p99_us ("channels" is the
// operation's, extra "algo_channels"; extra "channels" is the channels NCCL connected).
const std::vector<std::string>& attestKeys() {
  static const std::vector<std::string> k = {"intra", "inter", "nics", "rails", "gdr", "pxn", "nvls",
                                             "algo", "proto", "algo_channels", "algo_source"};
  return k;
}
std::string optNum(double v) { return v < 0 ? std::string() : fmt::format("{}", v); }
}  // namespace

std::string encodeExtras(const std::vector<std::pair<std::string, std::string>>& extra) {
  auto esc = [](const std::string& s) {
    std::string o;
    for (char c : s) {
      if (c == '\\' || c == ';' || c == '=') o += '\\';
      o += c;
    }
    return o;
  };
  std::string out;
  for (std::size_t i = 0; i < extra.size(); ++i) {
    if (i) out += ';';
    out += esc(extra[i].first) + "=" + esc(extra[i].second);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> decodeExtras(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  if (text.empty()) return out;
  std::string key, val;
  bool inVal = false;
  auto finish = [&] {
    if (!inVal) throw Error("extra column: entry '" + key + "' has no '=' (expected key=value;...)");
    out.emplace_back(key, val);
    key.clear();
    val.clear();
    inVal = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\') {
      if (i + 1 >= text.size()) throw Error("extra column: dangling backslash at the end");
      (inVal ? val : key) += text[++i];
    } else if (c == '=' && !inVal) {
      inVal = true;
    } else if (c == ';') {
      finish();
    } else {
      (inVal ? val : key) += c;
    }
  }
  finish();
  return out;
}

std::string csvLine(const Sample& s) {
  std::vector<std::string> f = {
      std::to_string(s.bytes),
      std::to_string(s.count),
      s.dtype,
      s.coll,
      s.impl,
      s.path,
      s.inPlace ? "in" : "out",
      std::to_string(s.nRanks),
      std::to_string(s.nNodes),
      std::to_string(s.iters),
      num(s.timeUs),
      num(s.algBwGBps),
      num(s.busBwGBps),
      s.wrong < 0 ? std::string() : std::to_string(s.wrong),
      s.pctNominal < 0 ? std::string() : num(s.pctNominal),
      encodeExtras(s.extra),
      s.timer,
      s.rankTime,
      std::to_string(s.repeats),
      optNum(s.timeUsMin),
      optNum(s.timeUsMax),
      optNum(s.busBwMin()),
      optNum(s.busBwMax()),
      optNum(s.p50Us),
      optNum(s.p99Us),
  };
  for (const auto& k : attestKeys()) {
    std::string v;
    for (const auto& [ek, ev] : s.extra)
      if (ek == k) v = ev;
    f.push_back(v);
  }
  std::string line;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (i) line += ',';
    line += quoteField(f[i]);
  }
  return line;
}

std::vector<Sample> parseCsv(const std::string& text, const std::string& source) {
  if (text.empty()) throw Error(source + ": empty file (no header line)");
  auto records = splitCsvRecords(text, source, CsvMode::Strict);
  auto cols = csvColumns();
  // Tables written before --timer/--repeat end at "extra"; they read as the rank timer, max, 1 batch.
  if (records.front().fields.size() == kLegacyColumns &&
      std::equal(cols.begin(), cols.begin() + kLegacyColumns, records.front().fields.begin()))
    cols.resize(kLegacyColumns);
  // Tables written before the attestation columns end at "p99_us" (the values are in extra anyway).
  if (records.front().fields.size() == kTimerColumns &&
      std::equal(cols.begin(), cols.begin() + kTimerColumns, records.front().fields.begin()))
    cols.resize(kTimerColumns);
  if (records.front().fields != cols)
    throw Error(source + ": line 1 is not the fabricbench table.csv header (expected " +
                [&] {
                  std::string h;
                  for (auto& c : cols) h += (h.empty() ? "" : ",") + c;
                  return h;
                }() + ")");
  std::vector<Sample> out;
  for (std::size_t r = 1; r < records.size(); ++r) {
    const auto& rec = records[r];
    std::string where = fmt::format("{}: line {}", source, rec.line);
    const auto& f = rec.fields;
    if (f.size() != cols.size())
      throw Error(fmt::format("{}: {} fields, expected {} (truncated or malformed line)", where, f.size(),
                              cols.size()));
    Sample s;
    s.bytes = parseInt<std::size_t>(f[0], "size_bytes", where);
    s.count = parseInt<std::size_t>(f[1], "count", where);
    s.dtype = f[2];
    s.coll = f[3];
    s.impl = f[4];
    s.path = f[5];
    if (f[6] == "in") s.inPlace = true;
    else if (f[6] == "out") s.inPlace = false;
    else throw Error(fmt::format("{}: column placement: '{}' is not 'in' or 'out'", where, f[6]));
    s.nRanks = parseInt<int>(f[7], "nranks", where);
    s.nNodes = parseInt<int>(f[8], "nnodes", where);
    s.iters = parseInt<int>(f[9], "iters", where);
    s.timeUs = parseDouble(f[10], "time_us", where);
    s.algBwGBps = parseDouble(f[11], "algbw_GBps", where);
    s.busBwGBps = parseDouble(f[12], "busbw_GBps", where);
    s.wrong = f[13].empty() ? -1 : parseInt<std::int64_t>(f[13], "wrong", where);
    s.pctNominal = f[14].empty() ? -1 : parseDouble(f[14], "pct_nominal", where);
    try {
      s.extra = decodeExtras(f[15]);
    } catch (const Error& e) {
      throw Error(where + ": " + e.what());
    }
    if (cols.size() > kLegacyColumns) {
      auto opt = [&](std::size_t i, const char* col) { return f[i].empty() ? -1.0 : parseDouble(f[i], col, where); };
      s.timer = normalizeRowTimer(f[16], s.impl);  // old files: gpu / host
      s.rankTime = f[17];
      s.repeats = parseInt<int>(f[18], "repeats", where);
      s.timeUsMin = opt(19, "time_us_min");
      s.timeUsMax = opt(20, "time_us_max");
      s.p50Us = opt(23, "p50_us");
      s.p99Us = opt(24, "p99_us");
    }
    if (cols.size() == kLegacyColumns) s.timer = normalizeRowTimer("gpu", s.impl);  // before --timer: the rank timer
    if (s.coll.empty() || s.impl.empty())
      throw Error(where + ": empty coll or impl");
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Sample> readCsv(const std::string& path) { return parseCsv(fileText(path), path); }

namespace {
std::atomic<bool> g_durable{true};
// writeFileAtomic's temporaries that have a name and are not yet renamed, by folder descriptor and name. A
// writer names one (links it, or creates it where there is no O_TMPFILE) and renames it under g_tmpMu, so
// dropTemporariesForExit, which takes the lock and keeps it, sees every named one and lets no new one be named.
std::timed_mutex g_tmpMu;
std::set<std::pair<int, std::string>> g_tmpNamed;  // (folder fd, name); names are unique (pid, counter)
}  // namespace

void setDurableWrites(bool on) { g_durable = on; }

void dropTemporariesForExit() {
  // Never unlocked: the process is ending. A writer stuck in a link or rename (a hung file system) holds it: then
  // leave without the clean-up rather than not at all.
  if (!g_tmpMu.try_lock_for(std::chrono::milliseconds(200))) return;
  for (const auto& [dirFd, name] : g_tmpNamed) ::unlinkat(dirFd, name.c_str(), 0);
  g_tmpNamed.clear();
}

void writeFileAtomic(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  // The temporary file is made, and removed on failure, through a descriptor of the folder: a
  // folder moved away meanwhile takes no stray temporary with it. The rename goes to the path,
  // so a vanished folder is still found out.
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd < 0) throw IoError("cannot open the folder of " + path + ": " + std::strerror(errno));
  static std::atomic<unsigned> counter{0};
  auto nextName = [&] { return fmt::format(".{}.tmp.{}.{}", target.filename().string(), ::getpid(), counter++); };
  std::string tmpName;
  // An unnamed file (O_TMPFILE) gets its name only once written and synced, just before the
  // rename: a rank killed meanwhile (SIGKILL from the launcher) leaves nothing behind. File systems
  // without O_TMPFILE get a named temporary from the start. Either is named, recorded and renamed
  // under g_tmpMu, which the signal thread's exit takes and keeps (dropTemporariesForExit): a SIGTERM
  // between link and rename left one as a stray file in 1 of 30 fault trials (np 4).
  int fd = ::openat(dirFd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0644);
  const bool unnamed = fd >= 0;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmpName = nextName();
    std::lock_guard<std::timed_mutex> lk(g_tmpMu);
    fd = ::openat(dirFd, tmpName.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) g_tmpNamed.insert({dirFd, tmpName});
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int e = errno;
    ::close(dirFd);
    throw IoError("cannot create a temporary file next to " + path + ": " + std::strerror(e));
  }
  if (unnamed) tmpName = nextName();  // the name it is linked under before the rename
  const std::string tmp = (dir / tmpName).string();
  bool named = !unnamed;
  auto fail = [&](const std::string& what, int e, bool open) {
    if (open) ::close(fd);
    if (named) {
      std::lock_guard<std::timed_mutex> lk(g_tmpMu);
      ::unlinkat(dirFd, tmpName.c_str(), 0);
      g_tmpNamed.erase({dirFd, tmpName});
    }
    ::close(dirFd);
    throw IoError(what + ": " + std::strerror(e));
  };
  std::size_t off = 0;
  while (off < content.size()) {
    ssize_t w = ::write(fd, content.data() + off, content.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write " + tmp + " (for " + path + ")", errno, true);
    }
    off += static_cast<std::size_t>(w);
  }
  if (::fchmod(fd, 0644) != 0) fail("chmod " + tmp + " (for " + path + ")", errno, true);
  if (g_durable && ::fsync(fd) != 0) fail("fsync " + tmp + " (for " + path + ")", errno, true);
  if (unnamed) {
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    int e = 0;
    {
      std::lock_guard<std::timed_mutex> lk(g_tmpMu);
      if (::linkat(AT_FDCWD, self.c_str(), dirFd, tmpName.c_str(), AT_SYMLINK_FOLLOW) == 0) {
        g_tmpNamed.insert({dirFd, tmpName});
        named = true;
      } else {
        e = errno;
      }
    }
    if (!named) fail("link " + tmp + " (for " + path + ")", e, true);
  }
  if (::close(fd) != 0) fail("close " + tmp, errno, false);
  {
    std::unique_lock<std::timed_mutex> lk(g_tmpMu);
    if (::renameat(dirFd, tmpName.c_str(), AT_FDCWD, path.c_str()) != 0) {
      const int e = errno;
      lk.unlock();
      fail("rename " + tmp + " -> " + path, e, false);
    }
    g_tmpNamed.erase({dirFd, tmpName});
  }
  if (g_durable) ::fsync(dirFd);  // make the rename durable; best effort
  ::close(dirFd);
}

}  // namespace fb

#include "app/validate.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/units.h"
#include "app/backends.h"

namespace fb {
namespace {


std::size_t rowsPerBackend(const Options& o) {
  std::size_t perSize = 0;
  for (CollKind k : o.colls)
    for (bool inPlace : o.placements) perSize += !(inPlace && k == CollKind::kP2PRing);
  std::size_t sizes = o.counts.empty() ? o.sweepSizes : o.counts.size();
  return sizes * perSize * o.dtypes.size();
}

// The largest buffer one rank allocates (bytes of the largest row), or throws when a count
// overflows the byte count.
std::size_t largestRow(const Options& o, int nranks) {
  if (o.counts.empty()) return o.maxBytes;
  std::size_t most = 0;
  for (std::size_t c : o.counts)
    for (DataType dt : o.dtypes) {
      std::size_t per = dtypeSize(dt) * static_cast<std::size_t>(nranks);  // allgather/reducescatter total
      if (c > SIZE_MAX / per)
        throw ConfigError(fmt::format("--counts: {} elements of {} at {} ranks overflow a byte count", c, dtypeName(dt),
                                      nranks));
      most = std::max(most, c * per);
    }
  return most;
}

void checkResultFolder(const Options& o) {
  namespace fs = std::filesystem;
  // Room for what goes inside: ".report.md.tmp.XXXXXX", "logs/nccl-rank-N.log".
  constexpr std::size_t kInside = 64;
  if (o.runId.size() > 200)
    throw ConfigError(fmt::format("--run-id is {} characters long (at most 200)", o.runId.size()));
  std::string full = (fs::path(o.resultsDir) / (o.runId.empty() ? std::string(64, 'x') : o.runId)).string();
  if (full.size() + kInside >= PATH_MAX)
    throw ConfigError(fmt::format("--results-dir is too long: the result folder's path would be {} characters "
                                  "(at most {})", full.size(), PATH_MAX - kInside - 1));
  for (const auto& part : fs::path(o.resultsDir))
    if (part.native().size() > NAME_MAX)
      throw ConfigError(fmt::format("--results-dir: a folder name of {} characters (at most {})", part.native().size(),
                                    NAME_MAX));
  std::error_code ec;
  if (!o.runId.empty() && !o.resume && !o.overwrite && !o.gb.listTests && fs::exists(fs::path(o.resultsDir) / o.runId, ec))
    throw ConfigError("result folder " + (fs::path(o.resultsDir) / o.runId).string() +
                      " already exists (choose another --run-id, or --resume to measure only its missing rows, "
                      "or --overwrite)");
  // The nearest folder that exists must be a writable folder on a writable file system; every
  // existing part of the path must be a folder.
  fs::path p = fs::absolute(fs::path(o.resultsDir), ec);
  if (ec) throw ConfigError("--results-dir '" + o.resultsDir + "': " + ec.message());
  fs::path probe = p;
  while (!fs::exists(probe, ec)) {
    if (!probe.has_parent_path() || probe.parent_path() == probe) break;
    probe = probe.parent_path();
  }
  auto st = fs::status(probe, ec);
  if (ec) throw ConfigError("--results-dir '" + o.resultsDir + "': " + probe.string() + ": " + ec.message());
  if (!fs::is_directory(st))
    throw ConfigError("--results-dir '" + o.resultsDir + "': " + probe.string() + " is not a folder");
  if (::access(probe.c_str(), W_OK | X_OK) != 0)
    throw ConfigError("--results-dir '" + o.resultsDir + "': cannot write in " + probe.string() + ": " +
                      std::strerror(errno));
  struct statvfs vfs{};
  if (::statvfs(probe.c_str(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY))
    throw ConfigError("--results-dir '" + o.resultsDir + "': " + probe.string() + " is on a read-only file system");
}

}  // namespace

void validateOnThisRank(const Options& o, int nranks, int rank, const std::string& hostname) {
  // Sizes: no sweep whose every row is empty, no count that overflows, no buffer beyond memory.
  if (o.counts.empty()) {
    for (DataType dt : o.dtypes)
      if (o.maxBytes < dtypeSize(dt))
        throw ConfigError(fmt::format("--maxbytes {} B is less than one {} element ({} B): every row would be empty "
                                      "(use --counts 0 to time empty operations)",
                                      o.maxBytes, dtypeName(dt), dtypeSize(dt)));
  }
  std::size_t largest = largestRow(o, nranks);
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) {
    auto mem = static_cast<unsigned long long>(pages) * static_cast<unsigned long long>(page);
    if (largest > mem / 2)
      throw ConfigError(fmt::format("a row of {} needs at least two buffers of that size per rank, more than this "
                                    "node's memory ({}) allows (lower -e/--maxbytes or --counts)",
                                    formatSize(largest), formatSize(mem)));
  }
  // A sweep much longer than intended (-i 1 -e 1M) needs --force.
  std::size_t rows = rowsPerBackend(o);
  if (rows > kMaxRowsWithoutForce && !o.force)
    throw ConfigError(fmt::format("this sweep has {}{} rows per backend, more than {}: give --force to run it (or a "
                                  "larger -f/-i, fewer --counts)",
                                  o.counts.empty() && o.sweepSizes > kMaxRowsWithoutForce ? "over " : "", rows,
                                  kMaxRowsWithoutForce));
  // Google Benchmark's flags (the filter's regular expression included) are checked by
  // takeBenchmarkFlags (gbench_flags.cc) while parsing.
  // Backend settings that can be checked without opening anything.
  for (const auto& e : backendTable())
    if (e.checkOnThisRank) e.checkOnThisRank(o, hostname);
  if (rank == 0 && o.writeFiles && !o.list) checkResultFolder(o);
}

}  // namespace fb

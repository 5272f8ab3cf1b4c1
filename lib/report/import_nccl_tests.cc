// nccl-tests output as people publish it: every 2.x format, several runs a file, the collective, ranks and nodes of
// each, its rows as Samples (the lines around the table, prefixes and NCCL INFO: nccl_tests_lines.cc).
#include <algorithm>
#include <regex>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "collectives/spec.h"
#include "core/error.h"
#include "core/text.h"
#include "report/import.h"
#include "report/nccl_tests_lines.h"

namespace fb {
namespace {

namespace fs = std::filesystem;
using namespace nccltests;

// Canonical Sample::coll names (as lib/collectives' descriptors and the rest of the suite name them).
const std::map<std::string, std::string>& binaries() {
  static const std::map<std::string, std::string> m = {
      {"all_reduce_perf", "allreduce"},         {"all_gather_perf", "allgather"},
      {"reduce_scatter_perf", "reducescatter"}, {"sendrecv_perf", "p2pring"},
      {"alltoall_perf", "alltoall"},            {"broadcast_perf", "broadcast"},
      {"reduce_perf", "reduce"},                {"gather_perf", "gather"},
      {"scatter_perf", "scatter"},              {"hypercube_perf", "hypercube"}};
  return m;
}

// "./build/all_reduce_perf_mpi" -> "allreduce" (NAME_SUFFIX variants and path prefixes); "" if none.
std::string collOfToken(std::string tok, std::string* binary = nullptr) {
  while (!tok.empty() && (tok.back() == '"' || tok.back() == '\'' || tok.back() == ';' || tok.back() == ','))
    tok.pop_back();
  auto slash = tok.find_last_of('/');
  std::string base = slash == std::string::npos ? tok : tok.substr(slash + 1);
  while (!base.empty() && (base.front() == '"' || base.front() == '\'')) base.erase(0, 1);
  for (auto& [b, c] : binaries()) {
    bool suffixed = base.size() > b.size() && (base[b.size()] == '_' || base[b.size()] == '.');
    if (base == b || (text::startsWith(base, b) && suffixed)) {
      if (binary) *binary = base;
      return c;
    }
  }
  return "";
}

// A collective named beside a file (FILE:coll=...): the descriptors' names and aliases (lib/collectives), nccl-tests'
// reduce, gather and scatter (no descriptor: read, never run), or a binary's name.
std::string collFromUser(const std::string& s) {
  std::string l = text::lower(s);
  if (auto k = parseCollKind(l)) return std::string(collName(*k));
  if (l == "reduce" || l == "gather" || l == "scatter") return l;
  return collOfToken(l);
}

// The suite's name for an nccl-tests type (an unknown one as printed).
std::string dtypeOf(const std::string& t) {
  const NcclTestsType* e = ncclTestsType(t);
  return e ? e->dtype : t;
}

// One run of a file: what its header, rank lines and command lines say, its INFO facts, its rows.
struct RunState : InfoFacts {
  std::string version, binary, coll, ncclLibrary;
  std::set<std::string> hosts;
  std::vector<std::string> hostOrder;
  std::set<int> ranks;
  std::map<std::string, int> ranksPerHost;
  struct RankLine {
    int rank = 0, device = -1;
    std::string host, busId, gpu;
  };
  std::vector<RankLine> rankLines;  // in log order, for the fingerprint's hosts
  std::string gpu;
  bool elided = false;
  std::string twiceListed;  // "rank 0 on hosts a and b": a rank listed twice, the lines of two runs interleaved
  int nThread = 0, nGpus = 0;
  int launcherNp = 0;
  bool headerSeen = false;
  bool cputime = false;  // the column header says cputime (nccl-tests -C 1)
  HeaderShape shape;     // what the column header names
  bool rccl = false;     // rccl-tests (AMD's port) printed this run: its version line, its path, RCCL's own lines
  struct Row {
    std::vector<std::string> w;
    std::size_t line;
  };
  std::vector<Row> rows;
  std::size_t firstLine = 0;
  bool hasContent() const { return !rows.empty(); }
};

// NCCL_X=Y in a command line (also "-x NCCL_X=Y", "export NCCL_X=Y").
void envFromCommand(const std::string& l, std::map<std::string, std::string>& env) {
  for (auto& w : text::words(l)) {
    auto eq = w.find('=');
    if (text::startsWith(w, "NCCL_") && eq != std::string::npos && eq > 5) {
      std::string v = w.substr(eq + 1);
      while (!v.empty() && (v.back() == '"' || v.back() == '\'' || v.back() == '\\')) v.pop_back();
      env[w.substr(0, eq)] = v;
    }
  }
}

// mpirun/srun "-np N" / "-n N" / "--np N" / "--ntasks=N" before the binary.
int launcherRanks(const std::string& l) {
  auto w = text::words(l);
  bool launcher = false;
  int np = 0;
  for (std::size_t k = 0; k < w.size(); ++k) {
    std::string base = w[k].substr(w[k].find_last_of('/') == std::string::npos ? 0 : w[k].find_last_of('/') + 1);
    if (base == "mpirun" || base == "mpiexec" || base == "srun" || base == "orterun" || base == "prterun") {
      launcher = true;
      continue;
    }
    if (!launcher) continue;
    if (!collOfToken(w[k]).empty()) break;
    auto num = [&](const std::string& s) {
      std::size_t v = 0;
      return text::toUnsigned(s, v) ? static_cast<int>(v) : 0;
    };
    if ((w[k] == "-np" || w[k] == "-n" || w[k] == "--np" || w[k] == "--ntasks" || w[k] == "-c") && k + 1 < w.size()) {
      if (w[k] != "-c") np = num(w[k + 1]);
    } else if (text::startsWith(w[k], "--ntasks=")) {
      np = num(w[k].substr(9));
    } else if (text::startsWith(w[k], "--np=")) {
      np = num(w[k].substr(5));
    }
  }
  return np;
}

// Where a row's figures sit, as its header names them: size count type [redop] [root], then time algbw busbw
// #wrong (or error) out of place and in place; -I 1 (2.19+) adds i_min i_max i_p99 i_cv% after each placement's
// four; -S 1 (report_timestamps) ends the row with a "YYYY-MM-DD HH:MM:SS" timestamp (dropped from w). Without a
// known header: 13 words, 12 (no root) or 21 (-I 1). nullopt: no layout.
struct RowLayout {
  std::size_t first = 5, stride = 4;       // placement p's time is w[first + p * stride]
  std::optional<std::size_t> redop, root;  // where the row's redop and root are, where it has them
  bool maxError = false;                   // the column after busbw is a max error (2.0-era), not #wrong
};
std::optional<RowLayout> rowLayout(std::vector<std::string>& w, const HeaderShape& h) {
  auto isDate = [](const std::string& x) {
    return x.size() == 10 && x[4] == '-' && x[7] == '-' && std::isdigit(static_cast<unsigned char>(x[0]));
  };
  if (w.size() >= 2 && isDate(w[w.size() - 2]) && w.back().size() == 8 && w.back()[2] == ':') w.resize(w.size() - 2);
  auto byCount = [&]() -> std::optional<RowLayout> {
    if (w.size() == 13) return RowLayout{5, 4, 3, 4};
    if (w.size() == 12) return RowLayout{4, 4, 3, std::nullopt, true};
    if (w.size() == 21) return RowLayout{5, 8, 3, 4};
    return std::nullopt;
  };
  if (!h.known) return byCount();
  RowLayout lay;
  lay.stride = h.stride;
  lay.maxError = h.maxError;
  std::size_t p = 3;
  double num = 0;
  if (h.redop && p < w.size() && !text::toDouble(w[p], num)) lay.redop = p++;  // a blank redop leaves no word
  if (h.root) lay.root = p++;
  lay.first = p;
  if (w.size() != p + 2 * h.stride) return byCount();  // a header that was cut or edited: the words' count decides
  return lay;
}

// Bytes of one element of an nccl-tests type column; 0 when the type is not one it prints.
std::size_t elemBytes(const std::string& type) {
  const NcclTestsType* e = ncclTestsType(type);
  return e ? e->bytes : 0;
}

// Half a unit of a printed figure's last digit: how far the value it stands for may be from it ("1e+06", which
// nccl-tests prints where a figure outgrows its column, stands for 0.5e6-1.5e6).
double halfDigit(const std::string& s) {
  const auto e = s.find_first_of("eE");
  const std::string mant = s.substr(0, e);
  const double scale = e == std::string::npos ? 1.0 : std::pow(10.0, std::atof(s.c_str() + e + 1));
  const auto dot = mant.find('.');
  return scale * 0.5 * std::pow(10.0, -(dot == std::string::npos ? 0.0 : static_cast<double>(mant.size() - dot - 1)));
}

// Which collectives a run's rows fit when the log does not say, read off its largest row: nccl-tests' count column is
// the per-call count (size / element for AllReduce and SendRecv, / ranks too for AllGather, ReduceScatter and
// AllToAll), a root >= 0 is Broadcast or Reduce, and busbw / algbw is 1 for SendRecv but above 1 for AllReduce past
// 2 ranks. `suggest`: the :coll= values to offer, most likely first (none for Reduce); fits empty when the row does
// not parse.
struct CollGuess {
  std::string fits;
  std::vector<std::string> suggest;
};
CollGuess collCandidates(const std::vector<std::string>& w, const HeaderShape& h) {
  std::size_t bytes = 0, count = 0;
  const std::size_t elem = w.size() >= 4 ? elemBytes(w[2]) : 0;
  if (elem == 0 || !text::toUnsigned(w[0], bytes) || !text::toUnsigned(w[1], count) || count == 0) return {};
  const std::size_t per = bytes / (count * elem);
  auto row = w;
  const auto lay = rowLayout(row, h);
  if (!lay) return {};
  // No redop printed (2.0-era AllGather and Broadcast, a blank one in an old AllToAll): nothing is reduced.
  const std::string redop = lay->redop ? row[*lay->redop] : "";
  const bool reduces = !redop.empty() && redop != "none";
  const bool blankRedop = h.known && h.redop && !lay->redop;  // only nccl-tests' old AllToAll left it blank
  const bool rooted = lay->root && row[*lay->root] != "-1";
  double alg = 0, bus = 0;
  bool ratioOne = false, ratioAbove = false;
  const std::size_t b = lay->first;
  if (text::toDouble(row[b + 1], alg) && text::toDouble(row[b + 2], bus) && alg - halfDigit(row[b + 1]) > 0) {
    const double da = halfDigit(row[b + 1]), db = halfDigit(row[b + 2]);
    ratioAbove = (bus - db) / (alg + da) > 1;
    ratioOne = !ratioAbove && (bus + db) / (alg - da) >= 1;
  }
  const std::string what =
      fmt::format("{}, count = size / {}{}{}", blankRedop ? "a blank redop" : redop.empty() ? "no redop" : "redop " + redop,
                  elem, per > 1 ? fmt::format(" / {}", per) : "", rooted ? ", root " + row[*lay->root] : "");
  auto guess = [&](const std::string& fits, std::vector<std::string> suggest) {
    return CollGuess{fmt::format("its rows ({}) fit {}", what, fits), std::move(suggest)};
  };
  if (rooted) return reduces ? guess("reduce, which the model does not read", {}) : guess("broadcast", {"broadcast"});
  if (per > 1) {
    if (reduces) return guess("reducescatter", {"reducescatter"});
    if (blankRedop) return guess("alltoall (nccl-tests' older AllToAll left its redop blank)", {"alltoall"});
    return guess("allgather or alltoall (busbw / algbw is (n - 1) / n for both)", {"allgather", "alltoall"});
  }
  if (reduces) {
    if (ratioAbove) return guess("allreduce (busbw / algbw above 1)", {"allreduce"});
    if (ratioOne) return guess("sendrecv (busbw / algbw 1; allreduce only on 2 ranks)", {"sendrecv", "allreduce"});
    return guess("allreduce or sendrecv", {"allreduce", "sendrecv"});
  }
  return guess("allgather or alltoall on one rank", {"allgather", "alltoall"});
}

// busbw / algbw is nccl-tests' bus factor, k (n - 1) / n from the collective descriptors (k = 2 for AllReduce, 1 for
// AllGather, ReduceScatter and AllToAll; a factor that does not move with n, as SendRecv's and Broadcast's, and
// nccl-tests' reduce, gather and scatter, which have no descriptor, say nothing of n). The rank counts every row's
// printed figures allow, each figure exact to half its last printed digit; nullopt when the factor says nothing or
// no row is precise enough.
struct BusFactorRanks {
  double lo = 0, hi = 0;  // n in [lo, hi]
  double ratio = 0;       // at the row with the largest algbw (for the message)
  double limit = 0;       // the factor's bound (2 or 1): no n gives a ratio at or above it
  std::string size;
};
std::optional<BusFactorRanks> ranksFromBusFactor(const std::string& coll, const std::vector<RunState::Row>& rows,
                                                 const HeaderShape& h) {
  const auto kind = parseCollKind(coll);
  if (!kind) return std::nullopt;
  // k from two rank counts; the factor must be k (n - 1) / n (3 ranks agreeing with 2) for n to follow from it.
  const double k = busBwFactor(*kind, 2) * 2, k3 = busBwFactor(*kind, 3) * 3 / 2;
  if (!(k > 0) || std::fabs(k - k3) > 1e-9 * k) return std::nullopt;
  double rLo = -1e300, rHi = 1e300, bestAlg = 0;
  BusFactorRanks out;
  for (const auto& row : rows) {
    auto w = row.w;
    const auto lay = rowLayout(w, h);
    if (!lay) continue;
    for (int place = 0; place < 2; ++place) {
      const std::size_t b = lay->first + place * lay->stride;
      double alg = 0, bus = 0;
      if (!text::toDouble(w[b + 1], alg) || !text::toDouble(w[b + 2], bus)) continue;
      const double da = halfDigit(w[b + 1]), db = halfDigit(w[b + 2]);
      if (alg - da <= 0) continue;
      rLo = std::max(rLo, (bus - db) / (alg + da));
      rHi = std::min(rHi, (bus + db) / (alg - da));
      if (alg > bestAlg) bestAlg = alg, out.ratio = bus / alg, out.size = w[0];
    }
  }
  if (bestAlg == 0 || rLo > rHi) return std::nullopt;  // no usable row, or rows that disagree among themselves
  out.limit = k;
  auto n = [&](double r) { return r <= 0 ? 1.0 : r >= k ? 1e300 : k / (k - r); };
  out.lo = n(rLo);
  out.hi = n(rHi);
  return out;
}

// The whole rank counts a BusFactorRanks allows, lowest and highest (1e9 when unbounded); none where lo > hi.
std::pair<long, long> wholeRanks(const BusFactorRanks& r) {
  return {static_cast<long>(std::ceil(r.lo - 1e-9)), static_cast<long>(std::floor(std::min(r.hi, 1e9) + 1e-9))};
}

// "16 ranks" or "16-17 ranks" or "at least 40 ranks": what a BusFactorRanks allows.
std::string ranksText(const BusFactorRanks& r) {
  const auto [lo, hi] = wholeRanks(r);
  if (r.lo > 1e6 || lo > hi) return fmt::format("no whole rank count (the factor, below {:g}, meets none)", r.limit);
  if (r.hi > 1e6) return fmt::format("at least {} ranks", lo);
  return lo == hi ? fmt::format("{} ranks", lo) : fmt::format("{}-{} ranks", lo, hi);
}

}  // namespace

std::vector<NcclTestsRun> parseNcclTestsRuns(const std::string& text, const std::string& source,
                                             const NcclTestsHints& hints) {
  auto ls = text::lines(text);
  std::vector<RunState> runs;
  RunState cur;
  std::string fileBinary, fileColl;  // the latest binary named on a command line (carries to the next run)
  std::map<std::string, std::string> fileEnv;
  int fileNp = 0;
  bool nextRccl = false;  // an rccl-tests line after a run's rows: it belongs to the next run
  auto finish = [&] {
    if (cur.hasContent()) runs.push_back(std::move(cur));
    cur = RunState{};
    cur.rccl = std::exchange(nextRccl, false);
  };
  auto startIfDone = [&](std::size_t i) {
    if (cur.hasContent()) finish();
    if (cur.firstLine == 0) cur.firstLine = i + 1;
  };
  bool prevRank = false;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    std::string l = stripPrefixes(ls[i]);
    // a '#' line indented (a Markdown list around the paste) reads as it would unindented
    if (auto k = l.find_first_not_of(" \t"); k != std::string::npos && k > 0 && l[k] == '#') l.erase(0, k);
    std::string t = text::trim(l);
    if (text::startsWith(t, "```")) continue;
    // rccl-tests' own lines ("rccl-tests: Version ...", "RCCL version : ..."), or a binary under a rccl-tests folder:
    // they come before a run's rows, so after rows they mark the next run (a file may hold both tools' runs)
    if (text::startsWith(t, "rccl-tests:") || text::startsWith(t, "RCCL version") ||
        (l.find("rccl-tests/") != std::string::npos && l.find("_perf") != std::string::npos))
      (cur.hasContent() ? nextRccl : cur.rccl) = true;
    bool isRank = false;
    if (text::startsWith(l, "# nccl-tests version")) {
      startIfDone(i);
      auto w = text::words(l);
      if (w.size() >= 4) cur.version = w[3];
      for (auto& x : w)
        if (text::startsWith(x, "nccl-library=")) cur.ncclLibrary = x.substr(13);
    } else if (text::startsWith(l, "# Collective test starting:")) {
      // a version line just before belongs to this run
      std::string v = cur.hasContent() ? "" : cur.version, lib = cur.hasContent() ? "" : cur.ncclLibrary;
      startIfDone(i);
      if (!v.empty()) cur.version = v;
      if (!lib.empty()) cur.ncclLibrary = lib;
      std::string bin = text::trim(l.substr(std::string("# Collective test starting:").size()));
      std::string b2;
      cur.coll = collOfToken(bin, &b2);
      cur.binary = b2.empty() ? bin : b2;
      if (cur.coll.empty())
        throw InputError(fmt::format("{}: line {}: unknown nccl-tests binary '{}'", source, i + 1, bin));
    } else if (text::startsWith(l, "# Collective test concluded:")) {
      // the run ends; INFO lines after it belong to the next
      if (cur.hasContent()) finish();
    } else if (text::startsWith(l, "# nThread")) {
      startIfDone(i);
      auto w = text::words(l);
      for (std::size_t k = 0; k + 1 < w.size(); ++k) {
        if (w[k] == "nThread") cur.nThread = std::atoi(w[k + 1].c_str());
        if (w[k] == "nGpus") cur.nGpus = std::atoi(w[k + 1].c_str());
      }
    } else if (text::startsWith(l, "# Using devices")) {
      if (cur.hasContent()) startIfDone(i);
    } else if (text::startsWith(l, "#") && text::words(l).size() >= 3 && text::words(l)[1] == "Rank") {
      // "#  Rank  0 Group  0 Pid    635 on         vm device  0 [0000:00:06] NVIDIA H200"
      if (cur.hasContent()) startIfDone(i);
      isRank = true;
      auto w = text::words(l);
      RunState::RankLine rl;
      for (std::size_t k = 0; k + 1 < w.size(); ++k) {
        if (w[k] == "Rank") cur.ranks.insert(rl.rank = std::atoi(w[k + 1].c_str()));
        if (w[k] == "on") rl.host = w[k + 1];
        if (w[k] == "device" && isDigit(w[k + 1][0])) rl.device = std::atoi(w[k + 1].c_str());
      }
      for (const auto& seen : cur.rankLines)
        if (seen.rank == rl.rank && cur.twiceListed.empty())
          cur.twiceListed = fmt::format("rank {} listed twice (line {}{}{})", rl.rank, i + 1,
                                        seen.host.empty() ? "" : ", host " + seen.host + " and ",
                                        seen.host.empty() ? "" : rl.host);
      if (!rl.host.empty()) {
        if (cur.hosts.insert(rl.host).second) cur.hostOrder.push_back(rl.host);
        cur.ranksPerHost[rl.host]++;
      }
      auto br = l.find(']'), open = l.find('[');
      if (br != std::string::npos) {
        rl.gpu = text::trim(l.substr(br + 1));
        if (open != std::string::npos && open < br) rl.busId = l.substr(open + 1, br - open - 1);
      }
      if (cur.gpu.empty()) cur.gpu = rl.gpu;
      cur.rankLines.push_back(rl);
    } else if (prevRank &&
               (t == "..." || t == "…" || (text::startsWith(t, "#") && text::trim(t.substr(1)) == "..."))) {
      cur.elided = true;
      isRank = true;
    } else if (const HeaderShape hs = text::startsWith(l, "#") ? headerShape(l) : HeaderShape{};
               text::startsWith(l, "#") && (l.find("#wrong") != std::string::npos ||
                                            (l.find("redop") != std::string::npos && l.find(" error") != std::string::npos) ||
                                            hs.known)) {
      if (cur.hasContent()) startIfDone(i);
      cur.headerSeen = true;
      cur.cputime = l.find("cputime") != std::string::npos;
      cur.shape = hs;
    } else if (l.find("NCCL INFO") != std::string::npos || l.find("NCCL WARN") != std::string::npos) {
      readInfoLine(l, cur);
    } else if (text::startsWith(t, "NCCL version ")) {
      auto w = text::words(t.substr(13));
      if (!w.empty()) addUnique(cur.ncclVersions, w[0]);
    } else if (!t.empty() && isDigit(t[0]) && !text::startsWith(t, "#")) {
      auto w = text::words(t);
      std::size_t dummy = 0;
      // a result row: size count type ...; other numeric lines (e.g. "1 warning") are not rows
      if (!cur.headerSeen && isHeaderlessRow(w)) {  // rows pasted without their column header
        cur.headerSeen = true;
        cur.shape = headerShape(kCurrentHeader);
      }
      if (w.size() >= 5 && text::toUnsigned(w[0], dummy) && text::toUnsigned(w[1], dummy) && cur.headerSeen) {
        cur.rows.push_back({w, i + 1});
      } else if (w.size() >= 9 && text::toUnsigned(w[0], dummy) && text::toUnsigned(w[1], dummy) && !cur.headerSeen) {
        throw InputError(fmt::format("{}: line {}: a data row before the nccl-tests column header", source, i + 1));
      }
    } else if (!text::startsWith(t, "#")) {
      // a command line or shell text: binary names, NCCL_X=Y, -np
      for (auto& w : text::words(l)) {
        std::string b;
        auto c = collOfToken(w, &b);
        if (!c.empty()) {
          if (cur.hasContent()) finish();
          fileBinary = b;
          fileColl = c;
          break;
        }
      }
      if (l.find("NCCL_") != std::string::npos) envFromCommand(l, fileEnv);
      if (int np = launcherRanks(l); np > 0) fileNp = np;
    }
    prevRank = isRank || (prevRank && t.empty());
    if (cur.rows.size() == 1 && cur.rows.back().line == i + 1) {
      // first row: fix the run's collective, env and -np from what the file said so far
      if (cur.coll.empty()) {
        cur.coll = fileColl;
        cur.binary = fileBinary;
      }
      for (auto& [k, v] : fileEnv)
        if (!cur.env.count(k)) cur.env[k] = v;
      cur.launcherNp = fileNp;
    }
  }
  finish();
  // A run on an AMD GPU is RCCL's whatever its lines say; one that names no GPU and has no marker of its own joins the
  // file's rccl-tests runs (a second table of one rccl-tests paste) unless the file also holds nccl-tests runs.
  const auto amd = isAmdGpuName;
  const bool anyRccl = std::any_of(runs.begin(), runs.end(), [&](const RunState& x) { return x.rccl || amd(x.gpu); });
  const bool anyNvidia = std::any_of(runs.begin(), runs.end(), [&](const RunState& x) { return !x.gpu.empty() && !amd(x.gpu); });
  for (auto& x : runs)
    if (amd(x.gpu) || (anyRccl && !anyNvidia && x.gpu.empty())) x.rccl = true;
  if (runs.empty()) {
    bool info = text.find("NCCL INFO") != std::string::npos;
    throw InputError(fmt::format("{}: no nccl-tests result rows found{}", source,
                                 info ? " (NCCL INFO lines only: nothing to read as a series)" : ""));
  }

  std::vector<NcclTestsRun> out;
  std::string userColl = hints.coll.empty() ? "" : collFromUser(hints.coll);
  if (!hints.coll.empty() && userColl.empty())
    throw InputError(fmt::format("{}: :coll={} is not a collective (allreduce, allgather, reducescatter, alltoall, "
                                 "broadcast, sendrecv)",
                                 source, hints.coll));
  if (hints.pick > static_cast<int>(runs.size()))
    throw InputError(fmt::format("{}: #{} asked for, the file holds {} run{}", source, hints.pick, runs.size(),
                                 runs.size() == 1 ? "" : "s"));
  for (std::size_t ri = 0; ri < runs.size(); ++ri) {
    // FILE#k: run k alone is checked (another run's elided rank list is no reason to refuse it).
    if (hints.pick > 0 && ri + 1 != static_cast<std::size_t>(hints.pick)) continue;
    try {
      auto& r = runs[ri];
      if (r.coll.empty()) r.coll = userColl;
      // What the '#  Rank' list says: its count, and why it is incomplete ("" when complete or absent).
      int listed = static_cast<int>(r.ranks.size());
      int expected = 0;
      if (r.nThread > 0 && r.nGpus > 0) expected = r.nThread * r.nGpus * std::max(1, r.launcherNp);
      bool gaps = listed > 0 && *r.ranks.rbegin() + 1 != listed;
      bool shortList = listed > 0 && expected > 0 && listed < expected;
      std::string why = r.elided ? "'...' between the '#  Rank' lines"
                        : gaps   ? fmt::format("rank numbers with gaps ({} listed, highest {})", listed, *r.ranks.rbegin())
                        : shortList ? fmt::format("{} '#  Rank' lines where nThread x nGpus x -np = {}", listed, expected)
                                    : "";
      const bool complete = why.empty() && listed > 0;
      if (r.coll.empty()) {
        const auto g = collCandidates(r.rows.back().w, r.shape);
        const std::string head = fmt::format("{}: line {}: which collective? The log has no '# Collective test starting:' "
                                             "line and names no *_perf binary{}",
                                             source, r.rows.front().line, g.fits.empty() ? "" : "; " + g.fits);
        if (g.suggest.empty() && !g.fits.empty()) throw InputError(head);  // a Reduce: nothing to suggest
        // Without '#  Rank' lines (or nThread x nGpus x -np) the counts are needed too: busbw / algbw gives the ranks
        // for each candidate where one whole count fits, so one refusal asks for all of it.
        const bool countless = r.ranks.empty() && !(r.launcherNp > 0);
        // A complete '#  Rank' list is the count: a candidate whose busbw / algbw cannot give it is not offered
        // (a 16-rank SendRecv's factor 1 fits AllReduce only on 2 ranks).
        auto candidates = g.suggest.empty() ? std::vector<std::string>{"allreduce"} : g.suggest;
        if (complete) {
          std::vector<std::string> fitting;
          for (const auto& c : candidates) {
            const auto f = ranksFromBusFactor(c, r.rows, r.shape);
            if (!f || (listed >= f->lo - 1e-9 && listed <= f->hi + 1e-9)) fitting.push_back(c);
          }
          if (!fitting.empty()) candidates = fitting;
        }
        std::string args;
        for (const auto& c : candidates) {
          std::string counts;
          if (countless) {
            const auto f = ranksFromBusFactor(c, r.rows, r.shape);
            const auto [lo, hi] = f ? wholeRanks(*f) : std::pair<long, long>{0, -1};
            counts = f && f->hi < 1e6 && lo == hi ? fmt::format(",ranks={},nodes=M", lo) : ",ranks=N,nodes=M";
          }
          args += (args.empty() ? "" : " or ") + fmt::format("{}:coll={}{}", source, c, counts);
        }
        throw InputError(fmt::format("{}; add it to the file name: {}", head, args));
      }
      // Sizes that fall back within one run of one type and op (-d all / -o all restart the sweep with another):
      // several processes' tables interleaved (nccl-tests built without MPI=1 and started by mpirun runs one
      // independent 1-rank test per process: NVIDIA/nccl-tests issue 294).
      for (std::size_t k = 1; k < r.rows.size(); ++k) {
        const auto &p = r.rows[k - 1].w, &q = r.rows[k].w;
        std::size_t a = 0, b = 0;
        const bool sameSweep = p.size() > 3 && q.size() > 3 && p[2] == q[2] && p[3] == q[3];
        if (sameSweep && text::toUnsigned(p[0], a) && text::toUnsigned(q[0], b) && b < a)
          throw InputError(fmt::format("{}: line {}: size {} after {} (line {}): the rows of several tables interleaved, "
                                       "as when mpirun starts nccl-tests built without MPI=1 (one 1-rank test per "
                                       "process); give one table",
                                       source, r.rows[k].line, b, a, r.rows[k - 1].line));
      }
      if (!r.twiceListed.empty())
        throw InputError(fmt::format("{}: {}: the lines of two runs interleaved (two processes printing to one file, "
                                     "as two `-g N` runs of one node each); give one run's lines",
                                     source, r.twiceListed));
      if (r.binary.empty()) r.binary = "(coll given by the user)";
      // Ranks and nodes.
      int nRanks = 0, nNodes = 0;
      const std::string pickTag = hints.pick > 0 ? fmt::format("#{}", hints.pick) : "";  // advice keeps FILE#k
      if (!why.empty()) {
        if (hints.ranks <= 0 || hints.nodes <= 0) {
          // The example uses the count the log gives (nThread x nGpus x -np, or the highest rank listed + 1) and
          // 8 GPUs a node (4 for GB200/GB300 trays).
          const int known = std::max(expected, listed > 0 ? *r.ranks.rbegin() + 1 : 64);
          static const std::regex kTray(R"(\bGB[23]00\b)", std::regex::icase);
          int gpn = std::regex_search(r.gpu, kTray) ? 4 : 8;
          if (known % gpn != 0) gpn = 1;
          throw InputError(fmt::format("{}: the rank list is elided ({}): give the counts with {}:ranks=N,nodes=M{} "
                                       "(e.g. {}:ranks={},nodes={}{}{})",
                                       source, why, source, pickTag, source, known, known / gpn, pickTag,
                                       expected > 0 || listed > 0 ? fmt::format(" for {} GPUs a node", gpn) : ""));
        }
      }
      if (listed > 0) nRanks = listed;
      else if (expected > 0) nRanks = expected;
      nNodes = r.hosts.empty() ? 1 : static_cast<int>(r.hosts.size());
      // A complete rank list is the log's own count: a hint may fill in an elided or absent list, never contradict it.
      if (complete && hints.ranks > 0 && hints.ranks != listed)
        throw InputError(fmt::format("{}: :ranks={} contradicts the log's complete '#  Rank' list of {} ranks", source,
                                     hints.ranks, listed));
      // Fewer nodes than hosts is allowed where whole hosts group into them: hosts that share one NVLink domain
      // (GB200/GB300 NVL72, MNNVL) are one node to NCCL.
      const int nHosts = static_cast<int>(r.hosts.size());
      if (complete && hints.nodes > 0 && nHosts > 0 && hints.nodes != nHosts && (hints.nodes > nHosts || nHosts % hints.nodes != 0))
        throw InputError(fmt::format("{}: :nodes={} contradicts the log's complete '#  Rank' list on {} hosts (nodes "
                                     "may only group whole hosts: NVLink domains of {} hosts each)",
                                     source, hints.nodes, nHosts, nHosts));
      if (hints.ranks > 0) nRanks = hints.ranks;
      if (hints.nodes > 0) nNodes = hints.nodes;
      if ((hints.ranks > 0 || hints.nodes > 0) && nRanks > 0 && nRanks % nNodes != 0)
        throw InputError(fmt::format("{}: {} ranks ({}) on {} nodes ({}): not a whole number of GPUs per node", source,
                                     nRanks, hints.ranks > 0 ? "given" : "from the log", nNodes,
                                     hints.nodes > 0 ? "given" : "from the log"));
      if (!hints.algo.empty()) r.env["NCCL_ALGO"] = hints.algo;
      if (!hints.proto.empty()) r.env["NCCL_PROTO"] = hints.proto;
      // busbw / algbw holds the rank count for AllReduce, AllGather, ReduceScatter and AllToAll: a count that
      // contradicts it (given, or from an incomplete list) would describe another machine with exit 0.
      const auto factor = ranksFromBusFactor(r.coll, r.rows, r.shape);
      const std::string says =
          factor ? fmt::format("busbw/algbw {:.4f} at {} B says {} for {}", factor->ratio, factor->size, ranksText(*factor), r.coll)
                 : "";
      if (nRanks <= 0)
        throw InputError(fmt::format("{}: no '#  Rank N ... on HOST' lines: the rank count is unknown{}; give it with "
                                     "{}:ranks=N,nodes=M{}",
                                     source, says.empty() ? "" : " (" + says + ")", source, pickTag));
      // nccl-tests before June 2020 (ec1b5e2) printed AllGather's and ReduceScatter's algbw and busbw both as
      // size (n - 1) / n / time: busbw / algbw 1 within the figures' precision, which no rank count gives today's
      // factor. Such a run is read by its times, its algbw checked against that older convention.
      const bool oldAgRs = (r.coll == "allgather" || r.coll == "reducescatter") && factor && factor->lo < 1e6 &&
                           factor->hi > 1e6 && nRanks > 1 && nRanks < factor->lo - 1e-9;
      if (factor && !oldAgRs && (nRanks < factor->lo - 1e-9 || nRanks > factor->hi + 1e-9)) {
        // No whole count fits, or the ranks come from a complete list: the collective is the likelier mistake.
        const bool collWrong = factor->lo > std::floor(factor->hi + 1e-9) || (complete && hints.ranks <= 0);
        throw InputError(fmt::format("{}: {} rank{} ({}) contradict{} the log's figures: {}; {}", source, nRanks,
                                     nRanks == 1 ? "" : "s",
                                     hints.ranks > 0 ? "given" : complete ? "its '#  Rank' list" : "from its header",
                                     nRanks == 1 ? "s" : "", says,
                                     collWrong ? fmt::format("is {} the collective the log ran? (:coll=NAME)", r.coll)
                                               : fmt::format("give the counts with {}:ranks=N,nodes=M{}", source, pickTag)));
      }
      std::string path;
      for (auto& tr : r.transports) path += (path.empty() ? "" : "+") + tr;
      if (path.empty()) path = "transport not logged (run with NCCL_DEBUG=INFO)";
      if (!r.graphType.empty()) path += " " + r.graphType;
      std::string ncclVersion = r.ncclVersions.empty() ? "" : r.ncclVersions.front();
      if (ncclVersion.empty() && !r.ncclLibrary.empty()) {
        // "nccl-library=22902" = NCCL_VERSION_CODE: major*10000 + minor*100 + patch
        std::size_t code = 0;
        if (text::toUnsigned(r.ncclLibrary, code) && code >= 10000)
          ncclVersion = fmt::format("{}.{}.{}", code / 10000, (code / 100) % 100, code % 100);
      }

      NcclTestsRun run;
      struct CountMismatch {
        std::size_t line, count, expected;
        std::string type;
        int more = 0;
      };
      std::optional<CountMismatch> badCount;
      for (auto& pr : r.rows) {
        auto w = pr.w;
        const auto lay = rowLayout(w, r.shape);
        if (!lay && r.shape.known && r.shape.placements == 1)
          throw InputError(fmt::format("{}: line {}: the column header names one placement (time algbw busbw once: "
                                       "nccl-tests/rccl-tests run with out-of-place or in-place alone); only tables "
                                       "of both placements are read",
                                       source, pr.line));
        if (!lay && r.shape.known) {
          const std::size_t lead = 3 + (r.shape.redop ? 1 : 0) + (r.shape.root ? 1 : 0);
          throw InputError(fmt::format("{}: line {}: expected {} columns as the column header names them (size count "
                                       "type{}{}, then {} for each of out-of-place and in-place{}), got {}",
                                       source, pr.line, lead + 2 * r.shape.stride, r.shape.redop ? " redop" : "",
                                       r.shape.root ? " root" : "", r.shape.stride,
                                       r.shape.redop ? fmt::format("; {} with a blank redop", lead - 1 + 2 * r.shape.stride) : "",
                                       w.size()));
        }
        if (!lay)
          throw InputError(fmt::format("{}: line {}: expected 13 columns (size count type redop root, then time algbw "
                                       "busbw #wrong out-of-place and in-place; 12 without root, 21 with -I 1's "
                                       "per-iteration columns, a -S 1 timestamp after them), got {}",
                                       source, pr.line, w.size()));
        if (r.cputime)
          throw InputError(fmt::format("{}: line {}: the table reports cputime (nccl-tests -C 1: the host's time to "
                                       "launch an operation, not the operation's time); rerun without -C 1",
                                       source, pr.line));
        const std::size_t first = lay->first;
        std::size_t bytes = 0, count = 0;
        if (!text::toUnsigned(w[0], bytes) || !text::toUnsigned(w[1], count))
          throw InputError(
              fmt::format("{}: line {}: size/count '{}' '{}' are not whole numbers", source, pr.line, w[0], w[1]));
        // nccl-tests prints the per-call count: size / element, and / ranks for AllGather, ReduceScatter, AllToAll,
        // Gather, Scatter and HyperCube. Another count is an edited row, or one pasted from another run; its size is
        // kept where its time and algbw agree with it (checked below).
        if (const std::size_t el = elemBytes(w[2]); el > 0 && nRanks > 0) {
          const bool perRank = r.coll == "allgather" || r.coll == "reducescatter" || r.coll == "alltoall" ||
                               r.coll == "gather" || r.coll == "scatter" || r.coll == "hypercube";
          const std::size_t per = perRank ? static_cast<std::size_t>(nRanks) : 1;
          if (count * el * per != bytes && !badCount) badCount = CountMismatch{pr.line, count, bytes / el / per, w[2]};
          else if (count * el * per != bytes) ++badCount->more;
        }
        for (int place = 0; place < 2; ++place) {
          std::size_t b = first + place * lay->stride;
          double tm = 0, alg = 0, bus = 0;
          if (!text::toDouble(w[b], tm) || !text::toDouble(w[b + 1], alg) || !text::toDouble(w[b + 2], bus) || tm <= 0)
            throw InputError(fmt::format("{}: line {}: time/algbw/busbw '{}' '{}' '{}' are not positive numbers",
                                         source, pr.line, w[b], w[b + 1], w[b + 2]));
          // algbw is size / time (HyperCube: size (n - 1) / n / time), each figure exact to half its last printed digit.
          {
            const double moved = static_cast<double>(bytes) * ((r.coll == "hypercube" || oldAgRs) && nRanks > 0
                                                                   ? static_cast<double>(nRanks - 1) / nRanks
                                                                   : 1.0);
            const double dt = halfDigit(w[b]), da = halfDigit(w[b + 1]);
            const double lo = moved / ((tm + dt) * 1e3);
            const double hi = tm > dt ? moved / ((tm - dt) * 1e3) : 1e300;
            if (alg + da < lo * (1 - 1e-9) || alg - da > hi * (1 + 1e-9))
              throw InputError(fmt::format("{}: line {}: algbw {} is not size / time ({} B / {} us = {:.4g} GB/s): the "
                                           "row contradicts itself (edited, or pasted from another run); correct or "
                                           "delete the line",
                                           source, pr.line, w[b + 1], bytes, w[b], moved / (tm * 1e3)));
          }
          Sample s;
          s.coll = r.coll;
          s.impl = "nccl-tests";
          s.path = path;
          s.dtype = dtypeOf(w[2]);
          s.inPlace = place == 1;
          s.bytes = bytes;
          s.count = count;
          s.nRanks = nRanks;
          s.nNodes = nNodes;
          s.timeUs = tm;
          s.timer = "nccl-tests";  // nccl-tests: host clock around the launched batch
          s.rankTime = "avg";  // nccl-tests averages over ranks by default (-a 1)
          // The tool prints algbw/busbw with 2 decimals; recompute from the time so tiny sizes keep a value.
          s.algBwGBps = static_cast<double>(bytes) / (tm * 1e3);
          s.busBwGBps = alg > 0 ? s.algBwGBps * (bus / alg) : bus;
          if (alg <= 0 || oldAgRs) {  // the descriptors' bus factor; 1 for nccl-tests' reduce, gather, scatter
            const auto kind = parseCollKind(r.coll);
            s.busBwGBps = s.algBwGBps * (kind ? busBwFactor(*kind, nRanks) : 1.0);
          }
          std::size_t wrong = 0;
          s.wrong = w[b + 3] == "N/A" ? -1 : (text::toUnsigned(w[b + 3], wrong) ? static_cast<std::int64_t>(wrong) : -2);
          double err = 0;
          if (s.wrong == -2 && lay->maxError && text::toDouble(w[b + 3], err)) s.wrong = -1;  // max error, not a count
          if (s.wrong == -2)
            throw InputError(fmt::format("{}: line {}: #wrong '{}' is not a count", source, pr.line, w[b + 3]));
          s.extra = {{"tool", "nccl-tests" + (r.version.empty() ? std::string() : " " + r.version)},
                     {"binary", r.binary},
                     {"source", source},
                     {"printed_time_us", w[b]},
                     {"printed_algbw", w[b + 1]},
                     {"printed_busbw", w[b + 2]}};
          if (lay->maxError) s.extra.push_back({"printed_error", w[b + 3]});
          if (!ncclVersion.empty()) s.extra.push_back({"nccl_version", ncclVersion});
          if (!r.transports.empty()) s.extra.push_back({"transports", path});
          run.rows.push_back(std::move(s));
        }
      }
      nlohmann::json info = nlohmann::json::object();
      if (oldAgRs) info["algbw_convention"] = "nccl-tests before 2020-06: algbw = busbw = size (n - 1) / n / time";
      if (badCount) {
        info["count_mismatch"] = fmt::format(
            "line {}: count {} is not what nccl-tests prints for that size of {} {} on {} ranks ({}){}", badCount->line,
            badCount->count, badCount->type, r.coll, nRanks, badCount->expected,
            badCount->more > 0 ? fmt::format(", nor at {} more row{}", badCount->more, badCount->more == 1 ? "" : "s") : "");
        printLine(programName(), ": warning: ", source, ": ", info["count_mismatch"].get<std::string>(),
                  ": an edited row, or one from another run; read by its size, which its time and algbw agree with");
      }
      info["run_index"] = ri + 1;
      info["runs_in_file"] = runs.size();
      info["first_row_line"] = r.rows.front().line;
      info["version"] = r.version.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.version);
      info["nccl_version"] = ncclVersion.empty() ? nlohmann::json(nullptr) : nlohmann::json(ncclVersion);
      info["nccl_versions"] = r.ncclVersions;
      info["binary"] = r.binary;
      info["library"] = r.rccl ? "rccl" : "nccl";
      info["coll"] = r.coll;
      info["coll_from"] = !r.coll.empty() && r.coll == userColl && r.binary == "(coll given by the user)" ? "user" : "log";
      info["gpu"] = r.gpu.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.gpu);
      info["hosts"] = r.hostOrder;
      info["ranks"] = nRanks;
      info["nodes"] = nNodes;
      info["ranks_listed"] = listed;
      // Ranks on one GPU (the same host and bus id): NCCL_HOSTID tricks and oversubscribed test runs check function;
      // their times are no measurement of a path between GPUs.
      // Only a full bus id (domain:bus:device) names one GPU: older nccl-tests print the bus number alone ("[0x10]"),
      // which two A100s of a p4d share and every GB200 GPU has (each in its own PCI domain).
      std::map<std::pair<std::string, std::string>, std::vector<int>> onGpu;
      for (const auto& rl : r.rankLines)
        if (rl.busId.find(':') != std::string::npos) onGpu[{rl.host, rl.busId}].push_back(rl.rank);
      for (const auto& [where, rs] : onGpu)
        if (rs.size() > 1) {
          const std::string shared = fmt::format("ranks {} share one GPU ({} [{}])", fmt::join(rs, ", "), where.first,
                                                 where.second);
          info["shared_gpu"] = shared;
          printLine(programName(), ": warning: ", source, ": ", shared,
                    ": a function check, not a measurement of the path between GPUs");
          break;
        }
      info["rank_list"] = why.empty() ? (listed > 0 ? "complete" : "absent") : "elided: " + why;
      info["counts_from"] = hints.ranks > 0 || hints.nodes > 0 ? "user" : (listed > 0 ? "rank lines" : "header");
      if (nNodes > 0 && nRanks % nNodes == 0) info["ranks_per_node"] = nRanks / nNodes;
      else info["ranks_per_node"] = nullptr;
      info["nthread"] = r.nThread;
      info["ngpus"] = r.nGpus;
      if (r.launcherNp > 0) info["launcher_np"] = r.launcherNp;
      info["env"] = r.env;
      info["transports"] = r.transports;
      info["gdrdma"] = r.gdr;
      info["channels"] = r.channels > 0 ? nlohmann::json(r.channels) : nlohmann::json(nullptr);
      info["nvls_channels"] = r.nvlsChannels >= 0 ? nlohmann::json(r.nvlsChannels) : nlohmann::json(nullptr);
      info["algo"] = r.algos;
      info["proto"] = r.protos;
      if (auto it = r.env.find("NCCL_ALGO"); it != r.env.end()) info["algo_forced"] = it->second;
      if (auto it = r.env.find("NCCL_PROTO"); it != r.env.end()) info["proto_forced"] = it->second;
      if (!r.graphType.empty()) info["graph_type"] = r.graphType;
      run.info = std::move(info);
      // The hosts and GPUs the '#  Rank' lines name, as a fabricbench run.json keeps them (the report's fingerprint
      // table). An elided list names only some ranks: each host listed gets the counts' GPUs per node.
      if (!r.rankLines.empty()) {
        nlohmann::json hosts = nlohmann::json::array();
        const int perNode = nNodes > 0 && nRanks % nNodes == 0 ? nRanks / nNodes : 0;
        for (const auto& host : r.hostOrder.empty() ? std::vector<std::string>{""} : r.hostOrder) {
          nlohmann::json ranks = nlohmann::json::array(), gpus = nlohmann::json::array();
          for (const auto& rl : r.rankLines) {
            if (rl.host != host) continue;
            ranks.push_back(rl.rank);
            if (why.empty()) {
              nlohmann::json g = {{"name", rl.gpu}};
              if (rl.device >= 0) g["index"] = rl.device;
              if (!rl.busId.empty()) g["pci_bus_id"] = rl.busId;
              gpus.push_back(g);
            } else if (gpus.empty()) {
              for (int k = 0; k < perNode; ++k) gpus.push_back({{"name", rl.gpu}});
            }
          }
          nlohmann::json hfp = {{"hostname", host.empty() ? "?" : host},
                                {"gpus", gpus},
                                {"gpu_query", why.empty() ? "from the nccl-tests '#  Rank' lines"
                                                          : fmt::format("from the nccl-tests '#  Rank' lines, elided: {} "
                                                                        "per node from the counts given",
                                                                        perNode)}};
          if (!ncclVersion.empty()) hfp["nccl_version"] = ncclVersion;
          hosts.push_back({{"hostname", hfp["hostname"]}, {"ranks", ranks}, {"fingerprint", hfp}});
        }
        run.fingerprint = {{"hosts", hosts}, {"nhosts", nNodes}, {"nranks", nRanks}, {"nodes", nNodes}, {"ranks", nRanks}};
      }
      out.push_back(std::move(run));
    } catch (const InputError& e) {
      // Several runs: say which one, and how to read another alone.
      if (runs.size() < 2) throw;
      std::string m = e.what();
      const std::string head = source + ": ";
      const std::string where =
          fmt::format("{}: run {} of {} (from line {}): ", source, ri + 1, runs.size(), runs[ri].rows.front().line);
      m = text::startsWith(m, head) ? where + m.substr(head.size()) : where + m;
      if (hints.pick == 0) m += fmt::format("; FILE#k reads run k alone ({}#{}, or {}:ranks=N,nodes=M#{})", source, ri + 1, source, ri + 1);
      throw InputError(m);
    }
  }
  return out;
}

std::vector<Sample> parseNcclTests(const std::string& text, const std::string& source) {
  std::vector<Sample> all;
  for (auto& r : parseNcclTestsRuns(text, source)) all.insert(all.end(), r.rows.begin(), r.rows.end());
  return all;
}

// k of FILE#k: 1 .. 1e6 (a file holds far fewer runs; atoi would wrap 4294967297 to 1).
static int runIndex(const std::string& digits, const std::string& arg) {
  std::size_t k = 0;
  if (!text::toUnsigned(digits, k) || k == 0 || k > 1000000)
    throw InputError(fmt::format("'{}': #k counts runs from 1 (1 .. 1000000)", arg));
  return static_cast<int>(k);
}

InputArg splitInputArg(const std::string& arg) {
  InputArg a;
  std::error_code ec;
  std::string rest = arg;
  if (!fs::exists(rest, ec)) {
    // A trailing #k (digits only) off rest: FILE#k, FILE:opts#k, and after the opts are cut, FILE#k:opts.
    auto takePick = [&] {
      auto hash = rest.rfind('#');
      if (a.hints.pick == 0 && hash != std::string::npos && hash + 1 < rest.size() && !fs::exists(rest, ec) &&
          std::all_of(rest.begin() + static_cast<long>(hash) + 1, rest.end(), isDigit)) {
        a.hints.pick = runIndex(rest.substr(hash + 1), arg);
        rest = rest.substr(0, hash);
      }
    };
    takePick();
    auto colon = rest.rfind(':');
    if (colon != std::string::npos && !fs::exists(rest, ec) && rest.find('=', colon) != std::string::npos) {
      std::string opts = rest.substr(colon + 1);
      rest = rest.substr(0, colon);
      std::stringstream ss(opts);
      std::string kv;
      while (std::getline(ss, kv, ',')) {
        auto eq = kv.find('=');
        std::string k = eq == std::string::npos ? kv : kv.substr(0, eq);
        std::string v = eq == std::string::npos ? "" : kv.substr(eq + 1);
        std::size_t n = 0;
        if (k == "coll" && !v.empty()) a.hints.coll = v;
        else if (k == "algo" && !v.empty()) a.hints.algo = v;
        else if (k == "proto" && !v.empty()) a.hints.proto = v;
        else if ((k == "ranks" || k == "nodes") && text::toUnsigned(v, n) && n > 0 && n <= 10000000)
          (k == "ranks" ? a.hints.ranks : a.hints.nodes) = static_cast<int>(n);
        else
          throw InputError(fmt::format("'{}': '{}' is not coll=NAME, ranks=N, nodes=N (N > 0), algo=NAME or proto=NAME", arg, kv));
      }
      if (a.hints.ranks > 0 && a.hints.nodes > 0 && a.hints.ranks % a.hints.nodes != 0)
        throw InputError(fmt::format("'{}': ranks={} is not a multiple of nodes={}", arg, a.hints.ranks, a.hints.nodes));
      takePick();
    }
  }
  a.file = rest;
  if (fs::is_regular_file(a.file, ec)) {
    std::ifstream in(a.file, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    a.isNcclTests = sniffInput(ss.str()) == InputKind::kNcclTests;
  }
  if (!a.isNcclTests && (a.hints.pick > 0 || !a.hints.coll.empty() || a.hints.ranks > 0 || a.hints.nodes > 0 ||
                          !a.hints.algo.empty() || !a.hints.proto.empty())) {
    if (!fs::is_regular_file(a.file, ec)) throw InputError(fmt::format("'{}': no such file", a.file));
    throw InputError(fmt::format("'{}': :coll=/ranks=/nodes= and #k apply to nccl-tests logs only", arg));
  }
  return a;
}

std::vector<RunData> loadNcclTestsRuns(const InputArg& spec) {
  std::ifstream in(spec.file, std::ios::binary);
  if (!in) throw InputError(fmt::format("'{}': cannot read", spec.file));
  std::ostringstream ss;
  ss << in.rdbuf();
  auto runs = parseNcclTestsRuns(ss.str(), spec.file, spec.hints);
  fs::path p(spec.file);
  std::vector<RunData> out;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    RunData r;
    r.dir = p.parent_path().string();
    if (r.dir.empty()) r.dir = ".";
    r.rows = std::move(runs[k].rows);
    const auto& info = runs[k].info;
    const int index = info.value("run_index", static_cast<int>(k + 1)), inFile = info.value("runs_in_file", 1);
    r.label = p.stem().string() + (inFile > 1 ? fmt::format("-{}", index) : "");
    r.runJson = importedRunJson(r.label, spec.file, r.rows, "nccl-tests");
    r.runJson["ranks"] = info["ranks"];
    r.runJson["nodes"] = info["nodes"];
    r.runJson["nccl_tests"] = info;
    if (!runs[k].fingerprint.is_null()) r.runJson["fingerprint"] = runs[k].fingerprint;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace fb

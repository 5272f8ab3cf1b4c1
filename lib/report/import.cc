#include "report/import.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/text.h"
#include "report/nccl_tests_lines.h"
#include "report/result_sink.h"

namespace fb {
namespace {

namespace fs = std::filesystem;

bool isNumberStart(const std::string& l) {
  auto t = text::trim(l);
  return !t.empty() && t[0] >= '0' && t[0] <= '9';
}

}  // namespace

InputKind sniffInput(const std::string& text) {
  if (text::startsWith(text, "size_bytes,count,")) return InputKind::kTableCsv;
  const bool columns = text.find("#wrong") != std::string::npos ||
                       (text.find("redop") != std::string::npos && text.find("error") != std::string::npos);
  // nccl-tests' column line ("#  size  count  type  redop  root  time ..."): vendors' excerpts (AWS's p5 sample
  // output) start there, without the "out-of-place  in-place" line above it; some pastes hold only result rows of
  // today's 13 columns, without that header (NVIDIA/nccl-tests issue 294).
  auto columnLine = [&] {
    for (const auto& l : text::split(text, '\n')) {  // after any srun/mpirun prefix
      if (auto h = l.find('#'); h != std::string::npos && nccltests::headerShape(l.substr(h)).known) return true;
      if (nccltests::isHeaderlessRow(text::words(nccltests::stripPrefixes(l)))) return true;
    }
    return false;
  };
  if (text.find("# nccl-tests version") != std::string::npos ||
      text.find("# Collective test starting:") != std::string::npos ||
      (columns && text.find("out-of-place") != std::string::npos) || columnLine())  // 2.0-era: no redop, no #wrong
    return InputKind::kNcclTests;
  if (text.find("#bytes") != std::string::npos &&
      (text.find("BW average") != std::string::npos || text.find("t_avg") != std::string::npos ||
       text.find("t_typical") != std::string::npos))
    return InputKind::kPerftest;
  return InputKind::kUnknown;
}

std::vector<Sample> parsePerftest(const std::string& text, const std::string& source) {
  auto ls = text::lines(text);
  std::string test, device, linkType, transportType;
  std::vector<std::string> header;
  std::vector<Sample> out;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const std::string& l = ls[i];
    auto t = text::trim(l);
    if (t.find(" BW Test") != std::string::npos || t.find(" Latency Test") != std::string::npos) {
      test = t;
    } else if (t.find("Device") != std::string::npos && t.find(':') != std::string::npos) {
      // " Dual-port       : OFF		Device         : rxe0"
      auto p = t.find("Device");
      auto c = t.find(':', p);
      auto w = text::words(t.substr(c + 1));
      if (!w.empty()) device = w[0];
    }
    if (text::startsWith(t, "Link type")) {
      auto w = text::words(t.substr(t.find(':') + 1));
      if (!w.empty()) linkType = w[0];
    }
    if (text::startsWith(t, "#bytes")) {
      // Column names may contain spaces ("99% percentile[usec]"): split on runs of 2+ spaces or tabs.
      header.clear();
      std::string cur;
      int spaces = 0;
      for (char c : t) {
        if (c == ' ' || c == '\t') {
          spaces += c == '\t' ? 2 : 1;
          continue;
        }
        if (spaces >= 2 || (spaces == 1 && !cur.empty() && (cur.back() == ']' || cur.front() == '#'))) {
          header.push_back(cur);
          cur.clear();
        } else if (spaces == 1) {
          cur += ' ';
        }
        spaces = 0;
        cur += c;
      }
      if (!cur.empty()) header.push_back(cur);
      continue;
    }
    if (!header.empty() && isNumberStart(l)) {
      auto w = text::words(l);
      auto col = [&](const std::string& prefix) -> int {
        for (std::size_t k = 0; k < header.size(); ++k)
          if (text::startsWith(header[k], prefix)) return static_cast<int>(k);
        return -1;
      };
      if (w.size() < header.size())
        throw InputError(fmt::format("{}: line {}: {} columns, the header has {}", source, i + 1, w.size(),
                                     header.size()));
      std::size_t bytes = 0;
      if (!text::toUnsigned(w[0], bytes) || bytes == 0)
        throw InputError(fmt::format("{}: line {}: #bytes '{}' is not a positive whole number", source, i + 1, w[0]));
      Sample s;
      s.impl = "perftest";
      s.timer = "rank-clock";  // the client's own clock around its iterations
      s.rankTime = "rank0";  // one client reports
      s.dtype = "bytes";
      s.bytes = bytes;
      s.count = bytes;
      s.nRanks = 2;
      s.nNodes = 2;
      std::size_t iters = 0;
      int ci = col("#iterations");
      if (ci >= 0 && text::toUnsigned(w[ci], iters)) s.iters = static_cast<int>(iters);
      int bwc = col("BW average");
      int tc = col("t_avg");
      if (tc < 0) tc = col("t_typical");
      if (bwc >= 0) {
        double mbs = 0;
        if (!text::toDouble(w[bwc], mbs) || mbs <= 0)
          throw InputError(fmt::format("{}: line {}: BW average '{}' is not a positive number (a failed clock "
                                       "calibration prints inf/nan)",
                                       source, i + 1, w[bwc]));
        s.coll = "write_bw";
        s.busBwGBps = s.algBwGBps = mbs * 1048576.0 / 1e9;  // perftest MB/sec: 2^20 bytes per second
        s.timeUs = static_cast<double>(bytes) / (s.algBwGBps * 1e3);
      } else if (tc >= 0) {
        double us = 0;
        if (!text::toDouble(w[tc], us) || us <= 0)
          throw InputError(fmt::format("{}: line {}: latency '{}' is not a positive number", source, i + 1, w[tc]));
        s.coll = "write_lat";
        s.timeUs = us;
        s.algBwGBps = s.busBwGBps = static_cast<double>(bytes) / (us * 1e3);
      } else {
        throw InputError(fmt::format("{}: line {}: the header has neither 'BW average' nor 't_avg'/'t_typical'",
                                     source, i + 1));
      }
      s.path = "perftest " + std::string(s.coll == "write_bw" ? "ib_write_bw" : "ib_write_lat") +
               (device.empty() ? "" : " " + device) + (linkType.empty() ? "" : " " + linkType);
      s.extra = {{"tool", "perftest"}, {"test", test}, {"source", source}};
      if (!device.empty()) s.extra.push_back({"device", device});
      if (!linkType.empty()) s.extra.push_back({"link_type", linkType});
      s.extra.push_back({"note", "one pair of processes; busbw = perftest's BW average (not a collective)"});
      out.push_back(std::move(s));
    }
  }
  if (out.empty()) throw InputError(fmt::format("{}: no perftest result rows found", source));
  return out;
}

nlohmann::json importedRunJson(const std::string& label, const std::string& file, const std::vector<Sample>& rows,
                               const std::string& tool) {
  std::string t = tool;
  for (auto& [k, v] : rows.front().extra)
    if (k == "tool") t = v;
  return {{"run_id", label},
          {"command_line", fmt::format("({} output imported from {})", t, file)},
          {"imported_from", file},
          {"tool", t},
          {"summary", {{"ok", true}, {"status", "imported"}, {"notes", nlohmann::json::array()}}}};
}

RunData loadRunAny(const std::string& argIn) {
  if (auto spec = splitInputArg(argIn); spec.isNcclTests) {
    auto runs = loadNcclTestsRuns(spec);  // FILE#k: run k alone
    if (runs.size() == 1) return runs.front();
    throw InputError(fmt::format("{}: the file holds {} nccl-tests runs; pick one with {}#k (k = 1..{})", spec.file,
                                 runs.size(), spec.file, runs.size()));
  }
  const std::string& arg = argIn;
  fs::path p(arg);
  std::error_code ec;
  RunData r;
  fs::path csv, json;
  if (fs::is_directory(p, ec)) {
    csv = p / "table.csv";
    json = p / "run.json";
    r.dir = p.string();
  } else if (fs::is_regular_file(p, ec)) {
    r.dir = p.parent_path().string();
    if (r.dir.empty()) r.dir = ".";
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    auto kind = sniffInput(text);
    if (kind == InputKind::kPerftest) {
      r.rows = parsePerftest(text, arg);
      r.label = p.stem().string();
      r.runJson = importedRunJson(r.label, arg, r.rows, "perftest");
      return r;
    }
    if (kind != InputKind::kTableCsv && text.find("NCCL INFO") != std::string::npos)
      throw InputError(fmt::format("'{}' holds NCCL INFO lines but no nccl-tests result table: nothing to read as "
                                   "a series",
                                   arg));
    if (kind != InputKind::kTableCsv)
      throw InputError(fmt::format("'{}' is not a run folder, a fabricbench table.csv, nccl-tests output or perftest "
                                   "output",
                                   arg));
    csv = p;
    json = p.parent_path() / "run.json";
  } else {
    throw InputError(fmt::format("'{}' is neither a run folder nor a file", arg));
  }
  if (!fs::exists(csv)) throw InputError(fmt::format("'{}' has no table.csv", arg));
  try {
    r.rows = readCsv(csv.string());
  } catch (const Error& e) {
    throw InputError(e.what());
  }
  if (fs::exists(json)) {
    std::ifstream in(json);
    try {
      r.runJson = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      printLine(programName(), ": warning: ", json.string(), " is not valid JSON (", e.what(), "); using table.csv only");
    }
  } else {
    printLine(programName(), ": warning: ", json.string(), " missing; no fingerprint for this run");
  }
  if (r.runJson.is_object() && r.runJson.contains("run_id") && r.runJson["run_id"].is_string() &&
      !r.runJson["run_id"].get<std::string>().empty())
    r.label = r.runJson["run_id"].get<std::string>();
  else
    r.label = fs::path(r.dir).filename().string();
  if (r.label.empty() || r.label == ".") r.label = fs::absolute(r.dir).filename().string();
  return r;
}

std::vector<RunData> loadRunsAny(const std::string& arg) {
  if (auto spec = splitInputArg(arg); spec.isNcclTests) {
    return loadNcclTestsRuns(spec);  // FILE#k: run k alone
  }
  return {loadRunAny(arg)};
}

}  // namespace fb

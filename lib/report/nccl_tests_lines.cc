// The lines around nccl-tests' result table: line prefixes, NCCL INFO facts. See nccl_tests_lines.h.
#include "report/nccl_tests_lines.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <regex>

#include "core/text.h"

namespace fb::nccltests {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

const char* const kAmdGpuPattern = R"(\bMI[0-9]{2,3}[A-Z]*\b|\bAMD\b|\bInstinct\b|\bRadeon\b)";

HeaderShape headerShape(const std::string& line) {
  auto w = text::words(line);
  HeaderShape h;
  auto has = [&](const char* n) { return std::find(w.begin(), w.end(), n) != w.end(); };
  std::vector<std::size_t> times;
  for (std::size_t i = 0; i < w.size(); ++i)
    if (w[i] == "time" || w[i] == "cputime") times.push_back(i);
  if (!has("size") || !has("count") || !has("type") || times.empty()) return h;
  h.known = true;
  h.redop = has("redop");
  h.root = has("root");
  h.maxError = has("error") && !has("#wrong");
  if (times.size() >= 2) h.stride = times[1] - times[0];
  h.placements = times.size();
  return h;
}

const char* const kCurrentHeader =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong";

const NcclTestsType* ncclTestsType(const std::string& t) {
  static const NcclTestsType table[] = {
      {"float", "float32", 4}, {"half", "float16", 2},  {"double", "float64", 8}, {"bfloat16", "bfloat16", 2},
      {"int8", "int8", 1},     {"uint8", "uint8", 1},   {"int32", "int32", 4},    {"uint32", "uint32", 4},
      {"int", "int32", 4},     {"int64", "int64", 8},   {"uint64", "uint64", 8},  {"f8e4m3", "fp8e4m3", 1},
      {"f8e5m2", "fp8e5m2", 1}};
  for (const auto& e : table)
    if (t == e.name) return &e;
  return nullptr;
}

bool isHeaderlessRow(const std::vector<std::string>& w) {
  static const std::regex redop(R"(sum|prod|max|min|avg|none|premulsum)");
  std::size_t u = 0;
  auto number = [](const std::string& x) { return !x.empty() && (std::isdigit(static_cast<unsigned char>(x[0])) || x == "N/A"); };
  if (w.size() != 13 || !text::toUnsigned(w[0], u) || !text::toUnsigned(w[1], u)) return false;
  if (!ncclTestsType(w[2]) || !std::regex_match(w[3], redop)) return false;
  for (std::size_t k = 4; k < 13; ++k)
    if (!(number(w[k]) || (k == 4 && w[k] == "-1"))) return false;
  return true;
}

bool isAmdGpuName(const std::string& gpu) {
  static const std::regex re(kAmdGpuPattern, std::regex::icase);
  return std::regex_search(gpu, re);
}

namespace {
// The count written just before `label` in an INFO line ("32 coll channels" -> 32); -1 when absent.
int countBefore(const std::string& l, const char* label) {
  const auto p = l.find(label);
  if (p == std::string::npos) return -1;
  auto w = text::words(l.substr(0, p));
  std::size_t v = 0;
  return !w.empty() && text::toUnsigned(w.back(), v) ? static_cast<int>(v) : -1;
}
}  // namespace

// "... via P2P/CUMEM/read" -> "P2P/CUMEM"; "via NET/IB/0/GDRDMA" -> "NET/IB" (+ GDRDMA seen).
std::string transportIn(const std::string& line, bool& gdr) {
  auto p = line.find(" via ");
  if (p == std::string::npos) return "";
  std::string rest = line.substr(p + 5);
  auto w = text::words(rest);
  if (w.empty()) return "";
  if (rest.find("GDRDMA") != std::string::npos) gdr = true;
  std::vector<std::string> parts;
  std::string cur;
  for (char c : w[0]) {
    if (c == '/') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  if (parts[0].empty()) return "";
  if (parts[0] == "SHM") return "SHM";
  if (parts[0] == "NET" && parts.size() >= 2 && !isDigit(parts[1].empty() ? 'x' : parts[1][0])) {
    // the plugin's name may hold spaces: "via NET/NCCL RDMA Plugin v8/0/GDRDMA"
    std::string net = rest.substr(4);
    std::size_t k = 0;
    while (k < net.size() && !(net[k] == '/' && k + 1 < net.size() && isDigit(net[k + 1])) && net[k] != '(' &&
           !(net[k] == ' ' && k + 1 < net.size() && (net[k + 1] == '[' || net[k + 1] == '('))) ++k;
    return "NET/" + text::trim(net.substr(0, k));
  }
  if (parts.size() >= 2 && parts[0] == "P2P") return "P2P/" + parts[1];
  return parts[0];
}

bool isTimeAt(const std::string& s, std::size_t i, std::size_t& end) {
  // HH:MM:SS[.fff][Z|+hh:mm]
  if (i + 8 > s.size()) return false;
  if (!(isDigit(s[i]) && isDigit(s[i + 1]) && s[i + 2] == ':' && isDigit(s[i + 3]) && isDigit(s[i + 4]) &&
        s[i + 5] == ':' && isDigit(s[i + 6]) && isDigit(s[i + 7])))
    return false;
  std::size_t j = i + 8;
  if (j < s.size() && (s[j] == '.' || s[j] == ',')) {
    ++j;
    while (j < s.size() && isDigit(s[j])) ++j;
  }
  if (j < s.size() && s[j] == 'Z') ++j;
  else if (j + 2 < s.size() && (s[j] == '+' || s[j] == '-') && isDigit(s[j + 1]) && isDigit(s[j + 2])) {
    j += 3;
    if (j < s.size() && s[j] == ':') ++j;
    while (j < s.size() && isDigit(s[j])) ++j;
  }
  end = j;
  return true;
}

// A leading timestamp: "2025-06-18 10:21:33 ", "2025-06-18T10:21:33.123Z ", "[...] ", "10:21:33 ".
bool stripTimestamp(std::string& l) {
  std::size_t i = 0;
  bool br = false;
  if (i < l.size() && l[i] == '[') {
    br = true;
    ++i;
  }
  std::size_t j = i, end = 0;
  if (j + 10 <= l.size() && isDigit(l[j]) && isDigit(l[j + 1]) && isDigit(l[j + 2]) && isDigit(l[j + 3]) &&
      (l[j + 4] == '-' || l[j + 4] == '/') && isDigit(l[j + 5]) && isDigit(l[j + 6]) && l[j + 7] == l[j + 4] &&
      isDigit(l[j + 8]) && isDigit(l[j + 9])) {
    j += 10;
    if (j < l.size() && (l[j] == 'T' || l[j] == ' ')) ++j;
    if (!isTimeAt(l, j, end)) return false;
  } else if (!isTimeAt(l, j, end)) {
    return false;
  }
  j = end;
  if (br) {
    if (j >= l.size() || l[j] != ']') return false;
    ++j;
  }
  if (j < l.size() && l[j] == ':') ++j;
  if (j < l.size() && l[j] != ' ' && l[j] != '\t') return false;
  while (j < l.size() && (l[j] == ' ' || l[j] == '\t')) ++j;
  l.erase(0, j);
  return true;
}

// Open MPI --tag-output's "[job,rank]": digits and commas between the brackets at l[open], at least one comma.
namespace {
bool isRankTag(const std::string& l, std::size_t open, std::size_t close) {
  const std::string in = l.substr(open + 1, close - open - 1);
  return !in.empty() && in.find(',') != std::string::npos &&
         std::all_of(in.begin(), in.end(), [](char c) { return isDigit(c) || c == ','; });
}
}  // namespace

// srun -l " 0: " / "12: ", Open MPI --tag-output "[1,0]<stdout>:", Ray's "(head, rank=0, pid=1) " and timestamps,
// in any order.
std::string stripPrefixes(std::string l) {
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    if (stripTimestamp(l)) changed = true;
    // srun -l: optional spaces, digits, ':', one space (or end)
    {
      std::size_t i = 0;
      while (i < l.size() && l[i] == ' ') ++i;
      std::size_t d = i;
      while (i < l.size() && isDigit(l[i])) ++i;
      if (i > d && i - d <= 6 && i < l.size() && l[i] == ':' && (i + 1 == l.size() || l[i + 1] == ' ')) {
        // not a time ("10:21:33") and not a data row (those have no ':' there)
        l.erase(0, std::min(l.size(), i + 2));
        changed = true;
      }
    }
    // Ray's log prefix, "(head, rank=0, pid=3808) " or "(worker1, rank=1, pid=2769, ip=10.0.0.2) " (SkyPilot runs)
    if (auto k = l.find_first_not_of(" \t"); k != std::string::npos && l[k] == '(') {
      const auto close = l.find(')', k);
      if (close != std::string::npos && close - k < 160 && l.substr(k, close - k).find("pid=") != std::string::npos) {
        l.erase(0, close + 1);
        if (!l.empty() && l[0] == ' ') l.erase(0, 1);
        changed = true;
      }
    }
    // Open MPI --tag-output, also where a Markdown list indents the pasted lines
    if (auto k = l.find_first_not_of(" \t"); k != std::string::npos && l[k] == '[') {
      l.erase(0, k);
      auto close = l.find(']');
      if (close != std::string::npos && close < 16) {
        if (isRankTag(l, 0, close)) {
          std::size_t j = close + 1;
          if (text::startsWith(l.substr(j), "<stdout>") || text::startsWith(l.substr(j), "<stderr>")) j += 8;
          if (j < l.size() && l[j] == ':') ++j;
          l.erase(0, j);
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  // Open MPI --tag-output tags inside a line: ranks' output interleaved mid-row ("... -1[1,0]<stdout>:    85.70 ...")
  for (std::size_t at; (at = l.find("]<std")) != std::string::npos;) {
    const auto open = l.rfind('[', at);
    const bool tag = open != std::string::npos && isRankTag(l, open, at) && l.size() > at + 9 && l[at + 9] == ':' &&
                     (l.compare(at + 1, 8, "<stdout>") == 0 || l.compare(at + 1, 8, "<stderr>") == 0);
    if (!tag) break;
    l.replace(open, at + 10 - open, " ");
  }
  return l;
}

void addUnique(std::vector<std::string>& v, const std::string& s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

void readInfoLine(const std::string& l, InfoFacts& f) {
  auto p = l.find("NCCL version ");
  if (p != std::string::npos) {
    auto w = text::words(l.substr(p + 13));
    if (!w.empty()) addUnique(f.ncclVersions, w[0]);
  }
  p = l.find(" set by environment to ");
  if (p != std::string::npos) {
    auto w = text::words(l.substr(0, p));
    std::string key = w.empty() ? "" : w.back();
    auto v = text::words(l.substr(p + 23));
    if (text::startsWith(key, "NCCL_") && !v.empty()) {
      std::string val = v[0];
      if (!val.empty() && val.back() == '.') val.pop_back();
      f.env[key] = val;
    }
  }
  bool gdr = false;
  addUnique(f.transports, transportIn(l, gdr));
  if (gdr) f.gdr = true;
  if (l.find("GDRDMA") != std::string::npos || l.find("GPU Direct RDMA Enabled") != std::string::npos)
    f.gdr = true;
  // "32 coll channels, 32 collnet channels, ..., 32 p2p channels" / "nChannels 16"
  if (int n = countBefore(l, " coll channels"); n >= 0) f.channels = n;
  // "..., 0 nvls channels, ...": 0 where NVLS is off (NCCL_NVLS_ENABLE=0) or the node has no NVSwitch multicast.
  f.nvlsChannels = std::max(f.nvlsChannels, countBefore(l, " nvls channels"));
  p = l.find("nChannels ");
  if (p != std::string::npos && f.channels == 0) {
    auto w = text::words(l.substr(p + 10));
    std::size_t v = 0;
    if (!w.empty()) {
      std::string s = w[0];
      while (!s.empty() && !isDigit(s.back())) s.pop_back();
      if (text::toUnsigned(s, v)) f.channels = static_cast<int>(v);
    }
  }
  // "Pattern 4, crossNic 0, nChannels 16, bw 40.000000/40.000000, type NVL/PIX, sameChannels 1"
  auto q = l.find(", type ");
  if (q != std::string::npos && f.graphType.empty()) {
    auto w = text::words(l.substr(q + 7));
    if (!w.empty()) {
      f.graphType = w[0];
      if (f.graphType.back() == ',') f.graphType.pop_back();
    }
  }
  // tuner / "AllReduce: opCount 0 ... algorithm 1 protocol 2" / "Algo Ring proto Simple"
  // The word after any of `keys`, when it is a name (not a number), trailing ',' or ';' cut.
  auto nameAfter = [&](std::initializer_list<const char*> keys, std::vector<std::string>& into) {
    for (const char* key : keys) {
      std::size_t k = l.find(key);
      if (k == std::string::npos) continue;
      auto w = text::words(l.substr(k + std::string(key).size()));
      if (w.empty() || !std::isalpha(static_cast<unsigned char>(w[0][0]))) continue;
      std::string a = w[0];
      while (!a.empty() && (a.back() == ',' || a.back() == ';')) a.pop_back();
      addUnique(into, a);
    }
  };
  nameAfter({"algorithm ", "algo ", "Algo "}, f.algos);
  nameAfter({"protocol ", "proto ", "Proto "}, f.protos);
}

}  // namespace fb::nccltests

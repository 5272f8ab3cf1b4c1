#include "topology/nccl_log.h"
#include "core/text.h"

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

namespace fb::topo {
namespace {

// The bracket after a rank: the CUDA device (2.1x+) or, in old logs, the bus id in hex ("b1000").
int bracketNumber(const std::string& s) {
  try {
    return static_cast<int>(std::stol(s, nullptr, 0));
  } catch (const std::exception&) {
    return static_cast<int>(std::stol(s, nullptr, 16));
  }
}

}  // namespace

std::string transportFamily(std::string_view via) {
  std::string v = text::trim(via);
  auto first = v.find('/');
  std::string head = v.substr(0, first);
  if (head == "NET") {
    auto second = v.find('/', first + 1);
    return "NET/" + v.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  }
  if (head.rfind("CollNet", 0) == 0) return "CollNet";
  return head;
}

bool usesGdrdma(std::string_view via) { return via.find("/GDRDMA") != std::string_view::npos; }

NcclLogSummary parseNcclLog(std::string_view text) { return parseNcclLog(text, nullptr); }

NcclLogSummary parseNcclLog(std::string_view text, const NcclInfoLine& other) {
  NcclLogSummary s;
  static const std::regex kPrefix(R"(([^\s:\]>]+):(\d+):(\d+) \[[0-9]+\] NCCL INFO)");
  // Anchored on the message part; the "host:pid:tid [dev] NCCL INFO " prefix is skipped.
  static const std::regex kConn(R"(Channel (\d+)(?:/(\d+))? : (\d+)\[([0-9a-fx]+)\] -> (\d+)\[([0-9a-fx]+)\](?: \[(send|receive)\])? via (.+)$)");
  static const std::regex kRing(R"(Channel (\d+)/(\d+) :((?: \d+)+)\s*$)");
  static const std::regex kChannels(R"((\d+) coll channels, (?:(\d+) collnet channels, )?(?:(\d+) nvls channels, )?(\d+) p2p channels)");
  static const std::regex kComm(R"(comm 0x[0-9a-f]+ rank (\d+) nRanks (\d+) nNodes (\d+))");
  static const std::regex kVersion(R"(NCCL version (\S+))");
  static const std::regex kGraph(R"(Pattern \d+, crossNic \d+, nChannels \d+, bw [0-9.]+/[0-9.]+, type ([A-Z]+/[A-Z]+))");
  static const std::regex kNetwork(R"(Using network (\S+))");
  std::istringstream in{std::string(text)};
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    auto info = line.find("NCCL INFO ");
    auto warn = line.find("NCCL WARN ");
    if (warn != std::string::npos) {
      s.warnings.push_back(text::trim(std::string_view(line).substr(warn + 10)));
      continue;
    }
    if (info == std::string::npos) continue;
    std::string msg = text::trim(std::string_view(line).substr(info + 10));
    bool isConnection = std::regex_search(msg, m, kConn);
    // The host prefix is read only where it is used: connection lines and the caller's lines.
    std::string host;
    if (isConnection || other) {
      std::smatch h;
      std::string head = line.substr(0, info + 9);
      if (std::regex_search(head, h, kPrefix)) host = h[1];
    }
    if (!isConnection && other) other(host, msg);
    if (isConnection) {
      NcclConnection c;
      c.channel = std::stoi(m[1]);
      if (m[2].matched) c.connIndex = std::stoi(m[2]);
      c.from = std::stoi(m[3]);
      c.fromDev = bracketNumber(m[4]);
      c.to = std::stoi(m[5]);
      c.toDev = bracketNumber(m[6]);
      c.direction = m[7];
      c.via = text::trim(m[8].str());
      c.host = host;
      s.connections.push_back(std::move(c));
    } else if (std::regex_search(msg, m, kRing)) {
      s.ringChannels = std::max(s.ringChannels, std::stoi(m[2]));
    } else if (std::regex_search(msg, m, kChannels)) {
      s.collChannels = std::stoi(m[1]);
      if (m[3].matched) s.nvlsChannels = std::stoi(m[3]);
      s.p2pChannels = std::stoi(m[4]);
    } else if (std::regex_search(msg, m, kComm)) {
      int r = std::stoi(m[1]);
      if (std::find(s.ranks.begin(), s.ranks.end(), r) == s.ranks.end()) s.ranks.push_back(r);
      s.nRanks = std::stoi(m[2]);
      s.nNodes = std::stoi(m[3]);
    } else if (std::regex_search(msg, m, kVersion)) {
      s.version = m[1];
    } else if (std::regex_search(msg, m, kGraph)) {
      if (std::find(s.graphTypes.begin(), s.graphTypes.end(), m[1].str()) == s.graphTypes.end())
        s.graphTypes.push_back(m[1]);
    } else if (std::regex_search(msg, m, kNetwork)) {
      s.network = m[1];
    } else if (msg.rfind("NET/Socket : Using ", 0) == 0) {
      static const std::regex kIf(R"(\[\d+\]([^:\s]+):)");
      for (std::sregex_iterator it(msg.begin(), msg.end(), kIf), end; it != end; ++it)
        if (std::find(s.socketInterfaces.begin(), s.socketInterfaces.end(), (*it)[1].str()) == s.socketInterfaces.end())
          s.socketInterfaces.push_back((*it)[1]);
    } else if (msg.find(" set by environment to ") != std::string::npos && msg.rfind("NCCL_", 0) == 0) {
      s.envLines.push_back(msg);
    }
    if (msg.find("Init COMPLETE") != std::string::npos) ++s.initComplete;
  }
  return s;
}

std::vector<NcclConnection> NcclLogSummary::connectionsOf(int rank) const {
  std::vector<NcclConnection> out;
  for (const auto& c : connections)
    if (rank < 0 || c.from == rank || c.to == rank) out.push_back(c);
  return out;
}

std::set<std::string> NcclLogSummary::families(int rank) const {
  std::set<std::string> f;
  for (const auto& c : connectionsOf(rank)) f.insert(transportFamily(c.via));
  return f;
}

std::string NcclLogSummary::transportsText(int rank) const {
  std::map<std::string, int> counts;
  for (const auto& c : connectionsOf(rank)) ++counts[c.via];
  std::string out;
  for (const auto& [via, n] : counts) {
    if (!out.empty()) out += ", ";
    out += via + " x" + std::to_string(n);
  }
  return out;
}

int NcclLogSummary::connectedChannels(int rank) const {
  int mx = -1;
  for (const auto& c : connectionsOf(rank)) mx = std::max(mx, c.channel);
  return mx + 1;
}

}  // namespace fb::topo

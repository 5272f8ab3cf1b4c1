// Reading the lines around nccl-tests' result table (lib/report/import_nccl_tests.cc): the launchers' and
// loggers' line prefixes, and the facts an NCCL INFO/WARN line gives about its run.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace fb::nccltests {

bool isDigit(char c);

// srun -l " 0: " / "12: ", Open MPI --tag-output "[1,0]<stdout>:", and timestamps, in any order, removed.
std::string stripPrefixes(std::string l);
// "... via P2P/CUMEM/read" -> "P2P/CUMEM"; "via NET/IB/0/GDRDMA" -> "NET/IB" (gdr set when GDRDMA is named).
std::string transportIn(const std::string& line, bool& gdr);

// What a run's NCCL INFO lines say: NCCL versions, NCCL_* settings, transports, GPU Direct RDMA, the
// channel counts, the graph's link type, and the algorithms and protocols a tuner or op line names.
struct InfoFacts {
  std::vector<std::string> ncclVersions;
  std::map<std::string, std::string> env;
  std::vector<std::string> transports;
  bool gdr = false;
  int channels = 0;
  int nvlsChannels = -1;  // "N nvls channels" (NCCL 2.17+), the most any rank says; -1 = not logged
  std::string graphType;
  std::vector<std::string> algos, protos;
};
void addUnique(std::vector<std::string>& v, const std::string& s);
// One "NCCL INFO" or "NCCL WARN" line (prefixes already stripped) into f.
void readInfoLine(const std::string& l, InfoFacts& f);

}  // namespace fb::nccltests

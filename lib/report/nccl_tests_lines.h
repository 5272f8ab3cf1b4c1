// Reading the lines around nccl-tests' result table (lib/report/import_nccl_tests.cc): the launchers' and
// loggers' line prefixes, and the facts an NCCL INFO/WARN line gives about its run.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace fb::nccltests {

bool isDigit(char c);

// An AMD GPU's name as a "#  Rank" line prints it ("AMD Instinct MI300X", "Radeon RX 7900", "MI250X"), matched
// case-blind: its run is RCCL's. The model's GPU families (lib/model/nccl.cc) use the same pattern.
extern const char* const kAmdGpuPattern;
bool isAmdGpuName(const std::string& gpu);

// The column header's shape: whether it names redop and root, how many columns each placement has (4; 8 with -I 1's
// per-iteration columns) and whether the fourth is 'error' (nccl-tests 2.0-era: a max error, not a count of wrong
// elements). 2.0-era tables print no redop for AllGather, a root and no redop for Broadcast, no root before 2.x;
// an old AllToAll names a redop and leaves it blank in its rows.
struct HeaderShape {
  bool known = false, redop = true, root = true, maxError = false;
  std::size_t stride = 4;
  std::size_t placements = 2;  // how many 'time' columns the header names
};
// Its words "size", "count", "type" and a "time" (known), else a default shape with known false.
HeaderShape headerShape(const std::string& line);
// nccl-tests' type column: its name, the suite's name for it and its bytes; nullptr for a name it does not print.
struct NcclTestsType {
  const char* name;
  const char* dtype;
  std::size_t bytes;
};
const NcclTestsType* ncclTestsType(const std::string& t);
// A result row of today's 13 columns (size count type redop root, then time algbw busbw #wrong twice), as pasted
// without the column header above it (NVIDIA/nccl-tests issue 294): read as if that header stood there.
bool isHeaderlessRow(const std::vector<std::string>& words);
extern const char* const kCurrentHeader;

// srun -l " 0: " / "12: ", Open MPI --tag-output "[1,0]<stdout>:", Ray's "(head, rank=0, pid=1) " and timestamps,
// in any order, removed.
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

// Other tools' output as series beside our own runs: nccl-tests logs (all_reduce_perf,
// all_gather_perf, reduce_scatter_perf, sendrecv_perf; out-of-place and in-place columns) and
// perftest output (ib_write_bw, ib_write_lat). Rows keep the tool's own numbers; the impl names
// the tool ("nccl-tests", "perftest") and extras say which version, transports and devices.
// Used by fabricbench-report and fabricbench-model; both take a run folder, a table.csv or a log.
#pragma once
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sample.h"
#include "report/summary.h"

namespace fb {

// Bad input file (missing, malformed, not a format we read): the tools print one line, exit 2.
class InputError : public ConfigError {
  using ConfigError::ConfigError;
};

enum class InputKind { kRunFolder, kTableCsv, kNcclTests, kPerftest, kUnknown };

// What a file holds, from its first lines (no full parse).
InputKind sniffInput(const std::string& text);

// nccl-tests stdout (with or without NCCL_DEBUG=INFO lines). nRanks = the "Rank" lines, nNodes =
// distinct host names among them; path = the transports NCCL's INFO lines name ("P2P/CUMEM", "SHM",
// "NET/Socket"), else "transport not logged". Throws InputError on a malformed row, no rows, or a
// log that is not nccl-tests output. `source` names the file in messages.
// All runs in the file are concatenated (use parseNcclTestsRuns to keep them apart).
std::vector<Sample> parseNcclTests(const std::string& text, const std::string& source);

// What the user may say about a log beside its name: FILE:coll=allreduce,ranks=64,nodes=8,algo=Ring,proto=Simple
// and FILE#k.
struct NcclTestsHints {
  std::string coll;  // canonical ("allreduce") or a binary name ("all_reduce_perf"); empty = from the log
  int ranks = 0;     // 0 = from the log
  int nodes = 0;
  std::string algo;   // NCCL_ALGO / NCCL_PROTO the run was forced to, when the log does not print its env
  std::string proto;
  int pick = 0;       // k of FILE#k: only run k is checked and returned (0: every run)
};

// One nccl-tests run (one collective's table) of a log.
struct NcclTestsRun {
  std::vector<Sample> rows;
  nlohmann::json info;  // runJson["nccl_tests"]: version, nccl_version, binary, coll, gpu, hosts, ranks,
                        // nodes, ranks_per_node, env, transports, channels, algo/proto, rank_list
  // runJson["fingerprint"] as a fabricbench run keeps it: one host per '#  Rank' host with its ranks and GPUs,
  // nhosts and nranks; empty without '#  Rank' lines.
  nlohmann::json fingerprint;
};

// Every 2.x format: "# Collective test starting:" (>= 2.16.7) or the binary on the command line or
// the hints' coll; srun -l, Open MPI --tag-output and timestamp prefixes; ``` fences; several runs
// one after the other (each its own NcclTestsRun). An elided '#  Rank' list is refused unless hints
// give ranks and nodes. Throws InputError (one line, naming `source`).
std::vector<NcclTestsRun> parseNcclTestsRuns(const std::string& text, const std::string& source,
                                             const NcclTestsHints& hints = {});

// Splits "FILE[:k=v,...][#k]" (a FILE that exists as given wins over any split).
struct InputArg {
  std::string file;
  NcclTestsHints hints;
  bool isNcclTests = false;  // the file sniffs as nccl-tests output
};
InputArg splitInputArg(const std::string& arg);
std::vector<RunData> loadNcclTestsRuns(const InputArg& spec);

// perftest client or server output of ib_write_bw (coll "write_bw": busbw = BW average, MB/sec as
// perftest prints it = 2^20 bytes/s, converted to GB = 1e9) or ib_write_lat (coll "write_lat": time =
// t_avg, or t_typical when t_avg is absent). Throws InputError as above.
std::vector<Sample> parsePerftest(const std::string& text, const std::string& source);

// A run folder (table.csv + run.json), a table.csv, or a log of another tool: the rows and the run
// metadata (for logs: run.json is synthesised with run_id = file name, tool, command line unknown).
// Throws InputError with one line of why.
// nccl-tests logs: FILE[:coll=..,ranks=..,nodes=..][#k]; a log with several runs needs #k here.
RunData loadRunAny(const std::string& arg);

// Like loadRunAny, one RunData per nccl-tests run in the file (label = file stem, "-k" appended when
// there are several); other inputs give one RunData.
std::vector<RunData> loadRunsAny(const std::string& arg);

// run.json for a log's rows imported from `file` (non-empty rows): run_id = label, tool = the rows' "tool" extra
// (else `tool`), command line unknown, status imported. The nccl-tests and perftest readers share it.
nlohmann::json importedRunJson(const std::string& label, const std::string& file, const std::vector<Sample>& rows,
                               const std::string& tool);

}  // namespace fb

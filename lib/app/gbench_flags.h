// Google Benchmark's flags, as fabricbench honours them. Under MPI, Google Benchmark's own runner
// and reporters do not fit (one iteration per benchmark, every rank would report, cpu_time is the
// process's CPU time, not the operation's), so fabricbench reads the --benchmark_* flags itself:
//   honoured: --benchmark_filter, --benchmark_list_tests, --benchmark_format, --benchmark_out,
//             --benchmark_out_format, --benchmark_repetitions (= --repeat; the outputs hold one entry
//             per repetition and the mean/median/stddev/cv aggregates), --benchmark_time_unit,
//             --benchmark_context
//   refused with the reason (exit 2): every other --benchmark_* flag, unknown ones included.
// Outputs (json, csv) are written by rank 0 only, with real_time and bytes_per_second; cpu_time
// repeats real_time (a rank's CPU time says nothing about a fabric operation, and tools/compare.py
// skips entries without one).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/sample.h"

namespace fb {

struct BenchmarkFlags {
  std::string filter;              // regex (Google Benchmark semantics: search; leading '-' negates)
  bool listTests = false;
  std::string format = "console";  // stdout: console (fabricbench's table), json or csv
  std::string out;                 // file; written by rank 0 at the end of the run
  std::string outFormat = "json";  // json, csv or console (the table)
  int repetitions = 0;             // 0 = not given
  std::string timeUnit = "us";     // ns, us, ms, s (our benchmarks' unit is us)
  std::vector<std::pair<std::string, std::string>> context;  // --benchmark_context=k=v,k=v
  std::vector<std::string> given;  // the flags as given (canonical comparison across ranks)
};

// Pulls every --benchmark_* argument out of `args` (the rest stay, in order). Throws ConfigError
// with one line for an unknown, malformed or unsupported flag.
BenchmarkFlags takeBenchmarkFlags(std::vector<std::string>& args);

// True when the benchmark `name` passes the filter.
bool benchmarkSelected(const BenchmarkFlags& f, const std::string& name);

// When --benchmark_filter selects none of `names` (every benchmark of the run): one line naming
// the filter and the real names (e.g. allreduce/tcp/8), so "AllReduce" is not a silent empty run.
// "" when the filter selects any, or none was given.
std::string filterHint(const BenchmarkFlags& f, const std::vector<std::string>& names);

// Google Benchmark's JSON and CSV documents for the rows of a run (name = the benchmark name of
// the row). `context` holds extra "context" keys (host, ranks, run id...).
struct NamedSample {
  std::string name;
  Sample sample;
};
std::string benchmarkJson(const std::vector<NamedSample>& rows, const BenchmarkFlags& f,
                          const std::vector<std::pair<std::string, std::string>>& context);
std::string benchmarkCsv(const std::vector<NamedSample>& rows, const BenchmarkFlags& f);

}  // namespace fb

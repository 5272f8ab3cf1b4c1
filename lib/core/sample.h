// One result row. Every output format (console, CSV, JSON, Markdown, plots) is fed from this.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fb {

struct Sample {
  std::string coll;       // "allreduce", "allgather", "reducescatter", "p2pring"
  std::string impl;       // who moved the data: "tcp", "mpi", "nccl", "cuda", "verbs"
  std::string path;       // attested path label, e.g. "tcp lo 127.0.0.1", "NVLink P2P/CUMEM x16ch"
  std::string dtype;      // "float32", ...
  bool inPlace = false;
  std::size_t bytes = 0;  // S as nccl-tests defines it (total buffer for allgather/reducescatter)
  std::size_t count = 0;  // elements per rank parameter (nccl-tests "count")
  int nRanks = 1;
  int nNodes = 1;
  int iters = 0;
  // Per operation: the MEDIAN over `repeats` timed batches of (batch time / iters), each batch's
  // time combined over ranks as `rankTime` says (see lib/harness/runner.h, --timer, -a).
  double timeUs = 0;
  double algBwGBps = 0;   // bytes / time, GB = 1e9 (from the median time)
  double busBwGBps = 0;   // algbw × busbw factor (from the median time)
  std::string timer;             // "rank-events", "rank-clock" or "nccl-tests" (core/timer_names.h)
  std::string rankTime = "max";  // how each batch's time is combined over ranks: max, avg, min, rank0
  int repeats = 1;               // timed batches behind this row
  double timeUsMin = -1, timeUsMax = -1;  // fastest / slowest batch (per operation); -1 = unknown (old files)
  double p50Us = -1, p99Us = -1;          // --per-op: per-operation percentiles; -1 = not measured
  std::vector<double> perOpUs;            // --per-op: every operation's time (slowest rank), in run order;
                                          // run.json's per_op_us (not in table.csv)
  std::vector<double> batchUs;            // each timed batch's time per operation, in run order (this run's rows
                                          // only: Google Benchmark's repetitions; not in the result files)
  std::int64_t wrong = -1;  // wrong elements summed over ranks; -1 = not checked
  double pctNominal = -1;   // busbw as % of the nominal link rate; -1 = unknown
  std::vector<std::pair<std::string, std::string>> extra;  // backend details (channels, GID, ...)

  // busbw of the slowest / fastest batch (busbw scales with 1/time); -1 when unknown.
  double busBwMin() const { return timeUsMax > 0 && timeUs > 0 ? busBwGBps * timeUs / timeUsMax : -1; }
  double busBwMax() const { return timeUsMin > 0 && timeUs > 0 ? busBwGBps * timeUs / timeUsMin : -1; }
};

}  // namespace fb

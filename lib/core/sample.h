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
  double timeUs = 0;      // per operation, MAX over ranks of each rank's timed batch / iters
  double algBwGBps = 0;   // bytes / time, GB = 1e9
  double busBwGBps = 0;   // algbw × busbw factor
  std::int64_t wrong = -1;  // wrong elements summed over ranks; -1 = not checked
  double pctNominal = -1;   // busbw as % of the nominal link rate; -1 = unknown
  std::vector<std::pair<std::string, std::string>> extra;  // backend details (channels, GID, ...)
};

}  // namespace fb

// The run's verdict: passed, partial, failed or nothing ran, and the exit code, from what was
// measured and what was skipped. "passed" needs every row right AND the fabric the user asked
// for: a named transport skipped without any row of it, or with some of its rows declined (MPI
// has no avg), a GPU node where no GPU path ran under --transport auto, or a --require'd path
// without rows, make the run "partial" (exit 4).
//   exit 0 passed · 1 failed (wrong elements, or aborted) · 2 bad input · 3 nothing ran · 4 partial
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fb {

constexpr int kExitPassed = 0, kExitFailed = 1, kExitBadInputCode = 2, kExitNothingRan = 3, kExitPartial = 4;

struct VerdictInput {
  std::int64_t rows = 0, badRows = 0, wrongTotal = 0;
  bool checked = true;                                       // -c > 0
  std::vector<std::string> measured;                         // backend labels with rows ("tcp", "nccl:nvlink")
  std::vector<std::pair<std::string, std::string>> skipped;  // backend label, why
  // Rows a backend that did open declined (MPI has no avg): backend label, "allreduce float32 avg: why".
  // A named backend's declined rows make the run partial, as a whole skipped backend does.
  std::vector<std::pair<std::string, std::string>> declined;
  std::vector<std::string> named;                            // transports named on the command line (not via auto)
  bool autoTransports = false;                               // --transport auto (or contains auto)
  std::string gpus;                                          // GPUs any rank's node has, e.g. "2 × NVIDIA H200"; "" none
  std::vector<std::string> required;                         // --require: transport names, or "gpu" (any gpuBackends)
  std::vector<std::string> attestRequired;                   // --require ib|roce|gdr|nvlink|rails=N (NCCL's attestation)
  std::vector<std::string> gpuBackends;                      // implementations whose rows are GPU paths (the backend table's)
};

struct Verdict {
  int exitCode = kExitPassed;
  bool ok = true;
  std::string status;                 // one line: "passed: ...", "partial: ...", "failed: ..."
  std::vector<std::string> reasons;   // why partial (each one line)
};

Verdict judgeRun(const VerdictInput& in);

// True for a backend label ("nccl", "nccl:nvlink") whose implementation is one of `gpuBackends`.
bool isGpuBackend(const std::string& label, const std::vector<std::string>& gpuBackends);

}  // namespace fb

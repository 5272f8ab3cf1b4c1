// What a row's implementation (Sample::impl) is, for the code below lib/app that reads rows: the
// report (its ratio baseline), the verdict (who attests --require), the model's validation (who
// pipelines), --accept (which paths the pair test measures). One entry per implementation; a
// fabricbench backend's entry is completed by its entry in lib/app's backend table (backends.h),
// which takes these facts from here, so that a fact is written once.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace fb {

struct ImplFacts {
  std::string_view name;        // Sample::impl, and --transport for a backend
  std::string_view title;       // in prose ("NCCL"); empty: the name
  bool backend = false;         // fabricbench runs it (else: rows imported from another tool)
  bool gpu = false;             // its rows are GPU paths
  bool eventTimer = false;      // its rank timer is CUDA events on its stream (rows say rank-events)
  bool pipelined = false;       // pipelines its chunks, so one step's hops overlap (the model's cost)
  bool ratioBaseline = false;   // with others in one run, the report's ratio columns are ÷ this
  bool attests = false;         // checks --require ib|roce|gdr|nvlink|rails=N itself (a row proves it)
  bool hostAlgorithms = false;  // its collectives are fabricbench's host algorithms (rows name theirs)
  bool modelReference = false;  // model validation: a reference, reported but never held to the bound
                                // (the library switches algorithm by size and rank count)
  bool ncclAlgorithms = false;  // its rows are NCCL's own algorithms: `fabricbench-model nccl` models them
  // --accept-paths: measured pair by pair and in the default list (host paths), or measured pair by
  // pair only when named (GPU paths: a host without GPUs would skip them, so the default leaves them out)
  enum class Accept { kNo, kPairs, kPairsWhenNamed };
  Accept accept = Accept::kNo;
};

// Every implementation, the backends first in the backend table's order.
const std::vector<ImplFacts>& implFacts();
// nullptr when unknown (rows from an unknown tool: every fact false).
const ImplFacts* findImplFacts(std::string_view impl);
// The names with a fact, in table order (e.g. the --accept-paths names).
std::vector<std::string> implNames(bool ImplFacts::*fact);
// --accept-paths: every name it takes, or (measured) those the pair test measures.
std::vector<std::string> acceptPathNames(bool measured = false);
// The implementation of a backend label ("nccl:nvlink" -> "nccl").
std::string_view implOfLabel(std::string_view label);

}  // namespace fb

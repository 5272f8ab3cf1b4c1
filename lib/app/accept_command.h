// fabricbench --accept: acceptance of a delivered cluster, on the whole allocation.
//   1. the doctor on every node (cross-node differences, --require honoured);
//   2. every pair of nodes (circle method: n-1 rounds of n/2 disjoint pairs, all pairs of a round
//      at once), bandwidth at a large size and latency at a small size per path (tcp, mpi, verbs);
//      suspects re-tested before the verdict;
//   3. the whole allocation's collectives, by the normal run (runCollectives);
// then verdicts (line-rate floor, --expect, median/MAD, node vs link faults joined with the
// doctor's differences and the port counters) and the files: acceptance.json, report.md,
// heatmaps, evidence.json. The pure parts live in lib/accept.
#pragma once
#include <functional>
#include <string>

#include "bootstrap/mpi_bootstrap.h"
#include "app/options.h"

namespace fb {

// Collective. runCollectives runs the normal measurement with the given options (its exit code).
// Returns 0 accepted, 1 a threshold/suspect fails, 2 bad input, 4 partial; the same on every rank.
int runAcceptance(MpiBootstrap& bs, Options& o, const std::string& commandLine,
                  const std::function<int(Options&)>& runCollectives);

// fabricbench --accept-baseline RUN_DIR: writes RUN_DIR/expect.json from the run's acceptance.json
// (and collectives/table.csv). Local, no communication. 0 written, 2 bad input.
int writeBaseline(const Options& o);

}  // namespace fb

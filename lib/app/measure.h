// fabricbench's commands over lib/app's parts: the normal run (and --accept's collectives
// phase), --list, and the Google Benchmark outputs. Each is collective: every rank calls it.
#pragma once
#include <string>
#include <vector>

#include "app/options.h"
#include "app/run_recorder.h"
#include "bootstrap/mpi_bootstrap.h"

namespace fb {

constexpr int kExitBadInput = 2;

// The normal run: claim the result folder, plan, fingerprint, begin the files, measure backend by
// backend (one open at a time), judge, end. Returns the exit code every rank agrees on.
int runMeasurements(MpiBootstrap& bs, Options& o, const std::string& commandLine, const std::string& executable,
                    RunRecorder& recorder);

// --list: what this build and this machine can run (rank 0 prints; every rank probes).
void printList(Bootstrap& bs, const Options& o);

// Collective: every rank's fingerprint (JSON text), with each built backend's extras.
std::vector<std::string> gatherFingerprints(Bootstrap& bs, const Options& o);

// "2 × NVIDIA H200" when any rank's node reported GPUs in its fingerprint, else "".
std::string gpusOnNodes(const std::vector<std::string>& fingerprints);

}  // namespace fb

// fabricbench --doctor across the job: one rank per node checks its node (checkNode), every
// node tries to reach every other over the tcp / NCCL socket interface, rank 0 prints the table
// and writes <resultDir>/doctor.json (+ doctor.txt). Every rank returns the same exit code.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "doctor/doctor.h"
#include "report/fingerprint.h"

namespace fb::doctor {

struct RunOptions {
  std::string resultDir;    // "" = no files
  std::string runId;
  std::string commandLine;
  std::string tcpInterface; // --tcp-if
  std::vector<std::string> required;  // --require: items every node must have (checkRequired)
  std::chrono::milliseconds connectTimeout{3000};
  FingerprintOptions fingerprint;
};

// Collective: every rank calls it. Returns 0 (no fail), 1 (a check failed).
int runDoctor(Bootstrap& bs, const Hooks& hooks, const RunOptions& o);

// The address this node's tcp / NCCL socket traffic would use: NCCL_SOCKET_IFNAME (NCCL's
// prefix / '=' exact / '^' exclude rules) when set, else --tcp-if, else the tcp default.
// Throws ConfigError (with the reason) when the variable or --tcp-if names nothing usable.
std::pair<std::string, std::string> reachAddress(const Machine& m, const std::string& tcpIf, const std::string& host);

}  // namespace fb::doctor

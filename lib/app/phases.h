// Phases every rank runs together, each ending in one verdict for all (agree() and onRankZero(),
// for a step only rank 0 can take, are in lib/bootstrap/agree.h): the agreement on the options,
// and the end of a job after a failure not every rank knows about.
#pragma once
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "app/options.h"
#include "bootstrap/agree.h"
#include "bootstrap/mpi_bootstrap.h"

namespace fb {

struct RunRecorder;

// The options, checked on every rank (the form of each flag, then what needs this machine:
// interfaces, memory, the result folder) and agreed in the first exchange before any other
// communication: a bad flag on any rank, or ranks started with different flags (any flag, --help
// and --list included), end every rank with one line (rank 0 prints it) and exit 2. Then the
// run's --timeout applies, and a --root outside the job is refused. Returns the options, or the
// exit code every rank ends with (0 after --help/--version, 2 bad input).
struct AgreedOptions {
  std::optional<Options> options;
  int exitCode = 0;  // when !options
};
AgreedOptions agreeOnOptions(Bootstrap& bs, const std::vector<std::string>& args, std::chrono::seconds startupTimeout);

// Ends the job after a failure that not every rank may know about (a lost or stuck peer, a
// time-out, an error on one rank). Never returns.
//   1. This rank closes its connections, so peers blocked on it learn it now.
//   2. Every rank that is still there tells the others what it saw and hears theirs, for 3 s
//      (point-to-point, MpiBootstrap::exchangeFailureReports); a rank that says nothing is
//      lost or stuck, and it is the one named, whatever the others' errors say about each other.
//   3. The lowest rank still there prints the verdict (one line); rank 0, when there, finalises
//      run.json and report.md with it; then the job is ended (MPI_Abort: the runtime also ends a
//      stopped rank).
[[noreturn]] void failJob(MpiBootstrap& bs, RunRecorder* recorder, const std::exception& e);

// Test runs (FB_TEST_FAIL) show every rank's verdict, so a test can see they are the same.
bool showVerdictsEnv();

}  // namespace fb

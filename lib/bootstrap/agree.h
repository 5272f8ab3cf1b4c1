// One verdict for every rank. A step that may fail on some ranks only (opening a backend,
// preparing buffers, creating a communicator) runs inside agree(): every rank runs its part,
// then all ranks exchange their verdicts and every rank throws the same exception, the most
// severe verdict winning, with the message of the lowest rank that gave it:
//
//   verdict         exception         what the top level does
//   kOk             (none)            goes on
//   kUnavailable    UnavailableError  skips what was being opened, with the reason
//   kBadInput       ConfigError       exit 2, one line
//   kFailed         AgreedFailure     ends the run cleanly on every rank (exit 1, rows kept)
//
// Without it, a failure on one rank makes that rank leave while the others wait in the next
// collective step (or skip while the failing rank aborts the job). The exchange itself is one
// allGather on the Bootstrap: if that is impossible (a rank died), the Bootstrap's own
// time-out and liveness probes apply and the top level aborts the job.
#pragma once
#include <functional>
#include <string>

#include "bootstrap/bootstrap.h"
#include "core/error.h"

namespace fb {

// Every rank agreed that a step failed on some rank: the job can end cleanly on every rank (no
// MPI_Abort), with the failing rank's message.
class AgreedFailure : public Error { using Error::Error; };

enum class StepVerdict : int { kOk = 0, kUnavailable = 1, kBadInput = 2, kFailed = 3 };  // by severity

// Verdict of an exception (UnavailableError, ConfigError, anything else = kFailed).
StepVerdict verdictOf(const std::exception& e);

// Runs fn, then agrees. `what` names the step in the message ("tcp", "cuda prepare").
void agree(Bootstrap& bs, const std::string& what, const std::function<void()>& fn);

// The exchange alone, for code that computed its verdict itself (message empty when kOk).
void agreeOn(Bootstrap& bs, const std::string& what, StepVerdict mine, const std::string& message);

// Runs fn on rank 0 and gives every rank its result. When fn throws, every rank throws what
// agree() would (UnavailableError, ConfigError, AgreedFailure by the exception's verdictOf()),
// with rank 0's message as it is. One broadcast; `what` names the step for a debugger.
std::string onRankZero(Bootstrap& bs, const std::string& what, const std::function<std::string()>& fn);

// Test hook, for proving that an injected failure on one rank gives every rank the same
// verdict: FB_TEST_FAIL=POINT:RANK[:KIND] (KIND unavailable|badinput|error, default error)
// makes failHook(POINT, RANK) throw on that rank. Points: tcp-open, verbs-open, mpi-open,
// cuda-prepare, nccl-init. Several hooks are separated by ','.
void failHook(const std::string& point, int rank);

}  // namespace fb

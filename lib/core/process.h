// Running a helper program (nvidia-smi, ethtool, git, gnuplot) with a deadline. Used by the
// machine inventory, the fingerprint and the plots; nothing here waits without a time-out.
#pragma once
#include <chrono>
#include <string>
#include <vector>

namespace fb {

struct CommandResult {
  bool started = false;    // false: not found or could not be spawned (see error)
  bool timedOut = false;   // killed (SIGKILL) at the deadline
  int exitCode = -1;       // exit status; -1 when it did not exit normally
  std::string out;         // stdout (at most 4 MiB kept)
  std::string error;       // why it failed, in words, when it did
  bool ok() const { return started && !timedOut && exitCode == 0; }
};

// Runs argv[0] (searched in PATH) with stdin from /dev/null and stderr discarded, collecting
// stdout until it exits or `timeout` passes (then the child is killed and reaped).
CommandResult runCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// Full path of an executable found in PATH, or "" when absent.
std::string findInPath(const std::string& name);

}  // namespace fb

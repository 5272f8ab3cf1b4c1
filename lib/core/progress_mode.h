// FB_PROGRESS, read in one place: how the host transports wait (transport/progress.h) and whether
// this node's ranks share cores they cannot see, so MPI should yield too (bootstrap/mpi_bootstrap.cc).
// Header-only; no validation here (transport/progress.h's validateProgressEnv names a bad value).
#pragma once
#include <cstdlib>
#include <string>

namespace fb {

// FB_PROGRESS as given, or "auto" when unset or empty.
inline std::string progressMode() {
  const char* e = std::getenv("FB_PROGRESS");
  return e && *e ? e : "auto";
}

// FB_PROGRESS=block or yield: the user says the ranks share cores (e.g. the namespace lab).
inline bool progressSaysSharedCores() {
  const std::string m = progressMode();
  return m == "block" || m == "yield";
}

}  // namespace fb

// The backend table: one entry per backend, the only list of backends in the program.
// --list, option registration and validation, --help, the fingerprint and the run all read it.
//   name        --transport name
//   probe       what this build and this machine can run, and why not (--list; may be collective)
//   variants    the rows' paths to run (nccl: one per forced path; others: {""}), on every rank
//   open        creates the backend's resources on every rank at the same point (connections,
//               communicators) and returns its factory: CollRequest -> implementation, or "not
//               supported: why" for one collective (only those rows are skipped). Throws
//               UnavailableError (agreed on every rank) when the whole backend cannot run here.
//   fingerprint extras for run.json (devices; library versions come from linkedVersions())
//   options     the backend's own command-line options, and their validation
// A backend absent from this build has an entry too (built = false, with the reason).
#pragma once
#include <memory>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bootstrap/bootstrap.h"
#include "collectives/collective.h"
#include "app/options.h"
#include "report/fingerprint.h"
#include "transport/transport.h"

namespace CLI {
class App;
}

namespace fb {

using CollFactory = std::function<Support(const CollRequest&)>;

struct BackendEntry {
  std::string name;
  std::string help;  // one line: what rows it produces
  bool built = false;
  std::string notBuilt;  // why not, when !built
  std::function<BackendStatus(Bootstrap&, const Options&)> probe;
  std::function<std::vector<std::string>(Bootstrap&, const Options&)> variants;
  std::function<CollFactory(Bootstrap&, const Options&, const std::string& variant)> open;
  std::function<void(FingerprintOptions&, const Options&)> fingerprint;  // (library versions: doctor_command.h linkedVersions)
  std::function<std::string(const Options&)> listDetails;  // extra --list section ("" = none)
  std::function<void(CLI::App&, Options&)> addOptions;
  std::function<void(Options&)> validate;  // throws ConfigError
};

const std::vector<BackendEntry>& backendTable();
const BackendEntry* findBackend(std::string_view name);
// Transports the run opened (tcp, verbs), so a failing rank can close its connections at once
// (Transport::abandon): peers blocked on it learn it now, not at their deadline.
std::vector<std::weak_ptr<Transport>>& openTransports();

}  // namespace fb

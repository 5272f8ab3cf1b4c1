// The backend table: one entry per backend, the only list of backends in the program, and the
// only place that knows a backend by name or by build switch. --list, option registration and
// validation, --help, the fingerprint, the doctor, the verdict and the run all read it.
//   name        --transport name
//   facts       what code below lib/app knows of it too (core/impl_facts.h: GPU or not, pipelined,
//               the report's ratio baseline, attestation, --accept paths), found by name
//   gpu         its rows are GPU paths (--require gpu, "GPUs but no GPU path measured"; from facts)
//   probe       what this build and this machine can run, and why not (--list; may be collective)
//   variants    the rows' paths to run (nccl: one per forced path; others: {""}), on every rank
//   open        creates the backend's resources on every rank at the same point (connections,
//               communicators) and returns its factory: CollRequest -> implementation, or "not
//               supported: why" for one collective (only those rows are skipped). Throws
//               UnavailableError (agreed on every rank) when the whole backend cannot run here.
//   transport   the host data plane (tcp, verbs): a Transport the host ring algorithms drive
//   fingerprint extras for run.json (devices)
//   versions    the versions of the libraries it links or loads (--doctor, the fingerprint)
//   doctorHooks the doctor checks only this binary can run (a P2P copy, a dma-buf registration)
//   options     the backend's own command-line options, their form (validate, while parsing)
//               and what this rank's machine must have for them (checkOnThisRank)
//   pairLink    --accept's pair test over it when it has no transport (mpi, nccl)
// A backend absent from this build has an entry too (built = false, with the reason).
#pragma once
#include <map>
#include <memory>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bootstrap/bootstrap.h"
#include "collectives/collective.h"
#include "core/impl_facts.h"
#include "doctor/doctor.h"
#include "app/options.h"
#include "report/fingerprint.h"
#include "transport/transport.h"

namespace CLI {
class App;
}

namespace fb {

namespace acceptcmd {
class PairLink;
}

using CollFactory = std::function<Support(const CollRequest&)>;

struct BackendEntry {
  std::string name;
  std::string help;  // one line: what rows it produces
  bool built = false;
  std::string notBuilt;  // why not, when !built
  const ImplFacts* facts = nullptr;  // the facts code below lib/app reads too (core/impl_facts.h)
  std::function<BackendStatus(Bootstrap&, const Options&)> probe;
  std::function<std::vector<std::string>(Bootstrap&, const Options&)> variants;
  std::function<CollFactory(Bootstrap&, const Options&, const std::string& variant)> open;
  std::function<std::unique_ptr<Transport>(Bootstrap&, const TransportOptions&)> transport;  // collective
  std::function<void(FingerprintOptions&, const Options&)> fingerprint;
  std::function<void(std::map<std::string, std::string>&)> versions;  // "nccl" -> "2.21.5", ...
  std::function<void(doctor::Hooks&)> doctorHooks;
  std::function<std::string(const Options&)> listDetails;  // extra --list section ("" = none)
  std::function<void(CLI::App&, Options&)> addOptions;
  std::function<void(Options&)> validate;  // throws ConfigError
  std::function<void(const Options&, const std::string& hostname)> checkOnThisRank;  // throws ConfigError
  // --accept's pair test over a backend without a transport (mpi, nccl); with one, its transport.
  // Collective over bs (every rank calls it).
  std::function<std::unique_ptr<acceptcmd::PairLink>(Bootstrap&, const Options&)> pairLink;
};

const std::vector<BackendEntry>& backendTable();
const BackendEntry* findBackend(std::string_view name);
// The implementations whose rows are GPU paths, in table order (report/verdict.h).
std::vector<std::string> gpuBackendNames();
// The host data plane of backend `name`, collectively (every rank calls it at the same point).
// ConfigError for a name without one (mpi, nccl), UnavailableError when it is not built or
// finds no hardware.
std::unique_ptr<Transport> openTransport(std::string_view name, Bootstrap& bs, const TransportOptions& options);
// Transports the run opened (tcp, verbs), so a failing rank can close its connections at once
// (Transport::abandon): peers blocked on it learn it now, not at their deadline.
std::vector<std::weak_ptr<Transport>>& openTransports();

}  // namespace fb

// The Transport backends compiled into this build (the backends that speak Transport: tcp and
// verbs). The list of all backends, with MPI and the GPU ones, is lib/app/backends.cc.
#include "core/config.h"
#include "core/error.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/transport.h"
#if FB_BUILD_VERBS
#include "transport/verbs/verbs_transport.h"
#endif

namespace fb {

std::unique_ptr<Transport> makeTransport(std::string_view name, Bootstrap& bs, const TransportOptions& o) {
  if (name == "tcp") return tcp::createTransport(bs, o);
  if (name == "verbs") {
#if FB_BUILD_VERBS
    return verbs::createTransport(bs, o);
#else
    throw UnavailableError("verbs: not built (libibverbs-dev not found at configure time, or the backend is absent)");
#endif
  }
  throw ConfigError("unknown transport '" + std::string(name) + "'");
}

BackendStatus probeTransport(std::string_view name, const TransportOptions& o) {
  if (name == "tcp") return tcp::probe(o);
  if (name == "verbs") {
#if FB_BUILD_VERBS
    return verbs::probe(o);
#else
    return {"verbs", false, false, "not built: libibverbs-dev not found at configure time"};
#endif
  }
  return {std::string(name), false, false, "unknown transport"};
}

}  // namespace fb

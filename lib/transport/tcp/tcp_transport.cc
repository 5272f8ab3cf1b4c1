// PLACEHOLDER: being written (issue 2). Throws until implemented.
#include "transport/tcp/tcp_transport.h"
#include "core/error.h"
namespace fb::tcp {
std::unique_ptr<Transport> createTransport(Bootstrap&, const TransportOptions&) {
  throw UnavailableError("tcp: not implemented yet");
}
BackendStatus probe(const TransportOptions&) { return {"tcp", true, false, "not implemented yet"}; }
}  // namespace fb::tcp

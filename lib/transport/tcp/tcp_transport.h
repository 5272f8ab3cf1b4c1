// Raw TCP sockets baseline: one full-duplex connection per peer pair, TCP_NODELAY, socket
// buffers sized for bandwidth, bound to one chosen interface, peers authenticated by a per-job
// token exchanged through the Bootstrap (a stranger that connects is dropped).
#pragma once
#include <memory>

#include "bootstrap/bootstrap.h"
#include "transport/transport.h"

namespace fb::tcp {

// Collective: every rank calls it at the same point.
std::unique_ptr<Transport> createTransport(Bootstrap& bootstrap, const TransportOptions& options);
BackendStatus probe(const TransportOptions& options);

}  // namespace fb::tcp

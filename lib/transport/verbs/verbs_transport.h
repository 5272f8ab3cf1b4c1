// Raw ibverbs Transport: one reliable-connected QP per peer pair, connected through the
// Bootstrap (allGather of {qpn, psn, gid, lid, mtu}); every message is a receiver-driven
// rendezvous (the receiver SENDs a small clear-to-send with its buffer's address and rkey,
// the sender answers with RDMA WRITE WITH IMMEDIATE straight into it), so data is copied
// zero times and receives are never posted late (no RNR), whatever the order of calls.
// Credits bound the control messages so the receive queue can never run dry.
#pragma once
#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"
#include "transport/transport.h"
#include "transport/verbs/discovery.h"  // discover() (run.json), describe() (--list)

namespace fb::verbs {

// Collective: every rank calls it at the same point. UnavailableError("no RDMA device") when
// there is none; ConfigError (naming the fix) for a bad --ib-dev / --ib-port / --gid-index,
// raised on every rank before any data moves.
std::unique_ptr<Transport> createTransport(Bootstrap& bootstrap, const TransportOptions& options);
BackendStatus probe(const TransportOptions& options);

}  // namespace fb::verbs

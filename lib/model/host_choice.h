// The host baselines' (tcp, verbs) algorithm choice from the scaling model: every candidate of
// host_algorithms.h timed with the model's phases (algorithms.cc) on the job's placement, the
// fastest chosen. One model for projecting and for choosing.
//
// Timing is step-synchronous (the host algorithms wait for each step's slowest hop). Where the
// model's phases assume one crossing per node boundary, the placement corrects it: hops of the
// hypercube algorithms (recursive doubling/halving, Rabenseifner, Bruck) leave a node from all its
// G ranks at once (G/R x the bytes on its R NICs); the ring crosses from as many ranks of a node as
// have their successor elsewhere. The hierarchical schedule is G-1 intra hops into the leader, the
// inner algorithm on N x 1 over the inter link, and the leader's broadcast (G-1 copies at once) or
// scatter.
//
// A link shaped by a token bucket (tc tbf below the link's own rate, as the namespace lab does) is
// timed as one: each hop at the link's own rate (the bytes of a hop pass within the bucket), and
// the whole operation no faster than the bytes through the busiest NIC at the shaped rate. The
// per-hop latencies are measured on the job's own ranks (stepLatency), else defaults.
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "collectives/host_algorithms.h"
#include "model/model.h"

namespace fb::model {

// The cost model's algorithm for a host algorithm (the phases hostTime costs; the rows' typed model_algo id
// names the same one, tests/model checks it).
Algo modelAlgo(fb::HostAlgo a);

struct HostLinks {
  Link intra, inter;
  double nicsPerNode = 1;
  // > 0: inter is a token bucket (its rate is the sustained one) on a link of this rate (GB/s).
  double interLineGBps = -1;
};
// Per-hop latency measured on the job's ranks (us; -1 = not measured).
struct StepLatency {
  double interUs = -1, intraUs = -1;
};
// interGBps: the inter-node rate per direction (GB/s; the transport's nominal, tc shaping included),
// <= 0 when unknown (then 1.25, 10 GbE); lineGBps: the link's own rate where a token bucket shapes
// it below (else <= 0). Latencies: measured where given, else inter 50 us, intra (loopback TCP)
// 15 us at 3 GB/s. FB_HOST_LINKS overrides: "inter=GBPS:ALPHA_US,intra=GBPS:ALPHA_US" (either,
// either field may be empty; inter= drops the token bucket); malformed: ConfigError.
HostLinks hostLinks(double interGBps, double lineGBps = -1, StepLatency measured = {});
// Checks FB_HOST_LINKS without using it.
void validateHostLinksEnv();

// Time (us) of one schedule for `bytes` (the row's size S) on placement p. Throws InputError when
// the choice does not implement k.
double hostTime(fb::CollKind k, const fb::HostChoice& c, double bytes, const fb::HostPlacement& p, const HostLinks& l);
// Every candidate (hostCandidates), fastest first.
std::vector<std::pair<fb::HostChoice, double>> rankHostAlgos(fb::CollKind k, double bytes, const fb::HostPlacement& p,
                                                             const HostLinks& l);
// A HostRanker for makeRingCollective: the fastest candidate (nullopt on one node: the defaults).
std::shared_ptr<const fb::HostRanker> hostRanker(HostLinks l);
// Collective: the latency of one step as the host algorithms meet it, on every rank at once: each
// sends 8 bytes to a peer and receives from another (inter: the same local index on the next
// node; intra: the next rank on its node), the slowest rank's time per exchange, best of 3 runs of
// 10. -1 where the placement has no such peer (one node; one rank per node for intra).
StepLatency stepLatency(fb::Transport& t, fb::Bootstrap& bs);
// Collective: the ranker for a transport's job, from the slowest nominal rate any rank's transport
// reports (every rank must choose alike; one unknown rate = unknown), its line rate where a token
// bucket shapes it, the measured step latency, and FB_HOST_LINKS. `used` (optional) gets the links.
std::shared_ptr<const fb::HostRanker> hostRankerFor(fb::Transport& t, fb::Bootstrap& bs, HostLinks* used = nullptr);
// One line naming the links a ranker uses (rates, latencies, their sources).
std::string describe(const HostLinks& l);

}  // namespace fb::model

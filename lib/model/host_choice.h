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
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "collectives/host_algorithms.h"
#include "model/model.h"

namespace fb::model {

struct HostLinks {
  Link intra, inter;
  double nicsPerNode = 1;
};
// interGBps: the inter-node rate per direction (GB/s; the transport's nominal, tc shaping included),
// <= 0 when unknown (then 1.25, 10 GbE). Latencies: inter 50 us, intra (loopback TCP) 15 us at 3 GB/s.
// FB_HOST_LINKS overrides: "inter=GBPS:ALPHA_US,intra=GBPS:ALPHA_US" (either, either field may be
// empty); malformed: ConfigError.
HostLinks hostLinks(double interGBps);
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
// Collective: the ranker for a transport's job, from the slowest nominal rate any rank's transport
// reports (every rank must choose alike; one unknown rate = unknown), and FB_HOST_LINKS.
std::shared_ptr<const fb::HostRanker> hostRankerFor(fb::Transport& t, fb::Bootstrap& bs);

}  // namespace fb::model

// NCCL's own algorithms and protocols as a cost model, with the structure of NCCL's tuning model
// (NVIDIA/nccl src/graph/tuning.cc, 2.2x): time = latency + bytes / bandwidth per (algorithm,
// protocol), the library taking the cheapest. Latencies are tuning.cc's base and per-hop figures by
// link type and protocol, times calibrated scales; bandwidths are the machine's links (NVLink ring,
// NVLS, per-NIC) times tuning.cc's per-protocol factors, times calibrated LL/LL128 efficiencies.
//
// Bandwidths are nccl-tests busbw (GB/s, 1e9 B): t = lat + S x busbwFactor(coll, n) / busbw.
//   Ring:      N = 1: the node's ring busbw; N > 1: min(node ring, R x per-NIC).
//   Tree (AllReduce, N > 1; chain inside the node, double binary tree between nodes): each tree
//              edge carries S/2 each way, so a node's NICs move E(N) x S/2 where E = the most tree
//              edges at one node over both trees (2 on 2 nodes, 3 on 3, 4 from 4 on): busbw =
//              R x NIC x f x 2 / E(N) with f = 2(n-1)/n. On 2 nodes that is 1.875 x the NICs' rate at
//              16 ranks: busbw above line rate follows from the algorithm, not an efficiency above 1.
//   NVLS (AllReduce, 1 node, NVSwitch multicast): the node's NVLS busbw, by GPU count (ncclNvlsBusbw).
//   NVLSTree (AllReduce, N > 1): min(nvlsGBps, the tree's network term); nvlsGBps unscaled by GPU count (scaling
//              it moved no validation run and took set A's 2 x 8 out of the bound: 12.0 / 21.3 %).
//   CollNet direct/chain (AllReduce, N > 1, SHARP): each node sends and receives S once: R x NIC x f.
//   PAT (AllGather/ReduceScatter, N > 1, one rank per node, NCCL >= 2.23): the ring's bandwidth x 0.75
//              (0.85 in 2.23) and 8 + log2(N) x net / 3.5 + 2.8 n us, tuning.cc's own PAT terms.
//   P2P (AllToAll, SendRecv): per node the off-node bytes over R NICs, at the rate of the NICs' channels; on one
//              node the channels NCCL gives a send of that size (ncclP2pSendChannels) x p2pChGBps, up to the ring's
//              (SendRecv) or the node's AllToAll rate (a2aIntra(): a2aIntraGBps, calibrated, else the ring's).
//   Local (one rank): the out-of-place output is a device copy of the input: t = max(launch, copy
//              latency + S / copy rate) (calibrated on a 1-rank run); busbw 0 by definition.
// Protocols: LL = busbw x 0.5 (ring, NCCL >= 2.21; before, / 4 for AllReduce or more than one node,
// else / 3) or / 3.8 (tree), capped at tuning.cc's llMaxBw (141 GB/s on one Hopper node, 39 on 2
// nodes, 20.4 on more: the Intel x86 rows); LL128 = x 0.92 (ring, >= 2 ranks per node; 0.7
// with one) or x 120/128 (tree); Simple = x 1 (tuning.cc), each LL/LL128 factor times a calibrated
// efficiency (LL128 one per ring and one per tree, as tuning.cc gives each its own factor and cap).
// Channels: LL128 and Tree are capped at channels x tuning.cc's Hopper per-channel maxima by node count
// (LL128 36.7 ring, 36.7/36.7/29 tree; Simple tree 38.7/41.4/36 on 1/2/more nodes) when a channel count is
// known (NCCL_MIN_CTAS, a log's INFO). Each channel uses one NIC and keeps a fixed window in flight: a NIC
// with k channels moves min(line rate, NIC x k / 2), NIC being the rate of NCCL's default 2 per NIC (16
// over 8 NICs). P2P opens 2 channels per remote peer (NCCL_NCHANNELS_PER_NET_PEER's default to 2.28; 2.29
// computes up to 4, see doc/model.md), so AllToAll over many peers reaches the line rate where SendRecv to one
// peer does not.
// Tree bandwidth times tuning.cc's treeCorrectionFactor (0.4-1.0 by protocol and size up to 128 MiB).
// Latencies by release where tuning.cc changed them: Tree Simple 28 us a hop in NCCL 2.19-2.22 (4/4/14
// before and after); from 2.23 every network hop of a run with one GPU a node takes the Tree's latency; 2.18's
// other differences (NVLS, base latencies) are not modelled. A multi-node ring's intra-node step costs at least
// tuning.cc's network overhead (1 us, x3 for Simple; Intel and other CPUs, as no log names an AMD one).
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "report/import.h"

namespace fb::model {

enum class NcclAlgo { kRing, kTree, kNvls, kNvlsTree, kCollNetDirect, kCollNetChain, kPat, kP2p, kLocal };
enum class NcclProto { kLL, kLL128, kSimple };

// tuning.cc's latencies of one algorithm, us: base [LL, LL128, Simple] and per hop by link type.
struct NcclLat {
  double base[3], nvl[3], pci[3], net[3];
};

// One place per NCCL algorithm: name, aliases (NCCL_ALGO spellings), collectives, shapes, protocols,
// latencies (ncclCost holds the bandwidth of each, by its id).
struct NcclAlgoInfo {
  NcclAlgo id;
  std::string name;                  // "Ring", "Tree", "NVLS", "NVLSTree", "CollNetDirect", ...
  std::vector<std::string> aliases;  // lower-case spellings accepted (NCCL_ALGO=ring, nvls_tree, ...)
  std::vector<std::string> colls;    // collectives it implements
  bool multiNode = false, singleNode = false;  // only on N > 1 / only on N = 1
  bool needsNvls = false, needsCollNet = false;
  bool onePerNode = false;           // only with one rank per node (PAT)
  std::string phases;                // what it moves, for the docs and --help
  bool simpleOnly = false;           // only the Simple protocol (NVLS, NVLSTree, CollNet, PAT, P2P)
  NcclLat lat{};                     // tuning.cc (2.2x); PAT and P2P take the ring's
  bool oneRank = false;              // only on a single rank (Local), where every other row does not apply
};
const std::vector<NcclAlgoInfo>& ncclAlgos();
const NcclAlgoInfo& ncclAlgoInfo(NcclAlgo a);
NcclAlgo parseNcclAlgo(const std::string& s);     // throws InputError listing the names
NcclProto parseNcclProto(const std::string& s);   // LL, LL128, Simple (any case)
std::string ncclProtoName(NcclProto p);

// busbw / algbw as nccl-tests defines it (PERFORMANCE.md), from one table for every collective.
double ncclBusFactor(const std::string& coll, int ranks);

struct NcclMachine;
// NVLS busbw of the machine's nodes: nvlsGBps (the 8-GPU figure) x s(G) / s(8), s(G) = 2 (G - 1) / (G + 1) (nccl.h
// at nvlsGBps). On one node that is the busbw of G GPUs; 4 GPUs get 0.771 x the 8-GPU rate.
double ncclNvlsBusbw(const NcclMachine& m);
// Channels one send of `bytes` to a peer of the same node runs on (src/enqueue.cc addP2pToPlan, 2.19-2.29): the
// peer's channels halved while they times the ranks exceed the comm's p2p channels, fewer for a small send (a part
// of step / 8: 64 KiB over NVLink, 16 KiB over PCIe; NCCL's alignUp of the size to it is not modelled), doubled
// while a part exceeds 32 steps (16 MiB over NVLink's 512 KiB steps, 4 MiB over PCIe's 128 KiB).
int ncclP2pSendChannels(const NcclMachine& m, double bytes);
// The comm's p2p channels: p2pChannels, or the power of two at or above a known coll channel count.
int ncclP2pCommChannels(const NcclMachine& m);
// Across nodes, the busbw at which the CTAs' warps move an AllToAll or SendRecv (out of place), 0 where no warp
// count applies: NCCL puts the rounds of one batch group on their channels (src/enqueue.cc scheduleP2pTasksToPlan,
// addP2pToPlan; src/include/channel.h ncclP2pChannelBaseForRound; 2 channels an op, 2 coll channels per NIC), the
// works of a batch split the CTA's 20 warps (src/device/sendrecv.h: nWarps / nWorks, then send and recv halves,
// the self copy taking both), and each part moves at its worker warps x p2pWarpGBps.
double ncclP2pWarpBusbw(const std::string& coll, const NcclMachine& m, double bytes);
// P2P channels across nodes (src/graph/paths.cc): the comm's (a known coll count's power of two up, else 2 per
// NIC), and a network peer's: 2 (NCCL_NCHANNELS_PER_NET_PEER) until NCCL 2.19; from 2.20 halved while 2 x ranks
// passes 4 x the comm's; from 2.29 while a batch's 8 peers at that count pass it (2.30 counts its maxP2pPeers
// setting instead of the ranks, the rank count unless set; 2.29 starts a peer at up to 4, ceil(GPU-NIC GB/s / 14),
// which set F's 2-node SendRecv rates do not show: the model starts at 2). NVIDIA/nccl
// issue 1272: sendrecv_perf halves at 8 nodes from NCCL 2.20 and recovers with NCCL_NCHANNELS_PER_NET_PEER=4.
int ncclNetP2pChannels(const NcclMachine& m);
int ncclNetPeerChannels(const NcclMachine& m);

struct NcclMachine {
  int nodes = 1, gpusPerNode = 1;
  double nicsPerNode = 0;        // R; 0 = one NIC per GPU (rails)
  // Priors (defaults until a fit moves them), each from a public figure:
  // per NIC with 2 channels on it (NCCL's default rings, or one p2p peer): "46-48 GB/s per NIC" at NDR
  // (NVIDIA/nccl-tests issues 290 and 267).
  double nicGBps = 48;
  // The NIC's signalling rate (400 Gb/s = 50 GB/s), reached with more channels on it: each channel keeps a
  // fixed window of chunks in flight, so k channels move min(line, nicGBps x k / 2). 0 = nicGBps x 50 / 48.
  double nicLineGBps = 0;
  // The node's ring busbw (NVLink or PCIe): 8 x H100 NCCL_ALGO=Ring measured 365-370 GB/s (NVIDIA/nccl issue
  // 1455; ~370 in nccl-tests issue 212; NCCL's own 18 x 20.6 = 370.8, src/graph/topo.h SM90_NVLINK_BW).
  double ringIntraGBps = 365;
  // What a ring's busbw cannot pass: one GPU's NVLink rate one way (Hopper 18 links x 25 GB/s, half the
  // datasheet's 900 GB/s both ways). The fit's upper bound for ringIntraGBps; 0 = none (PCIe, unknown).
  double ringLineGBps = 450;
  // NVLS busbw inside the node, 0 = no NVSwitch multicast: ~480 GB/s on 8 x H100 (nccl-tests issue 212,
  // NVIDIA/nccl issue 1455; 480 in nccl-tests issue 309).
  // It is the busbw of a full 8-GPU node: with G GPUs each moves S (1 + 1/G) through the switch (multimem
  // reduce reads S out and returns S/G, the multicast store sends S/G and receives S), so NVLS's algbw is
  // B x G / (G + 1) for a per-GPU NVLink rate B (ncclNvlsBusbw).
  double nvlsGBps = 480;
  bool nvlink = true;            // intra-node hop latencies of NVLink (else PCIe)
  bool collNet = false;          // SHARP / CollNet available
  double latIntraScale = 1, latNetScale = 1;  // x tuning.cc's per-hop latencies
  // GPUs of one process reach each other "via P2P/direct pointer" (NCCL's INFO), those of separate processes
  // via P2P/CUMEM or IPC: their intra-node hops are calibrated apart (latDirectScale for the former).
  bool directP2p = false;
  double latDirectScale = 1;
  double effLL = 1, effLL128 = 1;             // x tuning.cc's LL / LL128 bandwidth factors (rings)
  double effTreeLL128 = 1;                    // x tuning.cc's tree LL128 factor (its own factor and cap there)
  int channels = 0;              // known channel count; 0 = not capped
  // P2P inside one node (src/enqueue.cc addP2pToPlan): a send runs on channels of p2pChGBps each. NCCL's comm has
  // p2pChannels (a power of two of its coll channels: 32 on 8 x H100 and on our 2 x H200, p2p_channels=32 in its
  // INFO); a peer over NVLink gets up to all of them (paths.cc: 2 x NVLinks, 36 on Hopper), over PCIe 2.
  // p2pChGBps: NCCL's own per-channel NVLink figure (src/graph/topo.h SM90_NVLINK_BW); set G's 1 x 8 SendRecv
  // moves 20.4-20.5 GB/s a channel on 4 and 8 channels.
  int p2pChannels = 32;
  double p2pChGBps = 20.6;
  // AllToAll inside one node, GB/s busbw at most; 0 = the ring's. NVSwitch all-to-all traffic runs below a ring's
  // permutation at mid sizes (sets F and G, 1 x 8: 300-315 GB/s at 128-512 MiB where AllGather moves 348-362), so a
  // single-node AllToAll run calibrates its own rate, as NVLS has its own.
  double a2aIntraGBps = 0;
  double a2aIntra() const { return a2aIntraGBps > 0 ? a2aIntraGBps : ringIntraGBps; }
  // One warp's rate in NCCL's device copy loop (16-byte loads, unroll 8 on Hopper: src/device/common_kernel.h
  // reduceCopy), GB/s: P2P works of one batch split a CTA's 20 warps (ncclP2pWarpBusbw). 0 = not measured, no
  // cap; measured GPUs get theirs from ncclP2pWarpPrior (scripts/instruments/warp_copy.cu, never fitted).
  double p2pWarpGBps = 0;
  // The operation is in place: NCCL skips an AllToAll's send to self (enqueue.cc), so no self copy shares the
  // CTAs' warps. Set per row (a run measured only in place); projections are out of place.
  bool inPlace = false;
  // One rank (Local): out of place a device-to-device copy of S, in place nothing. Operations launched
  // back to back: t = max(launchUs, copyLatUs + S / copyGBps), the launch rate or the copy. Starting points
  // only: they apply to 1-rank runs alone, and a 1-rank run always calibrates all three.
  double launchUs = 6, copyLatUs = 3, copyGBps = 2000;
  int ncclVersion = 0;           // NCCL_VERSION_CODE of the run (22203 = 2.22.3); 0 = unknown, taken as the newest
  double nics() const { return nicsPerNode > 0 ? nicsPerNode : gpusPerNode; }
  double nicLine() const { return std::max(nicGBps, nicLineGBps > 0 ? nicLineGBps : nicGBps * 50 / 48); }
  // One NIC's rate with k channels on it (NCCL binds each channel to one NIC).
  double nicRate(double k) const { return std::min(nicLine(), nicGBps * k / 2); }
  int ranks() const { return nodes * gpusPerNode; }
};

// The node's priors by GPU family, taken from the GPU name the logs give ('#  Rank' lines, a run's
// fingerprint): the NVLink ring rate and whether NVLS exists. Each value names its source; nullopt for a
// name no entry matches (the Hopper defaults above then stay).
struct NcclGpuPrior {
  std::string family;            // "A100 SXM (Ampere, 12 NVLink 3 links)", ...
  double ringGBps = 0;           // the node's ring busbw prior (0: keep the default)
  double nvlsGBps = 0;           // NVLS busbw prior, 0 = no NVSwitch multicast on this GPU
  bool pcie = false;             // no NVLink between the GPUs: PCIe hop latencies
  std::string source;
  double ringLineGBps = 0;       // one GPU's NVLink rate one way (links x per-link rate), 0 = not known
};
std::optional<NcclGpuPrior> ncclGpuPrior(const std::string& gpuName);
struct NcclGpuFamily {
  std::string pattern;           // ECMAScript regex on the GPU's name, case-insensitive; the first match wins
  NcclGpuPrior prior;
};
const std::vector<NcclGpuFamily>& ncclGpuFamilies();  // the table, in match order
// One warp's copy rate (NcclMachine::p2pWarpGBps) on the GPUs where it was measured, with its source; nullopt
// elsewhere (no warp cap: the NIC and channels alone bound P2P across nodes).
struct NcclWarpRate {
  double gbps = 0;
  std::string source;
};
std::optional<NcclWarpRate> ncclP2pWarpPrior(const std::string& gpuName);

struct NcclForce {
  std::optional<NcclAlgo> algo;
  std::optional<NcclProto> proto;
};

struct NcclCost {
  NcclAlgo algo = NcclAlgo::kRing;
  NcclProto proto = NcclProto::kSimple;
  double latUs = 0, busbwGBps = 0, timeUs = 0;
};

// Whether `algo` exists for this collective and machine.
bool ncclApplies(NcclAlgo a, const std::string& coll, const NcclMachine& m);
// Cost of one (algorithm, protocol); nullopt when it does not apply.
std::optional<NcclCost> ncclCost(const std::string& coll, NcclAlgo a, NcclProto p, const NcclMachine& m, double bytes);
struct NcclChoice {
  NcclCost best;
  std::vector<NcclCost> all;     // every applicable pair, cheapest first
};
// The pair NCCL would take (the cheapest), restricted to `force`. Throws InputError when nothing applies.
NcclChoice ncclChoose(const std::string& coll, const NcclMachine& m, double bytes, const NcclForce& force = {});

// ---- calibration -------------------------------------------------------------------------------

// One measured nccl-tests (or fabricbench nccl) series: its shape, what the run forced, its rows.
struct NcclRun {
  std::string label, coll;
  std::string source;            // the argument it was loaded from (FILE[:hints][#k]), for advice; "" if none
  int nodes = 1, gpusPerNode = 1;
  NcclForce force;
  int channels = 0;
  bool channelsForced = false;   // channels set by NCCL_MIN_CTAS or the user, not only seen in the INFO lines
  int ncclVersion = 0;           // from the log's NCCL version line, or given (nccl=2.18.3); 0 = unknown
  bool directP2p = false;        // INFO "via P2P/direct pointer", or without INFO one thread driving several GPUs
  bool nvlsOff = false;          // NCCL_NVLS_ENABLE=0 in the run's environment: no NVLS or NVLSTree
  bool rccl = false;             // an rccl-tests log: RCCL, which has no NVLS or NVLSTree
  std::vector<std::string> unmodelled;  // the run's NCCL_* settings that change its paths, which the model lacks
  std::vector<std::pair<double, bool>> wrongRows;  // (bytes, in place) left out: nccl-tests counted wrong elements
  std::string gpu;               // the GPU's name from the log ('#  Rank' lines) or the run's fingerprint; "" unknown
  struct Row {
    double bytes = 0, timeUs = 0, inPlaceUs = 0;  // inPlaceUs 0 = not known
    bool inPlace = false;                          // timeUs is an in-place time (the run measured only that)
  };
  std::vector<Row> rows;
};
// Runs of a loaded log or folder (one per collective and run); given = "algo=ring,proto=simple,
// channels=24" overrides what the log says. Rows with wrong data are left out.
std::vector<NcclRun> ncclRunsOf(const RunData& rd, const std::string& given = "");
// One KEY=VALUE of what a run forced (algo, proto, nvls, nccl, channels, or their NCCL_* names) onto r. A key
// the model does not use is passed over, unless fromUser (--given, --force): then it is refused.
void applyNcclSetting(NcclRun& r, const std::string& key, const std::string& val, bool fromUser = false);
// A comma list of KEY=VALUE from the user (--given, --force; `option` names it in errors), applied to r.
void applyNcclSettings(NcclRun& r, const std::string& spec, const std::string& option);

struct NcclFitPoint {
  std::string run;
  double bytes = 0, measuredUs = 0, modelUs = 0, errPct = 0;
  NcclAlgo algo = NcclAlgo::kRing;
  NcclProto proto = NcclProto::kSimple;
  bool noisy = false;            // the log's own in- and out-of-place times differ by > 20 %
  bool outlier = false;          // over kNcclOutlierRatio x the time of a larger size of its run: not in the loss
  // Counted by the fit's loss and the error bound: a size from minBytes up, not noisy.
  bool counts(double minBytes) const { return bytes >= minBytes && !noisy; }
};
constexpr double kNcclOutlierRatio = 2;
struct NcclFit {
  NcclMachine machine;           // calibrated (shape of the first run)
  std::vector<std::string> freed;      // parameters the data moved (others stay at their prior)
  std::vector<NcclFitPoint> points;
  double medianAbsErrPct = 0, maxAbsErrPct = 0;
  bool ringDefault = false;      // the node's ring rate is a default, neither the GPU's figure nor fitted nor given
  std::vector<std::string> atBound;  // freed parameters the fit left at a bound ("effLL at its lower bound 0.1")
};
struct NcclFitOptions {
  double minBytes = 1;           // sizes below are left out of the loss
  double priorWeight = 0.01;     // pull of the spec priors (per squared log ratio): breaks ties where the data say nothing
};
// Calibrates the machine's free parameters to the runs (relative squared log error, Nelder-Mead in
// log space, bounded). The node's ring rate is free only when a single-node run is given (and is
// then fitted on the single-node runs alone); the per-NIC rate only when a multi-node run that NVLS
// cannot cap is (a 2-node default on NVSwitch nodes says nothing about the NICs). Rates and latency
// scales keep a weak pull towards `prior` (the spec defaults, tuning.cc's latencies) where the data
// say nothing; LL/LL128 efficiencies are at most 1.
NcclFit ncclCalibrate(const NcclMachine& prior, const std::vector<NcclRun>& runs, const NcclFitOptions& opt = {});
// Model vs measured at every size of a run, with the machine reshaped to the run.
std::vector<NcclFitPoint> ncclPredict(const NcclMachine& m, const NcclRun& r);

// Error statistics of points at or above minBytes, leaving noisy sizes out: {median, max} |error| %.
std::pair<double, double> ncclErrStats(const std::vector<NcclFitPoint>& pts, double minBytes);

}  // namespace fb::model

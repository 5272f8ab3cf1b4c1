// fabricbench's scaling model: measured curves -> per-hop latency/bandwidth -> projected collective
// time on N nodes x G ranks -> training-step estimate -> cost. Every projected number says which of
// its inputs were measured (run:series) and which came from a spec (nominal rate x efficiency).
//
// Units: time in microseconds, sizes in bytes, beta in microseconds per byte (1 / (GB/s x 1e3)).
//
// The model of one algorithm is a list of phases {count, chunk bytes, link}: `count` steps that each
// move one `chunk` over a link, all ranks at once, a step ending when its slowest transfer ends
// (step-synchronous). A step over link L costs alpha_L + chunk x beta_L (a "hop"). With one link
// class the time is linear in (alpha, beta): t = steps x alpha + bytes x beta; that is what the fit
// solves for, so a measured series gives per-hop alpha and beta whatever algorithm its rows used.
//
// Formulas (n = ranks, S = bytes as nccl-tests defines them; p2pring moves S to the right):
//   ring AllReduce        2(n-1) hops of S/n              = 2(n-1) a + 2(n-1)/n S b
//   ring AllGather/RS     (n-1) hops of S/n               = (n-1) a + (n-1)/n S b
//   P2P ring              1 hop of S
//   tree AllReduce (NCCL double binary tree between nodes, chain inside): 2((G-1) + ceil(log2 N))
//                         hops, bandwidth term 2 S b (NCCL's tuning: tree algbw = busbw x 0.5)
//   recursive doubling AR log2(n) hops of S (+2 hops of S when n is not a power of two)
//   Rabenseifner AR       hops of S/2, S/4 ... S/n twice (+2 hops of S when n is not a power of 2)
//   recursive halving RS  hops of S/2 ... S/n (+1 hop of S and 1 of S/n when not a power of 2)
//   Bruck / rec. doubling AG  ceil(log2 n) hops carrying (n-1)/n S in total
//   one-shot AR           1 hop of (n-1) S (every rank pushes its buffer to each peer)
//   hierarchical (N > 1 nodes, G > 1 ranks per node): intra ring ReduceScatter (G-1 hops of S/G),
//                         inter ring AllReduce per rail (2(N-1) hops of S/(G N)), intra ring AllGather;
//                         AllGather/ReduceScatter: the inter and intra halves of that.
// With G ranks per node and R NICs per node, a flat ring crosses each node boundary with R parallel
// rings (NCCL channels over rails): inter hop of chunk c costs alpha_e + c/R beta_e; the hierarchical
// inter phase runs G rails over R NICs: alpha_e + c G/R beta_e. A step that uses both link classes
// costs the slower of the two hops.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectives/spec.h"
#include "report/import.h"
#include "report/summary.h"

namespace fb::model {

// Bad model input (unknown spec, missing series, bad price file, N = 0): one line, exit 2.
using fb::InputError;

enum class Algo { kRing, kTree, kHier, kRecDoubling, kRabenseifner, kRecHalving, kBruck, kOneShot, kDirect };

enum class LinkClass { kIntra, kInter };

struct Phase {
  double count = 0;       // hops
  double chunk = 0;       // bytes per hop
  bool intra = false;     // the step uses intra-node links
  bool inter = false;     // the step uses inter-node links
  double interScale = 1;  // inter bytes per hop = chunk x interScale (rails sharing NICs, parallel rings)
  double interShare = 1;  // pipelined timing: share of the hops that cross nodes (latency = mix of both)
  // Share of the phase's bytes one NIC carries in its busier direction (a token bucket shapes each
  // direction): 1 for exchanges and one-way hops, 0.5 for a fold in and its unfold out.
  double dirShare = 1;
};

struct Shape {
  int nodes = 1;          // N
  int perNode = 1;        // G ranks per node
  double nicsPerNode = 0; // R; 0 = G (one NIC per rank: rails)
  int ranks() const { return nodes * perNode; }
  double nics() const { return nicsPerNode > 0 ? nicsPerNode : perNode; }
};

// One row per algorithm of the model (as lib/collectives has one descriptor per collective): its
// name and the other spellings a row may use, the collectives it implements and on which shapes,
// whether a projection or a validation considers it, and its phases. lib/model/algorithms.cc.
struct AlgoDescriptor {
  Algo id;
  std::string_view name;                  // --algo, CSV and table cells: "recursive-doubling"
  std::vector<std::string_view> aliases;  // other spellings a row's algorithm text may start with
  std::vector<fb::CollKind> colls;        // collectives it implements
  // Shape rule: nullptr when the algorithm runs on this shape, else why not (one clause).
  const char* (*unfit)(fb::CollKind, const Shape&) = nullptr;
  std::vector<fb::CollKind> projected;    // project() considers it for these (a library's own choice)
  std::vector<fb::CollKind> hostFormula;  // validate tries it on rows that name no algorithm
  std::vector<Phase> (*phases)(fb::CollKind, const Shape&, double bytes) = nullptr;
  std::string_view summary;               // what it moves, for --help and the docs
};
const std::vector<AlgoDescriptor>& algoTable();
const AlgoDescriptor& describeAlgo(Algo a);
std::string algoName(Algo a);
// A name or alias (any case); throws InputError listing the names.
Algo parseAlgo(const std::string& s);
// The algorithm a row names: its "model_algo" detail, parsed exactly (an unknown id is an InputError
// naming the row); without one, its "algorithm"/"algo"/"host_algo" text: the longest name or alias the
// text starts with, followed by its end, a space or '(' ("ring (pull ...)", "one-shot LL",
// "Rabenseifner (...)", "recursive doubling"); nullopt when it names none.
std::optional<Algo> algoOfRow(const Sample& s);
// The algorithm assumed for a row of `coll` that names none: the first row of the table implementing it.
Algo defaultAlgo(const std::string& coll);

// The phases of `algo` for collective `coll` (allreduce, allgather, reducescatter, p2pring, alltoall,
// broadcast) of S bytes. Throws InputError when the algorithm does not exist for that collective or
// shape (tree for AllGather, hierarchical on one node).
std::vector<Phase> phases(const std::string& coll, Algo algo, const Shape& shape, double bytes);
// Algorithms a user's library would consider for this collective and shape (NCCL: ring, tree for
// AllReduce, hierarchical when N > 1 and G > 1; the table's `projected`).
std::vector<Algo> candidateAlgos(const std::string& coll, const Shape& shape);
// Formulas a host library may have used for rows that name no algorithm (the table's `hostFormula`).
std::vector<Algo> hostFormulas(const std::string& coll, const Shape& shape);
// Why rows of `a` on an N x G shape are outside the model, or nullptr: the non-power-of-two fold of recursive
// doubling, Rabenseifner and recursive halving renumbers the ranks, which the phases do not follow. fit leaves
// such rows out, validate does not predict them.
const char* foldUnfit(Algo a, const Shape& sh);
// Single link class: total hops and bytes (t = steps a + bytes b).
struct StepsBytes {
  double steps = 0, bytes = 0;
};
StepsBytes linearCost(const std::vector<Phase>& ph, LinkClass cls);

// ---- fit -----------------------------------------------------------------------------------

struct Segment {
  std::size_t lo = 0, hi = 0;  // measured sizes covered (bytes)
  double alphaUs = 0;          // per hop
  double betaUsPerByte = 0;    // per byte on the hop
  int points = 0;
  double gbps() const { return betaUsPerByte > 0 ? 1e-3 / betaUsPerByte : 0; }
};

struct FitPoint {
  std::size_t bytes = 0;
  double measuredUs = 0, fittedUs = 0, errPct = 0;  // (fitted - measured) / measured x 100
  int segment = 0;
  Algo algo = Algo::kRing;
};

struct HopFit {
  bool usable = false;
  std::string why;                 // why not usable, or notes
  std::string nxg;                 // an N x G fit: the link solved, the intra link given, rows left out
  std::vector<Segment> segs;       // in size order; a new segment = a protocol/regime switch
  std::vector<FitPoint> points;
  double medianAbsErrPct = 0, maxAbsErrPct = 0;
  double kneeBytes = 0;            // where latency and bandwidth terms are equal (last segment)
  const Segment& segmentFor(double bytes) const;
};

struct Link;

struct FitOptions {
  int maxSegments = 3;
  int minPointsPerSegment = 3;
  int minPoints = 4;
  double maxMedianErrPct = 10;     // above: "too noisy", not used
  std::optional<Algo> forceAlgo;   // assume this algorithm for every row (else the row's, else ring)
  // An N x G series (G > 1 ranks on each of N > 1 nodes): the intra-node link (a single-node run's fit
  // or a spec) and the NICs per node the run had (Shape::nicsPerNode); the fit then solves the
  // inter-node hop. Unused for single-link series.
  const Link* intra = nullptr;
  double nicsPerNode = 1;
};

// Fits per-hop alpha/beta to a series measured on one link class: all ranks in one node (intra),
// or one rank per node (inter). Weighted least squares on relative error (Eigen QR), segments found
// by trying every split and keeping the one with the lowest BIC.
// An N x G series is fitted only given opt.intra: every row's time with the model's own time function
// (timeOf: the row's phases on N x G, its steps step-synchronous or pipelined as the implementation's
// facts say) is solved for the inter-node hop's alpha/beta, same segments, same robust fit and rules.
// Rows of recursive doubling, Rabenseifner and recursive halving on a rank count that is not a power of
// two are left out there (said in `why`): their phases do not follow the fold's renumbering of ranks,
// which moves hops between the node and the network. Without opt.intra an N x G series is refused.
HopFit fitSeries(const Series& s, const FitOptions& opt = {});

// ---- links and specs -------------------------------------------------------------------------

struct Link {
  std::string source;      // "measured: RUN: series label" or "spec: ib-hdr (...)"
  bool measured = false;
  std::vector<Segment> segs;
  std::string notes;       // spec defaults the user should replace, fit warnings
  const Segment& segmentFor(double bytes) const;
};

struct Spec {
  std::string name;
  std::string kind;        // "inter" or "intra"
  double lineGbps = 0;     // nominal line rate per direction, GB/s (1e9 B)
  std::string rateText;    // as the standard states it
  double efficiency = 0;   // default, replace with a measurement
  double latencyUs = 0;    // per hop, default, replace with a measurement
  std::string source;      // where the line rate comes from
  std::string defaultsSource;  // where the efficiency / latency defaults come from
};
const std::vector<Spec>& specTable();
// Throws InputError listing the known names.
const Spec& findSpec(const std::string& name);
// A link from a spec; eff/lat override the defaults when >= 0.
Link linkFromSpec(const Spec& s, double efficiency = -1, double latencyUs = -1);
Link linkFromFit(const HopFit& f, const std::string& source);
// One segment for every size: alphaUs per hop at gbps GB/s (a default or a known link).
Link constantLink(double gbps, double alphaUs, const std::string& source);

// ---- projection ------------------------------------------------------------------------------

struct Inputs {
  std::optional<Link> intra, inter;
  // No intra link, and the caller accepts that intra-node hops are not modelled (taken as free: the
  // inter-node hop of the same step is assumed to be the slower one). Reports must say so.
  bool intraFree = false;
  // How a step that uses both link classes is timed. Step-synchronous (false): every step waits for its
  // slowest hop: max(alpha_i + c beta_i, alpha_e + c beta_e) - the host rings of the tcp and mpi
  // backends. Pipelined (true, NCCL): latency = the hops' own latencies summed along the ring
  // (2(n-1) - 2(N-1) intra hops + 2(N-1) network hops, NCCL's tuning model), bandwidth = the slowest
  // link's. With one link class both are the same.
  bool pipelined = true;
};

struct Projection {
  std::string coll;
  Shape shape;
  double bytes = 0;
  Algo algo = Algo::kRing;
  double timeUs = 0;
  double algbwGBps = 0, busbwGBps = 0;
  std::vector<std::pair<Algo, double>> candidates;  // every algorithm considered, time
  std::string inputs;  // "intra: measured ...; inter: spec ..."
};

double busbwFactor(const std::string& coll, int n);
// Time of one algorithm. Throws InputError when a needed link is missing.
double timeOf(const std::string& coll, Algo algo, const Shape& shape, double bytes, const Inputs& in);
// The fastest of candidateAlgos (or only `force` when given), with every candidate's time.
Projection project(const std::string& coll, const Shape& shape, double bytes, const Inputs& in,
                   std::optional<Algo> force = std::nullopt);

// ---- training step and cost ------------------------------------------------------------------

struct TrainModel {
  double params = 0;             // parameter count
  double gradBytesPerParam = 2;  // bf16/fp16 gradients
  std::string gradDtype = "bf16";
  int tp = 1;                    // tensor-parallel degree inside the node
  double bucketBytes = 25e6;     // gradient bucket (PyTorch DDP default 25 MB)
  double computeMs = 0;          // compute time per step (user input)
  double overlap = 0;            // fraction of communication hidden behind compute, 0..1
};

struct StepEstimate {
  double gradBytesPerRank = 0;
  int buckets = 0;
  double lastBucketBytes = 0;
  Shape dpShape;                 // the data-parallel group's shape (G/TP ranks per node, R/TP NICs)
  Algo algo = Algo::kRing;       // chosen for a full bucket
  double commMs = 0, exposedMs = 0, stepMs = 0;
};
StepEstimate trainingStep(const TrainModel& m, const Shape& cluster, const Inputs& in);

struct PriceItem {
  double usd = 0;
  double count = 0;
};
struct FabricPrice {
  std::string name;
  double nicUsd = 0, nicsPerNode = 0;
  double switchUsd = 0;
  int switchPorts = 0;
  double cableUsd = 0;
  double opticsUsd = 0;          // optional: one transceiver's price (0 = not given: DAC cables)
  double opticsPerCable = 0;     // transceivers per cable (2: one at each end)
  double perGpuUsd = 0;          // optional (0 = not given)
  double perNodeUsd = 0;         // optional: the server without its GPUs (0 = not given)
  std::string note;
};
// {"fabrics": {"NAME": {"note": "...", "nic": {"usd": X, "per_node": R}, "switch": {"usd": X,
// "ports": P}, "cable": {"usd": X}, "optics": {"usd": X, "per_cable": 2} (optional), "per_gpu_usd": X
// (optional), "per_node_usd": X (optional)}}, "about": "..." (optional)}. Every price must be present
// and >= 0 (per_node, ports and per_cable > 0). Any other key is refused. Throws InputError naming the
// file, the entry and the field.
std::map<std::string, FabricPrice> parsePrices(const nlohmann::json& j, const std::string& source);
std::map<std::string, FabricPrice> loadPrices(const std::string& path);

struct CostEstimate {
  int endpoints = 0;             // NIC ports = N x R
  int leaves = 0, spines = 0;    // switches (one switch when every port fits in one)
  int cores = 0;                 // third tier, when leaves > P
  int cables = 0;
  double nicUsd = 0, switchUsd = 0, cableUsd = 0, opticsUsd = 0, gpuUsd = 0, nodeUsd = 0;
  double totalUsd = 0, perNodeUsd = 0;
  // What totalUsd covers, e.g. "NICs, switches, cables, optics, GPUs" ("fabric only" when the price
  // file gives neither GPUs nor nodes).
  std::string includes;
  bool wholeCluster = false;     // GPUs or nodes are priced
  std::string topology;          // "single switch" / "two-tier leaf/spine, non-blocking"
};
// Leaf/spine, non-blocking: when N x R ports fit one switch, one switch and N x R cables; else
// leaves = ceil(N R / (P/2)) (half the ports down, half up), spines = ceil(leaves x P/2 / P),
// cables = N R + leaves x P/2; above P leaves a three-tier folded Clos: aggregation = leaves,
// cores = ceil(aggregation x P/2 / P), cables += aggregation x P/2. Throws InputError when N < 1 or
// the ports exceed P^3/4.
CostEstimate fabricCost(const FabricPrice& p, int nodes, int gpusPerNode);

}  // namespace fb::model

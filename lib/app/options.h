// fabricbench's command line: nccl-tests' flags next to Google Benchmark's (--benchmark_*,
// which are passed through). parseOptions() throws ConfigError with one line naming the problem.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectives/collective.h"
#include "core/impl_facts.h"
#include "collectives/spec.h"
#include "app/gbench_flags.h"
#include "harness/runner.h"

namespace fb {

struct Options {
  std::size_t minBytes = 8;
  std::size_t maxBytes = 64u << 20;
  double stepFactor = 2.0;
  std::size_t stepBytes = 0;
  // --counts: explicit per-rank element counts (nccl-tests' "count" column) instead of the byte
  // sweep; bytes = count × element size, × nranks for allgather/reducescatter.
  std::vector<std::size_t> counts;
  std::vector<CollKind> colls;
  std::vector<std::string> transports;   // expanded: tcp, mpi, verbs, nccl, cuda
  bool transportsAuto = false;           // "auto": every path this machine has
  std::vector<std::string> namedTransports;  // named on the command line (a skip of one is not a pass)
  std::vector<std::string> required;     // --require: transports, or "gpu", that must produce rows
  std::vector<DataType> dtypes;
  std::vector<bool> placements;          // false = out-of-place, true = in-place
  std::vector<ReduceOp> ops;             // -o: reduction operators (reducing collectives only)
  int root = 0;                          // --root: the root rank of rooted collectives (broadcast)
  RunnerConfig runner;
  CollectiveOptions coll;
  std::string resultsDir = "results";
  std::string runId;
  bool writeFiles = true;
  bool list = false;
  bool resume = false;                   // --resume: add the missing rows to an existing --run-id
  bool overwrite = false;                // --overwrite: replace an existing --run-id's folder
  double progressSeconds = 5;            // --progress: stderr progress line interval (0 = off)
  std::string reduceOp = "sum";          // -o/--op (nccl-tests): the reduction operator
  BenchmarkFlags gb;                     // Google Benchmark's flags, as fabricbench honours them
  bool force = false;                    // --force: sweeps over kMaxRowsWithoutForce rows per backend
  std::size_t sweepSizes = 0;            // sizes in the -b/-e/-f/-i sweep (capped at kMaxRowsWithoutForce + 1)
  bool allowSingleRank = false;          // --allow-single-rank: a 1-rank run measures no fabric
  bool wide = false;                     // --wide: the console's full rows, one per placement
  bool doctor = false;                   // --doctor: check the fabric pitfalls on every node (lib/doctor)
  bool accept = false;                   // --accept: acceptance of the allocation (app/accept_command.h)
  struct Accept {                        // --accept-* (doc/acceptance.md)
    std::vector<std::string> paths = acceptPathNames(true);  // --accept-paths: pair-test paths
    std::string expectFile;              // --expect FILE
    double floor = 0.90;                 // --accept-floor: fraction of the line rate a pair must reach
    std::size_t bwBytes = 16u << 20;     // --accept-bw-bytes
    std::size_t latBytes = 8;            // --accept-lat-bytes
    int bwIters = 10, latIters = 200;    // --accept-bw-iters, --accept-lat-iters
    int retests = 3;                     // --accept-retests: rounds re-testing the slow pairs
    bool ranksAsNodes = false;           // --accept-ranks-as-nodes: each rank a node (one-host tests)
    bool noCollectives = false;          // --accept-no-collectives
    bool noPairs = false;                // --accept-no-pairs
    std::string baselineDir;             // --accept-baseline RUN_DIR: write RUN_DIR/expect.json
    double margin = 0.90;                // --accept-margin for --accept-baseline
  } acc;
  std::string canonical;                 // normalized flags, compared across ranks
};

// A sweep of more rows than this per backend (sizes x collectives x dtypes x placements) needs
// --force: a typo such as -i 1 -e 1M would otherwise start a million-row run.
constexpr std::size_t kMaxRowsWithoutForce = 5000;

// Every implementation name --transport accepts, in the order "auto" runs them.
const std::vector<std::string>& knownTransports();

// argv without argv[0]. Throws ConfigError (bad value), or returns nullopt after printing help
// or the version when --help/--version was asked (printHelp decides whether this rank prints).
// Repeated scalar flags: the last one wins (as getopt); list flags accumulate.
std::optional<Options> parseOptions(const std::vector<std::string>& args, bool printHelp);

// What --version prints: fabricbench's version, git revision, and the NCCL, CUDA, MPI and
// rdma-core versions this build was compiled against.
std::string versionText();

}  // namespace fb

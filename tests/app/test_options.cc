// fabricbench's options (lib/app/options.h): what each flag parses to, the one-line refusals, the
// backend table's own options, and the canonical form the ranks compare.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "app/backends.h"
#include "app/options.h"
#include "core/error.h"

using namespace fb;

namespace {

Options parse(std::vector<std::string> args) {
  auto o = parseOptions(args, false);
  REQUIRE(o.has_value());
  return *o;
}

// The ConfigError message of parsing `args` ("" when it parses).
std::string refusal(std::vector<std::string> args) {
  try {
    parseOptions(args, false);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("defaults: every collective and transport, float32, both placements, 8 B to 64 MiB") {
  Options o = parse({});
  CHECK(o.minBytes == 8);
  CHECK(o.maxBytes == (64u << 20));
  CHECK(o.stepFactor == 2.0);
  CHECK(o.transportsAuto);
  CHECK(o.transports == knownTransports());
  CHECK(o.namedTransports.empty());
  CHECK(o.colls == allCollKinds());
  REQUIRE(o.dtypes.size() == 1);
  CHECK(o.dtypes[0] == DataType::kFloat32);
  CHECK(o.placements == std::vector<bool>{false, true});
  CHECK(o.writeFiles);
  CHECK(o.resultsDir == "results");
}

TEST_CASE("the transports --transport accepts are the backend table's, in its order") {
  std::vector<std::string> names;
  for (const auto& e : backendTable()) names.push_back(e.name);
  CHECK(knownTransports() == names);
  CHECK(names == std::vector<std::string>{"tcp", "mpi", "verbs", "nccl", "cuda"});
  for (const auto& n : names) {
    REQUIRE(findBackend(n) != nullptr);
    CHECK(findBackend(n)->name == n);
  }
  CHECK(findBackend("rdma") == nullptr);
}

TEST_CASE("sizes, lists and placements parse to what they say") {
  Options o = parse({"-b", "1K", "-e", "8M", "-f", "4", "--transport", "mpi,tcp", "--collective", "allreduce",
                     "-d", "half", "--placement", "in", "-n", "7", "-w", "3"});
  CHECK(o.minBytes == 1024);
  CHECK(o.maxBytes == (8u << 20));
  CHECK(o.stepFactor == 4.0);
  CHECK(o.transports == std::vector<std::string>{"mpi", "tcp"});
  CHECK(o.namedTransports == std::vector<std::string>{"mpi", "tcp"});
  CHECK_FALSE(o.transportsAuto);
  CHECK(o.colls == std::vector<CollKind>{CollKind::kAllReduce});
  REQUIRE(o.dtypes.size() == 1);
  CHECK(o.dtypes[0] == DataType::kFloat16);
  CHECK(o.placements == std::vector<bool>{true});
  CHECK(o.runner.iters == 7);
  CHECK(o.runner.warmupIters == 3);
}

TEST_CASE("a repeated scalar flag: the last one wins; list flags add up") {
  Options o = parse({"-n", "5", "-n", "9", "--transport", "tcp", "--transport", "mpi"});
  CHECK(o.runner.iters == 9);
  CHECK(o.transports == std::vector<std::string>{"tcp", "mpi"});
}

TEST_CASE("--per-op's loop follows the timer: nccl-tests' -I loop under --timer nccl-tests, the lean one under rank") {
  CHECK_FALSE(parse({"--per-op"}).coll.ncclTestsLoop);
  CHECK_FALSE(parse({"--per-op", "--timer", "rank"}).coll.ncclTestsLoop);
  CHECK(parse({"--per-op", "--timer", "nccl-tests"}).coll.ncclTestsLoop);
  CHECK(parse({"--per-op", "--timer", "host"}).coll.ncclTestsLoop);  // the old name of the nccl-tests timer
  CHECK_FALSE(parse({"--timer", "nccl-tests", "--timer", "gpu"}).coll.ncclTestsLoop);
}

TEST_CASE("bad input: one line naming the problem") {
  CHECK(refusal({"--transport", "rdma"}) == "unknown transport 'rdma' (choose tcp, mpi, verbs, nccl, cuda or auto)");
  CHECK(refusal({"--transport", "tcp,,mpi"}) ==
        "--transport: empty element in 'tcp,,mpi' (give a comma-separated list without empty elements)");
  CHECK(refusal({"--placement", "sideways"}) == "unknown --placement 'sideways' (choose out, in or both)");
  CHECK(refusal({"-n", "0"}) == "--iters must be >= 1 (got 0)");
  CHECK(refusal({"--resume"}) == "--resume needs the --run-id of the run");
  CHECK(refusal({"--resume", "--overwrite", "--run-id", "x"}) == "--resume and --overwrite exclude each other");
  CHECK(refusal({"--run-id", "a/b"}) == "--run-id 'a/b' must be a plain folder name");
  CHECK(refusal({"--root", "-1"}) == "--root must be >= 0 (got -1)");
  CHECK(refusal({"--require", "infiniband"}).rfind("--require: unknown 'infiniband' (choose tcp, mpi, verbs, nccl, cuda, gpu", 0) == 0);
  CHECK(refusal({"-t", "2"}).rfind("nccl-tests' -t/--nthreads is not supported: ", 0) == 0);
  CHECK(refusal({"-n", "3"}).empty());
}

TEST_CASE("each backend's own options are registered and validated by its table entry") {
  // nccl: --path
  CHECK(parse({"--path", "nvlink"}).coll.path == "nvlink");
  CHECK(refusal({"--path", "wormhole"}) ==
        "unknown --path 'wormhole' (choose auto, training, nvlink, pcie, shm, socket, ib, roce or local)");
  // verbs: --gid-index, --ib-dev, --ib-port
  CHECK(refusal({"--gid-index", "-2"}) == "--gid-index must be >= 0");
  Options v = parse({"--ib-dev", "mlx5_0", "--ib-port", "2", "--gid-index", "3"});
  CHECK(v.coll.transport.verbsDevice == "mlx5_0");
  CHECK(v.coll.transport.verbsPort == 2);
  CHECK(v.coll.transport.gidIndex == 3);
  // tcp: --tcp-if
  CHECK(parse({"--tcp-if", "lo"}).coll.transport.tcpInterface == "lo");
}

TEST_CASE("the canonical form: equal for the same settings, different for different ones") {
  // Spelled differently, meaning the same: the ranks agree.
  CHECK(parse({"-n", "5", "--transport", "tcp"}).canonical == parse({"--iters", "5", "--transport=tcp"}).canonical);
  CHECK(parse({"-b", "1K"}).canonical == parse({"--minbytes=1K"}).canonical);
  // Different settings: the ranks refuse to run.
  CHECK(parse({"-n", "5"}).canonical != parse({"-n", "6"}).canonical);
  CHECK(parse({"--transport", "tcp"}).canonical != parse({"--transport", "mpi"}).canonical);
  CHECK(parse({"--path", "nvlink"}).canonical != parse({"--path", "pcie"}).canonical);
}

TEST_CASE("--help and --version return no options (the caller prints, or not)") {
  CHECK_FALSE(parseOptions({"--help"}, false).has_value());
  CHECK_FALSE(parseOptions({"--version"}, false).has_value());
}

// The run plan (lib/app/plan.h): which rows a run measures, in which order, under which names,
// for a given rank count, without launching anything.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "app/backends.h"
#include "app/options.h"
#include "app/plan.h"

using namespace fb;

namespace {

Options parse(std::vector<std::string> args) {
  auto o = parseOptions(args, false);
  REQUIRE(o.has_value());
  return *o;
}

std::vector<std::string> names(const std::vector<Point>& pts) {
  std::vector<std::string> out;
  for (const auto& p : pts) out.push_back(p.name);
  return out;
}

Backend backend(const char* name, const char* path = "") {
  const BackendEntry* e = findBackend(name);
  REQUIRE(e != nullptr);
  return Backend{e, path};
}

}  // namespace

TEST_CASE("plan order: collective, operator, dtype, placement, then size") {
  Options o = parse({"--collective", "allreduce,p2pring", "-b", "8", "-e", "64", "-f", "4"});
  auto pts = planPoints(o, backend("tcp"), 2, {});
  // p2pring has no in-place form: its out-of-place rows only.
  CHECK(names(pts) == std::vector<std::string>{"allreduce/tcp/8", "allreduce/tcp/32", "allreduce/tcp/8/inplace",
                                               "allreduce/tcp/32/inplace", "p2pring/tcp/8", "p2pring/tcp/32"});
  REQUIRE(pts.size() == 6);
  CHECK(pts[0].req.kind == CollKind::kAllReduce);
  CHECK_FALSE(pts[0].req.inPlace);
  CHECK(pts[2].req.inPlace);
  CHECK(pts[1].bytes == 32);
  CHECK(pts[4].req.kind == CollKind::kP2PRing);
  for (const auto& p : pts) {
    CHECK(p.req.dtype == DataType::kFloat32);
    CHECK(p.req.op == ReduceOp::kSum);
    CHECK(p.req.root == 0);
  }
}

TEST_CASE("names carry the backend's variant, the dtype, the operator and the root when not the default") {
  Options o = parse({"--collective", "allreduce,broadcast", "-b", "1K", "-e", "1K", "--placement", "out", "-d",
                     "float64", "-o", "sum,max", "--root", "1"});
  auto pts = planPoints(o, backend("nccl", "nvlink"), 4, {});
  CHECK(names(pts) == std::vector<std::string>{"allreduce/nccl:nvlink/1024/float64",
                                               "allreduce/nccl:nvlink/1024/float64/max",
                                               "broadcast/nccl:nvlink/1024/float64/root1"});
  REQUIRE(pts.size() == 3);
  CHECK(pts[1].req.op == ReduceOp::kMax);
  CHECK(pts[0].req.root == 0);  // only rooted collectives take --root
  CHECK(pts[2].req.root == 1);
  CHECK(pts[2].req.op == ReduceOp::kSum);  // broadcast does not reduce: one row, not one per operator
}

TEST_CASE("--counts: bytes = count x element size, x ranks where the buffer is split per rank") {
  Options o = parse({"--collective", "allreduce,allgather", "--counts", "3,10", "--placement", "out", "-d", "half"});
  auto pts = planPoints(o, backend("tcp"), 3, {});
  REQUIRE(pts.size() == 4);
  CHECK(pts[0].bytes == 3 * 2);
  CHECK(pts[1].bytes == 10 * 2);
  CHECK(pts[2].bytes == 3 * 2 * 3);
  CHECK(pts[3].bytes == 10 * 2 * 3);
  CHECK(pts[3].name == "allgather/tcp/60/float16");
}

TEST_CASE("--benchmark_filter and --resume leave rows out") {
  Options o = parse({"--collective", "allreduce", "-b", "8", "-e", "32", "--placement", "out",
                     "--benchmark_filter=allreduce/tcp/(8|32)$"});
  CHECK(names(planPoints(o, backend("tcp"), 2, {})) == std::vector<std::string>{"allreduce/tcp/8", "allreduce/tcp/32"});
  // A row an earlier run measured (the same collective, implementation, dtype, placement, size).
  std::set<std::string> done{rowKey("allreduce", "tcp", "float32", false, 8)};
  CHECK(names(planPoints(o, backend("tcp"), 2, done)) == std::vector<std::string>{"allreduce/tcp/32"});
  // The key names the implementation, not its path: NCCL's rows of any path count.
  CHECK(rowKey("allreduce", "nccl", "float32", true, 8) == "allreduce|nccl|float32|in|8");
}

TEST_CASE("a whole plan: per backend, its progress rows, and a filter that selects nothing") {
  Options o = parse({"--collective", "allreduce", "-b", "8", "-e", "16", "--placement", "out"});
  RunPlan plan = makePlan({backend("tcp"), backend("mpi")}, o, 2, {});
  REQUIRE(plan.points.size() == 2);
  CHECK(names(plan.points[0]) == std::vector<std::string>{"allreduce/tcp/8", "allreduce/tcp/16"});
  CHECK(names(plan.points[1]) == std::vector<std::string>{"allreduce/mpi/8", "allreduce/mpi/16"});
  CHECK_FALSE(plan.empty());
  CHECK(plan.filterNote.empty());
  auto rows = plan.rows();
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].group == "tcp/allreduce");
  CHECK(rows[3].group == "mpi/allreduce");
  CHECK(rows[3].bytes == 16);

  Options none = parse({"--collective", "allreduce", "-b", "8", "-e", "16", "--benchmark_filter=AllReduce"});
  RunPlan empty = makePlan({backend("tcp")}, none, 2, {});
  CHECK(empty.empty());
  CHECK(empty.filterNote.find("allreduce/tcp/8") != std::string::npos);
}

// Issue 13: fair plateaus, % of nominal in report.md, medians with spread, and the run verdict.
#include <catch2/catch.hpp>
#include <cmath>

#include "helpers.h"
#include "report/result_sink.h"
#include "report/summary.h"
#include "report/verdict.h"

using fbtest::row;

namespace {
// busbw(b) = min(cap, b / 1e6) over 1 MiB .. maxB (x2).
std::vector<fb::Sample> curve(const std::string& impl, std::size_t maxB, double cap) {
  std::vector<fb::Sample> rows;
  for (std::size_t b = 1u << 20; b <= maxB; b *= 2)
    rows.push_back(row("allreduce", impl, impl + "-path", b, 10, std::min(cap, static_cast<double>(b) / 1e6)));
  return rows;
}
}  // namespace

TEST_CASE("plateau: flagged when the sweep stops while busbw still rises", "[summary][plateau]") {
  auto rising = curve("tcp", 64u << 20, 1000);  // still doubling at 64 MiB
  CHECK(fb::plateauWarning(rising) == "not a plateau: the sweep stops at 64 MiB (busbw +100% from 32 MiB)");
  auto flat = curve("tcp", 64u << 20, 10);       // settled at 10 GB/s from 16 MiB
  CHECK(fb::plateauWarning(flat).empty());
  // Within kPlateauRise (5%): still a plateau.
  flat.back().busBwGBps = 10.4;
  CHECK(fb::plateauWarning(flat).empty());
  flat.back().busBwGBps = 10.6;
  CHECK(fb::plateauWarning(flat).find("not a plateau: the sweep stops at 64 MiB (busbw +6% from 32 MiB)") == 0);
  // Wrong rows do not count.
  flat.back().wrong = 3;
  CHECK(fb::plateauWarning(flat).empty());
}

TEST_CASE("plateau / baseline only over the sizes both series have", "[summary][plateau]") {
  // A: 1 MiB .. 256 MiB, B: 1 MiB .. 8 GiB, the same curve (rising throughout).
  auto a = curve("cuda", 256u << 20, 1e9);
  auto b = curve("nccl", std::size_t(8) << 30, 1e9);
  // Each plateau on its own range differs wildly (the trap the issue describes) ...
  CHECK(fb::plateauBusBw(b) / fb::plateauBusBw(a) > 10);
  // ... over the common sizes they are the same curve: ratio 1.
  auto ca = fb::rowsAtCommonSizes(a, b), cb = fb::rowsAtCommonSizes(b, a);
  CHECK(ca.size() == a.size());
  CHECK(cb.size() == a.size());
  CHECK(fb::plateauBusBw(ca) / fb::plateauBusBw(cb) == Approx(1.0));

  // report.md says so in the summary: ratio over common sizes with the size limit, and the flag.
  std::vector<fb::Sample> rows = a;
  rows.insert(rows.end(), b.begin(), b.end());
  fb::RunMeta meta;
  std::string md = fb::renderRunReport(meta, rows, fb::RunSummary{}, "");
  CHECK(md.find("plateau / baseline (common sizes)") != std::string::npos);
  CHECK(md.find("| 1.00 (sizes ≤ 256 MiB) |") == std::string::npos);  // cuda's own max is 256 MiB: no note
  CHECK(md.find("| 1.00 |") != std::string::npos);
  CHECK(md.find("not a plateau: the sweep stops at 256 MiB") != std::string::npos);
  CHECK(md.find("not a plateau: the sweep stops at 8 GiB") != std::string::npos);
}

TEST_CASE("report.md: % of nominal and its basis per path; medians with spread", "[markdown][nominal]") {
  std::vector<fb::Sample> rows;
  for (std::size_t b : {std::size_t(1) << 20, std::size_t(2) << 20, std::size_t(4) << 20}) {
    auto r = row("allreduce", "tcp", "tcp eth0 10.0.0.11", b, 100, 0.1);
    r.pctNominal = 80;  // 0.1 / 0.125 GB/s
    r.extra = {{"nominal_basis", "eth0: tc tbf 1 Gbit/s (shaped, link 10000 Mb/s)"}};
    r.repeats = 3;
    r.timeUsMin = 80;
    r.timeUsMax = 125;
    rows.push_back(r);
  }
  auto lo = row("allreduce", "tcp", "tcp lo 127.0.0.1 same host (loopback path)", 1 << 20, 100, 5);
  lo.extra = {{"nominal_basis", "same host (loopback path), no nominal rate"}};
  rows.push_back(lo);
  std::string md = fb::renderRunReport(fb::RunMeta{}, rows, fb::RunSummary{}, "");
  CHECK(md.find("| 80.0% | 0.125 GB/s (eth0: tc tbf 1 Gbit/s (shaped, link 10000 Mb/s)) |") != std::string::npos);
  CHECK(md.find("| — | same host (loopback path), no nominal rate |") != std::string::npos);
  CHECK(md.find("tcp lo 127.0.0.1 same host (loopback path)") != std::string::npos);
  CHECK(md.find("0.100 [0.080–0.125]") != std::string::npos);  // median [slowest–fastest batch]
  CHECK(md.find("median of") != std::string::npos);
  CHECK(md.find("rank-clock, max, median of ≤3") != std::string::npos);
  CHECK(fb::nominalGBps(rows) == Approx(0.125));
}

TEST_CASE("verdict: passed / partial / failed / nothing ran, exit codes", "[verdict]") {
  const std::vector<std::string> gpuBackends{"nccl", "cuda"};  // fabricbench's table (lib/app/backends.cc)
  fb::VerdictInput in;
  in.gpuBackends = gpuBackends;
  in.rows = 10;
  in.measured = {"tcp", "mpi"};
  in.skipped = {{"verbs", "no RDMA device"}};
  in.autoTransports = true;
  auto v = fb::judgeRun(in);
  CHECK(v.exitCode == 0);
  CHECK(v.ok);
  CHECK(v.status == "passed: 10 rows, wrong = 0; measured: tcp, mpi; skipped: verbs");

  // auto on a GPU node, no GPU path: partial.
  in.gpus = "2 × NVIDIA H200";
  in.skipped.push_back({"nccl", "no CUDA device"});
  v = fb::judgeRun(in);
  CHECK(v.exitCode == fb::kExitPartial);
  CHECK_FALSE(v.ok);
  CHECK(v.status.rfind("partial: 10 rows, wrong = 0; measured: tcp, mpi; skipped: verbs, nccl; not passed: this node "
                       "has GPUs (2 × NVIDIA H200) but no GPU path (nccl, cuda) was measured", 0) == 0);
  // ... and with one GPU path measured it passes.
  in.measured.push_back("nccl:nvlink");
  CHECK(fb::judgeRun(in).exitCode == 0);

  // A named transport skipped: partial even without GPUs.
  fb::VerdictInput named;
  named.rows = 4;
  named.measured = {"tcp"};
  named.named = {"tcp", "verbs"};
  named.skipped = {{"verbs", "no RDMA device"}};
  v = fb::judgeRun(named);
  CHECK(v.exitCode == 4);
  CHECK(v.status.find("verbs was named on the command line but skipped (no RDMA device)") != std::string::npos);
  // nccl named, one path measured, the others skipped (--path auto, one path per process): measured.
  fb::VerdictInput paths;
  paths.rows = 4;
  paths.named = {"nccl"};
  paths.measured = {"nccl:nvlink"};
  paths.skipped = {{"nccl:shm", "one forced path per process"}, {"nccl:socket", "one forced path per process"}};
  CHECK(fb::judgeRun(paths).exitCode == 0);
  // Required GPU path missing.
  fb::VerdictInput req;
  req.gpuBackends = gpuBackends;
  req.rows = 4;
  req.measured = {"tcp"};
  req.required = {"gpu"};
  CHECK(fb::judgeRun(req).exitCode == 4);
  req.measured.push_back("cuda");
  CHECK(fb::judgeRun(req).exitCode == 0);
  req.required = {"nccl"};
  CHECK(fb::judgeRun(req).exitCode == 4);
  req.measured.push_back("nccl:socket");
  CHECK(fb::judgeRun(req).exitCode == 0);

  // An NCCL attestation that does not hold (--require ib on a socket run): exit 4 with the reason,
  // also when nothing else ran (not 3). The skip text is as fabricbench records it (agree() prefixes).
  fb::VerdictInput att;
  att.rows = 0;
  att.named = {"nccl"};
  att.attestRequired = {"ib"};
  att.skipped = {{"nccl:training", "nccl:training: rank 0: [vm:0] --require ib: NCCL used NET/Socket (TCP) between "
                                   "nodes, not InfiniBand (interfaces eth0)"}};
  auto av = fb::judgeRun(att);
  CHECK(av.exitCode == 4);
  CHECK(av.status.find("--require ib: NCCL used NET/Socket (TCP) between nodes") != std::string::npos);
  // Required, but no nccl row and no attestation failure: exit 4 naming it.
  fb::VerdictInput noNccl;
  noNccl.rows = 3;
  noNccl.measured = {"tcp"};
  noNccl.attestRequired = {"gdr"};
  CHECK(fb::judgeRun(noNccl).exitCode == 4);
  CHECK(fb::judgeRun(noNccl).status.find("--require gdr: no nccl row was measured") != std::string::npos);
  noNccl.measured.push_back("nccl:training");
  CHECK(fb::judgeRun(noNccl).exitCode == 0);

  // Wrong elements beat partial; nothing ran is 3.
  named.badRows = 1;
  named.wrongTotal = 7;
  CHECK(fb::judgeRun(named).exitCode == 1);
  CHECK(fb::judgeRun(named).status.rfind("failed: 7 wrong elements in 1 rows", 0) == 0);
  fb::VerdictInput none;
  none.skipped = {{"tcp", "x"}};
  CHECK(fb::judgeRun(none).exitCode == 3);
  CHECK(fb::isGpuBackend("nccl:ib", gpuBackends));
  CHECK(fb::isGpuBackend("cuda", gpuBackends));
  CHECK_FALSE(fb::isGpuBackend("tcp", gpuBackends));
  CHECK_FALSE(fb::isGpuBackend("nccl:ib", {}));
}

TEST_CASE("verdict: a named backend that declined some rows is partial and listed as skipped", "[verdict]") {
  // mpirun -np 2 fabricbench --transport tcp,mpi -o avg: MPI has no avg, every mpi row declined.
  fb::VerdictInput in;
  in.rows = 8;
  in.measured = {"tcp"};
  in.named = {"tcp", "mpi"};
  in.declined = {{"mpi", "allreduce float32 avg: MPI has no avg reduction"},
                 {"mpi", "reducescatter float32 avg: MPI has no avg reduction"}};
  auto v = fb::judgeRun(in);
  CHECK(v.exitCode == fb::kExitPartial);
  CHECK_FALSE(v.ok);
  CHECK(v.status ==
        "partial: 8 rows, wrong = 0; measured: tcp; skipped: mpi allreduce float32 avg, mpi reducescatter float32 avg; "
        "not passed: mpi was named on the command line but skipped allreduce float32 avg: MPI has no avg reduction; "
        "mpi was named on the command line but skipped reducescatter float32 avg: MPI has no avg reduction");
  // Some rows of a named backend measured, others declined: still partial.
  in.measured.push_back("mpi");
  CHECK(fb::judgeRun(in).exitCode == fb::kExitPartial);
  // Under --transport auto (not named) the declined rows are listed, and the run passes.
  fb::VerdictInput autoRun = in;
  autoRun.named.clear();
  autoRun.autoTransports = true;
  auto a = fb::judgeRun(autoRun);
  CHECK(a.exitCode == 0);
  CHECK(a.status == "passed: 8 rows, wrong = 0; measured: tcp, mpi; skipped: mpi allreduce float32 avg, mpi "
                    "reducescatter float32 avg");
}

TEST_CASE("single rank: no busbw, no plateau, no ratio, no headline", "[summary][single_rank]") {
  // A file written before the fix: broadcast at 1 rank with busbw = algbw (1186042 GB/s), and
  // nccl at 1 rank beside a 2-rank tcp series.
  std::vector<fb::Sample> rows;
  for (std::size_t b = 1u << 20; b <= (8u << 20); b *= 2) {
    auto one = row("broadcast", "mpi", "sm", b, 1.0, 1186042.816);
    one.nRanks = 1;
    rows.push_back(one);
    auto nccl = row("allreduce", "nccl", "local", b, 2.0, 0);
    nccl.nRanks = 1;
    rows.push_back(nccl);
    auto tcp = row("allreduce", "tcp", "lo", b, 100.0, 3.0);
    tcp.nRanks = 2;
    rows.push_back(tcp);
  }
  auto series = fb::groupSeries(rows);
  REQUIRE(series.size() == 3);
  CHECK(std::isnan(fb::plateauBusBw(series[0].rows)));  // broadcast, 1 rank
  CHECK(std::isnan(fb::plateauBusBw(series[1].rows)));  // nccl, 1 rank
  CHECK(fb::plateauBusBw(series[2].rows) == 3.0);
  CHECK(fb::plateauWarning(series[0].rows).empty());
  // fabricbench-peer's rows are one process too, but copies over a link, not collectives: kept.
  auto peer = row("peer_copy_sweep", "cuda", "GPU0->GPU1 sm-write", 1u << 20, 5.0, 200.0);
  peer.nRanks = 1;
  CHECK(fb::crossesLink(peer));
  CHECK(fb::plateauBusBw({peer}) == 200.0);
  auto op = row("allreduce(prod)", "mpi", "sm", 1u << 20, 5.0, 0);
  op.nRanks = 1;
  CHECK_FALSE(fb::crossesLink(op));
  // The headline leaves both 1-rank series out and says so.
  std::string h = fb::consoleHeadline(rows);
  INFO(h);
  CHECK(h.find("broadcast") == std::string::npos);
  CHECK(h.find("nccl/local") == std::string::npos);
  CHECK(h.find("tcp/lo [out]") != std::string::npos);
  CHECK(h.find("2 series measured at 1 rank left out: no link crossed (busbw 0)") != std::string::npos);
  // report.md: NCCL is the baseline of the ratios; at 1 rank there is no ratio at any size.
  fb::RunMeta meta;
  meta.runId = "one";
  std::string md = fb::renderRunReport(meta, rows, fb::RunSummary{}, "");
  INFO(md);
  CHECK(md.find("1186042") == std::string::npos);
  CHECK(md.find("no link (1 rank)") != std::string::npos);
  // The allreduce per-size table: tcp / baseline (nccl, 1 rank) is "—" at every size, never 0.00 or inf.
  auto at = md.find("tcp/lo [out] / baseline |");
  REQUIRE(at != std::string::npos);
  std::string table = md.substr(at, md.find("\n\n", at) - at);
  CHECK(table.find("| 1 MiB | 1048576 | no link | 3.00 | — |") != std::string::npos);
  CHECK(table.find("0.00 |\n") == std::string::npos);
  CHECK(table.find("inf") == std::string::npos);
}

// The generic fit of an N x G series (issue 30 item 2): the inter-node hop solved given the intra-node
// link, on hand-computed curves (recovered exactly), on the lab's real tcp runs (against the one-rank-
// per-node fits of the same lab), and fabricbench-model's fit/validate/project with and without --intra.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "model/model.h"
#include "report/import.h"
#include "report/series.h"
#include "model_series.h"
#include "model_tool_run.h"

using namespace fb::model;
using Approx = Catch::Detail::Approx;

namespace {

void requireExact(const HopFit& f, double alphaUs, double gbps) {
  INFO(f.why << " / " << f.nxg);
  REQUIRE(f.usable);
  REQUIRE(f.segs.size() == 1);
  CHECK(f.segs[0].alphaUs == Approx(alphaUs).epsilon(1e-6));
  CHECK(f.segs[0].gbps() == Approx(gbps).epsilon(1e-6));
  CHECK(f.maxAbsErrPct < 1e-6);
}

}  // namespace

TEST_CASE("N x G fit: hierarchical AllReduce on 2 x 4, one NIC, the intra-node phases taken off", "[model][fit][nxg]") {
  // Given intra 5 us, 10 GB/s; to recover: inter 30 us, 0.5 GB/s. Hierarchical AllReduce on 2 nodes x 4
  // ranks, one NIC per node, tcp (steps step-synchronous): ReduceScatter inside (3 hops of S/4), AllReduce
  // between the nodes (2 hops of S/8, 4 rails on one NIC: S/2 a hop on the NIC), AllGather inside (3 hops of
  // S/4): t = 6 (5 + S/4 / 10e3) + 2 (30 + S/2 / 0.5e3) us.
  const double ai = 5, gi = 10, ae = 30, ge = 0.5;
  std::vector<std::pair<std::size_t, double>> pts;
  for (std::size_t S = 64u << 10; S <= (64u << 20); S *= 2)
    pts.push_back({S, 6 * (ai + S / 4.0 * 1e-3 / gi) + 2 * (ae + S / 2.0 * 1e-3 / ge)});
  const Link intra = constantLink(gi, ai, "test: known");
  FitOptions opt;
  opt.intra = &intra;
  opt.nicsPerNode = 1;
  auto f = fitSeries(testSeries("allreduce", 8, 2, pts, "tcp", "hier"), opt);
  requireExact(f, ae, ge);
  CHECK(f.points.front().algo == Algo::kHier);
  CHECK(f.nxg.find("inter-node hop of 2 nodes x 4 ranks, 1 NIC(s) per node, steps step-synchronous") !=
        std::string::npos);
  // The fitted link projects the same rows back (the model's own time function).
  Inputs in;
  in.intra = intra;
  in.inter = linkFromFit(f, "fitted");
  in.pipelined = false;
  CHECK(timeOf("allreduce", Algo::kHier, Shape{2, 4, 1}, 1 << 20, in) == Approx(pts[4].second).epsilon(1e-9));
}

TEST_CASE("N x G fit: ring on 3 x 2 whose steps are bound by the node below 1.2 MB and by the network above",
          "[model][fit][nxg]") {
  // Given intra 200 us, 10 GB/s; to recover: inter 20 us, 1 GB/s. Ring AllReduce on 3 x 2 (tcp, one NIC):
  // 10 steps of S/6, each the slower of its hops: t = 10 max(200 + S/6 / 10e3, 20 + S/6 / 1e3) us; the two
  // are equal at S = 180 x 6 / 0.9e-3 = 1.2e6 B, so 4 KiB..1 MiB say nothing of the network (their time is
  // the intra-node hop's) and 2 MiB..64 MiB give it.
  const double ai = 200, gi = 10, ae = 20, ge = 1;
  std::vector<std::pair<std::size_t, double>> pts;
  for (std::size_t S = 4096; S <= (64u << 20); S *= 2)
    pts.push_back({S, 10 * std::max(ai + S / 6.0 * 1e-3 / gi, ae + S / 6.0 * 1e-3 / ge)});
  const Link intra = constantLink(gi, ai, "test: known");
  FitOptions opt;
  opt.intra = &intra;
  auto f = fitSeries(testSeries("allreduce", 6, 3, pts, "tcp", "ring"), opt);
  requireExact(f, ae, ge);
}

TEST_CASE("N x G fit: NCCL-style pipelined ring on 2 x 4 with 4 NICs", "[model][fit][nxg]") {
  // Given intra 3 us, 100 GB/s; to recover: inter 10 us, 20 GB/s. Pipelined ring AllReduce (nccl: latency the
  // hops' own along the ring, bandwidth the slowest link's) on 2 x 4 with 4 NICs: 14 steps of S/8, 2 of the 14
  // hops cross the network, 4 rings over 4 NICs: t = 14 (12/14 x 3 + 2/14 x 10 + max(S/8 / 100e3, S/32 / 20e3)).
  const double ai = 3, gi = 100, ae = 10, ge = 20;
  std::vector<std::pair<std::size_t, double>> pts;
  for (std::size_t S = 64u << 10; S <= (1u << 30); S *= 2)
    pts.push_back({S, 14 * (12.0 / 14 * ai + 2.0 / 14 * ae + std::max(S / 8.0 * 1e-3 / gi, S / 32.0 * 1e-3 / ge))});
  const Link intra = constantLink(gi, ai, "test: known");
  FitOptions opt;
  opt.intra = &intra;
  opt.nicsPerNode = 4;
  auto f = fitSeries(testSeries("allreduce", 8, 2, pts, "nccl"), opt);
  requireExact(f, ae, ge);
  CHECK(f.nxg.find("steps pipelined") != std::string::npos);
}

TEST_CASE("N x G fit: refused without the intra link; the folds of 6 ranks left out", "[model][fit][nxg]") {
  std::vector<std::pair<std::size_t, double>> pts;
  for (std::size_t S = 4096; S <= (1u << 20); S *= 2) pts.push_back({S, 100 + S * 1e-3});
  auto f = fitSeries(testSeries("allreduce", 6, 3, pts, "tcp", "ring"));
  CHECK_FALSE(f.usable);
  CHECK(f.segs.empty());
  CHECK(f.why.find("give the intra-node link (--intra SRC)") != std::string::npos);
  CHECK(f.why.find("`fabricbench-model nccl fit RUN`") != std::string::npos);
  const Link intra = constantLink(10, 5, "test: known");
  FitOptions opt;
  opt.intra = &intra;
  auto g = fitSeries(testSeries("allreduce", 6, 3, pts, "tcp", "recursive-doubling"), opt);
  CHECK_FALSE(g.usable);
  CHECK(g.why.find("too short to fit: 0 usable sizes") != std::string::npos);
  CHECK(g.why.find("9 row(s) left out: recursive-doubling on 6 ranks: the phases do not follow the fold's "
                   "renumbering of ranks") != std::string::npos);
  auto h = fitSeries(testSeries("allreduce", 7, 3, pts, "tcp", "ring"), opt);
  CHECK(h.why.find("not the same number on every node") != std::string::npos);
}

// ---- the lab's real tcp runs (results/20261202-*, tc tbf per node, scripts/model-lab-runs.sh) ----

namespace {

const fb::Series& labSeries(const std::vector<fb::Series>& all, const std::string& coll) {
  for (auto& s : all)
    if (s.coll == coll && s.impl == "tcp" && !s.inPlace) return s;
  FAIL("no tcp " << coll << " series");
  return all.front();
}
std::vector<fb::Series> labRun(const std::string& name) {
  return fb::groupSeries(fb::loadRunAny(std::string(FB_SOURCE_DIR) + "/results/" + name).rows, "");
}

}  // namespace

TEST_CASE("N x G fit on the lab's 3 x 2 tcp runs agrees with the one-rank-per-node fits", "[model][fit][nxg][lab]") {
  // The 3 x 2 run's inter-node hop, given the 1 x 2 run's fit of the same collective, against the 2 x 1 run's
  // own fit (the inter input `validate` uses): the bandwidth of the largest sizes' segment (the ring's; alpha
  // is 0 there in every fit: the shaper's rate alone). Bound: 5 % (the validation's median bound,
  // doc/model.md). Measured when written, 3 x 2 vs 2 x 1 (3 x 1 for the record): labu 200 Mbit/s AllGather
  // 0.02425 vs 0.02413 GB/s, +0.5 % (3 x 1 0.02411); ReduceScatter 0.02391 vs 0.02410, -0.8 % (3 x 1 0.02516:
  // -5.0 %, the 3 x 1 fit itself 4.4 % off the 2 x 1's); labt 1 Gbit/s AllReduce 0.11949 vs 0.12108, -1.3 %
  // (3 x 1 0.11967). The small sizes' alpha does not carry over (3 x 2 AllGather 111 us a hop below 32 KiB,
  // 2 x 1 31 us): six ranks on the lab's 2 shared cores.
  struct Case {
    std::string lab, coll;
    int leftOut;  // recursive doubling/halving and Rabenseifner rows of 6 ranks
  } cases[] = {{"20261202-labu-200mbit", "allgather", 0},
               {"20261202-labu-200mbit", "reducescatter", 8},
               {"20261202-labt-1gbit", "allreduce", 8}};
  for (auto& c : cases) {
    INFO(c.lab << " " << c.coll);
    auto one = labRun(c.lab + "-1x2"), nxg = labRun(c.lab + "-3x2"), two = labRun(c.lab + "-2x1"),
         three = labRun(c.lab + "-3x1");
    auto fi = fitSeries(labSeries(one, c.coll));
    REQUIRE(fi.usable);
    const Link intra = linkFromFit(fi, c.lab + "-1x2");
    FitOptions opt;
    opt.intra = &intra;
    auto f = fitSeries(labSeries(nxg, c.coll), opt);
    INFO(f.why << " / " << f.nxg);
    REQUIRE(f.usable);
    CHECK(f.medianAbsErrPct <= 10);
    CHECK((f.nxg.find("row(s) left out") != std::string::npos) == (c.leftOut > 0));
    int fitted = 0;
    for (auto& p : f.points) fitted += p.algo == Algo::kRing;
    CHECK(fitted >= 7);  // 1 MiB..64 MiB
    auto f2 = fitSeries(labSeries(two, c.coll)), f3 = fitSeries(labSeries(three, c.coll));
    REQUIRE(f2.usable);
    REQUIRE(f3.usable);
    const double g = f.segs.back().gbps(), g2 = f2.segs.back().gbps(), g3 = f3.segs.back().gbps();
    INFO("3x2 given 1x2 " << g << " GB/s, alpha " << f.segs.back().alphaUs << " us (median |err| " << f.medianAbsErrPct
         << "%); 2x1 " << g2 << " GB/s, alpha " << f2.segs.back().alphaUs << " us; 3x1 " << g3 << " GB/s");
    CHECK(std::fabs(g / g2 - 1) <= 0.05);
  }
}

// ---- fabricbench-model, run as a user runs it ----

#ifdef FB_MODEL_TOOL
namespace {
namespace fs = std::filesystem;
using fbtest::tool;
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}
const std::string kRes = std::string(FB_SOURCE_DIR) + "/results/";
const std::string kData = FB_MODEL_TEST_DATA;
}  // namespace

TEST_CASE("fabricbench-model fit --intra: an N x G run's inter-node hop; refusals in one line", "[tool][nxg]") {
  const std::string out = (fs::temp_directory_path() / ("fb_nxg_" + std::to_string(::getpid()))).string();
  const std::string R = kRes + "20261202-labu-200mbit-3x2", I = kRes + "20261202-labu-200mbit-1x2";
  // Without --intra: each series refused in a line naming both ways.
  auto n = tool("fit " + R + " --series tcp --no-plots -o " + out);
  CHECK(n.rc == 0);
  CHECK(has(n.text, "not fitted: 6 ranks on 3 nodes mixes intra- and inter-node hops: give the intra-node link "
                    "(--intra SRC) to fit its inter-node hop, or fit an N x G NCCL run or nccl-tests log with "
                    "`fabricbench-model nccl fit RUN`"));
  // With it: the inter-node hop, the error at every size; a collective whose intra fit is not usable says so.
  auto y = tool("fit " + R + " --series tcp --intra " + I + ":tcp --no-plots -o " + out);
  INFO(y.text);
  CHECK(y.rc == 0);
  CHECK(has(y.text, "fitted: the inter-node hop of 3 nodes x 2 ranks, 1 NIC(s) per node, steps step-synchronous, "
                    "given the intra-node link measured: 20261202-labu-200mbit-1x2: allgather tcp"));
  CHECK(has(y.text, "hop bandwidth 0.0243 GB/s"));
  CHECK(has(y.text, "       64 MiB  ring               measured      2.344 s  fitted      2.306 s    -1.6%"));
  CHECK(has(y.text, "not fitted: --intra " + I + ":tcp: 20261202-labu-200mbit-1x2: allreduce tcp"));
  CHECK(has(fbtest::slurp(out + "/fit.md"), "--intra " + I + ":tcp"));
  fs::remove_all(out);
  // An N x G NCCL log given an intra link: these phases are not NCCL's algorithms; the refusal names `nccl fit`.
  auto nccl = tool("fit " + kData + "/public-nccl-tests/h100-snellius-2n-g4-all_reduce.log --intra spec:nvlink4-h100 "
                   "--nics 4 --no-plots -o " + out);
  INFO(nccl.text);
  CHECK(nccl.rc == 0);
  CHECK(has(nccl.text, "NOT USED: too noisy to fit"));
  CHECK(has(nccl.text, "an N x G NCCL run is fitted with NCCL's algorithms by `fabricbench-model nccl fit RUN`"));
  fs::remove_all(out);
  // Bad --intra: one line, exit 2, no output folder.
  const std::string two = kRes + "20261202-labu-200mbit-2x1";
  struct Case {
    std::string args, expect;
  } bad[] = {
      {"fit " + R + " --intra /nonexistent/run:tcp -o " + out, "neither spec:NAME nor an existing run"},
      {"fit " + R + " --intra spec:ib-hdr -o " + out, "--intra spec:ib-hdr is a network link (use --inter)"},
      {"fit " + R + " --intra spec:nosuch -o " + out, "unknown link spec 'nosuch'"},
      {"fit " + R + " --intra " + two + ":tcp -o " + out, "ran on 2 nodes: its hops are inter-node"},
      {"fit " + R + " --intra " + I + ":nosuch -o " + out, "no series matches 'nosuch'"},
      {"fit " + R + " --intra " + I + " --nics 0 -o " + out, "--nics = 0: must be > 0"},
      {"project --inter " + R + ":tcp --coll allgather --nodes 4 -o " + out,
       "6 ranks on 3 nodes mixes intra- and inter-node hops: give the intra-node link (--intra SRC)"},
      {"project --inter " + R + ":tcp --intra " + I + ":tcp --coll allgather --fit-nics 0 --nodes 4 -o " + out,
       "--fit-nics = 0: must be > 0"},
      {"fit " + R + " --nics 2 -o " + out, "--nics is the NICs of an N x G run fitted with --intra"},
      {"project --inter " + two + ":tcp --fit-nics 2 --nodes 4 -o " + out,
       "--fit-nics is the NICs of an N x G --inter run, fitted given --intra"},
  };
  for (auto& c : bad) {
    auto r = tool(c.args);
    INFO(c.args << "\n" << r.text);
    CHECK(r.rc == 2);
    CHECK(lines(r.text) == 1);
    CHECK(r.text.rfind("fabricbench-model: error: ", 0) == 0);
    CHECK(has(r.text, c.expect));
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("fabricbench-model validate and project take an N x G --inter run given --intra", "[tool][nxg]") {
  const std::string out = (fs::temp_directory_path() / ("fb_nxgv_" + std::to_string(::getpid()))).string();
  const std::string L = kRes + "20261202-labu-200mbit-";
  auto v = tool("validate --inter " + L + "3x2 --intra " + L + "1x2 --check " + L + "4x1 --check " + L +
                "4x2 --series tcp --no-plots -o " + out);
  INFO(v.text);
  CHECK(v.rc == 0);
  // AllReduce: the 1 x 2 tcp AllReduce is too noisy to fit, so nothing to take off the 3 x 2 run's times.
  CHECK(has(v.text, "20261202-labu-200mbit-4x1: allreduce tcp/tcp eth0 10.231.0.11 [out] 4 ranks x 4 nodes: not "
                    "predicted: the inter fit input 20261202-labu-200mbit-3x2: allreduce"));
  CHECK(has(v.text, "its inter-node hop needs a usable intra-node fit"));
  CHECK(has(v.text, "20261202-labu-200mbit-4x1          allgather     tcp  4 x 1  max|err|   1.6%  median   1.4%"));
  CHECK(has(v.text, "20261202-labu-200mbit-4x2          reducescatter tcp  4 x 2  max|err|   1.0%  median   0.1%"));
  CHECK(has(fbtest::slurp(out + "/validation.md"), "- inter-node input fitted as the inter-node hop of 3 nodes x 2"));
  fs::remove_all(out);
  // The 3 x 2 run checked against itself: its recursive-halving rows (6 ranks, a fold) are not predicted, as fit
  // leaves them out; its other rows are.
  auto self = tool("validate --inter " + L + "3x2 --intra " + L + "1x2 --check " + L + "3x2 --series tcp --no-plots -o " + out);
  INFO(self.text);
  CHECK(self.rc == 0);
  const std::string fold = "recursive-halving measured";
  std::size_t nFold = 0, nNot = 0;
  for (std::size_t at = 0; (at = self.text.find(fold, at)) != std::string::npos; at += fold.size()) {
    ++nFold;
    const auto eol = self.text.find('\n', at);
    if (self.text.substr(at, eol - at).find("not predicted: the phases do not follow the fold") != std::string::npos) ++nNot;
  }
  CHECK(nFold >= 4);
  CHECK(nNot == nFold);
  fs::remove_all(out);
  auto w = tool("validate --inter " + L + "3x2 --check " + L + "4x1 --series tcp --no-plots -o " + out);
  CHECK(w.rc == 2);
  CHECK(has(w.text, "not predicted: 20261202-labu-200mbit-3x2: allgather tcp/tcp eth0 10.231.0.11 [out] 6 ranks x 3 "
                    "nodes: 6 ranks on 3 nodes mixes intra- and inter-node hops: give the intra-node link (--intra"));
  CHECK_FALSE(fs::exists(out));
  auto p = tool("project --inter lab=" + L + "3x2:tcp --intra " + L + "1x2:tcp --coll allgather --nodes 4 --gpus 1 "
                "--sizes 64M --no-plots -o " + out);
  INFO(p.text);
  CHECK(p.rc == 0);
  // 4 x 1 ring AllGather of 64 MiB: 3 hops of 16 MiB at the fitted 0.02425 GB/s (alpha 0) = 2.075 s.
  CHECK(has(p.text, "| lab | 4 x 1 | 64 MiB | ring | 2.075 s |"));
  CHECK(has(p.text, "inter-node hop of 3 nodes x 2 ranks, 1 NIC(s) per node"));
  fs::remove_all(out);
}
#endif

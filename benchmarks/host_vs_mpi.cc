// host_vs_mpi: the host baseline (tcp, or verbs) against Open MPI's own collectives, interleaved
// point by point so both see the same machine load (a benchmark, not a test; driven by
// benchmarks/host_vs_mpi.sh, which launches it with `mpirun --mca btl tcp,self`).
//
// For every collective and size: prepare both implementations, check both element by element
// (wrong elements are printed; a wrong element fails the run), warm up, pick an operation count
// per batch from a timed probe (about --batch-ms per batch), then --rounds rounds; a round is
// --pairs batches of each implementation, alternating (T M, M T, ...), and gives each its best
// batch (and, in extra columns, its median batch); where one operation takes --long-ms or more, a
// round is one batch of each. Time per op of a batch = max over ranks of each rank's
// batch time / ops, as fabricbench's Runner measures it. The point's times are the medians over the rounds.
// Output (rank 0, one line per point, whitespace separated, after a '#' header):
//   np coll bytes algo ops tcp_us×rounds mpi_us×rounds tcp_us mpi_us ratio
//   tcp_us_medbatch mpi_us_medbatch ratio_medbatch wrong_tcp wrong_mpi
// tcp_us×rounds = each round's best batch; tcp_us = their median; ratio = tcp_us / mpi_us;
// the *_medbatch columns use each round's median batch instead of its best (load shows there).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "app/backends.h"
#include "app/measure.h"
#include "bootstrap/mpi_bootstrap.h"
#include "collectives/collective.h"
#include "core/error.h"
#include "core/stats.h"
#include "core/units.h"
#include "model/host_choice.h"
#include "report/run_folder.h"
#include "report/result_sink.h"

using namespace fb;

namespace {
std::string loadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}
using fb::stats::median;
}  // namespace

int main(int argc, char** argv) {
  fb::prepareMpiInit();  // FB_PROGRESS=block/yield: Open MPI yields too
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    MpiBootstrap bs;
    try {
      std::string transport = "tcp", minB = "8", maxB = "64M", fingerprintFile;
      std::vector<std::string> collNames{"all"};
      double factor = 2, batchMs = 3, longMs = 100;
      int rounds = 3, pairs = 9, maxOps = 1000;
      TransportOptions topt;
      CLI::App app("host baseline vs MPI, interleaved");
      app.add_option("--transport", transport, "tcp or verbs")->capture_default_str();
      app.add_option("--collective", collNames, "allreduce,allgather,reducescatter,p2pring or all")->delimiter(',');
      app.add_option("-b,--minbytes", minB)->capture_default_str();
      app.add_option("-e,--maxbytes", maxB)->capture_default_str();
      app.add_option("-f,--stepfactor", factor)->capture_default_str();
      app.add_option("--rounds", rounds, "rounds per point (each gives one time per implementation)")->capture_default_str();
      app.add_option("--pairs", pairs, "alternating batches of each implementation per round")->capture_default_str();
      app.add_option("--batch-ms", batchMs, "about this long per batch (at least one operation)")->capture_default_str();
      app.add_option("--long-ms", longMs, "an operation this long or longer: one batch of one operation per round")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
      app.add_option("--max-ops", maxOps, "at most this many operations per batch")->capture_default_str();
      app.add_option("--tcp-if", topt.tcpInterface, "tcp: interface");
      app.add_option("--fingerprint", fingerprintFile, "write the job's fingerprint (every host, as run.json's) to this file");
      try {
        app.parse(argc, argv);
      } catch (const CLI::ParseError& e) {
        if (bs.rank() == 0) app.exit(e);
        MPI_Finalize();
        return e.get_exit_code() == 0 ? 0 : 2;
      }
      std::vector<CollKind> kinds;
      for (auto& c : collNames) {
        if (c == "all") {
          kinds = allCollKinds();
          break;
        }
        auto k = parseCollKind(c);
        if (!k) throw ConfigError("unknown collective '" + c + "'");
        kinds.push_back(*k);
      }
      auto sizes = sizeSweep(parseSize(minB), parseSize(maxB), factor, 0);
      if (!fingerprintFile.empty()) {
        // Every rank's view (hosts, NICs, kernel, MPI, git revision), merged as fabricbench's run.json has it.
        auto fps = gatherFingerprints(bs, Options{});
        auto hosts = bs.hostnames();
        if (bs.rank() == 0) writeFileAtomic(fingerprintFile, runFingerprint(fps, hosts).dump(2) + "\n");
      }
      std::shared_ptr<Transport> t = openTransport(transport, bs, topt);
      const int n = bs.size();
      model::HostLinks links;
      auto ranker = model::hostRankerFor(*t, bs, &links);
      auto dl = [] { return Deadline::in(std::chrono::seconds(120)); };
      std::string progress = "?";
      for (auto& [key, v] : t->path().details)
        if (key == "progress") progress = v;
      if (bs.rank() == 0) {
        fmt::print("# progress: {}\n", progress);
        fmt::print("# model links: {}\n", model::describe(links));
        fmt::print("# host_vs_mpi np={} transport={} path='{}' rounds={} pairs={} batch_ms={} long_ms={} load(start)={}\n", n,
                   transport, t->path().label, rounds, pairs, batchMs, longMs, loadAvg());
        fmt::print("# np coll bytes algo ops {} {} tcp_us mpi_us ratio tcp_us_medbatch mpi_us_medbatch ratio_medbatch wrong_tcp wrong_mpi\n",
                   fmt::format("tcp_us*{}", rounds), fmt::format("mpi_us*{}", rounds));
        std::fflush(stdout);
      }
      std::int64_t wrongAll = 0;
      for (CollKind k : kinds) {
        auto host = makeRingCollective(k, t, nullptr, ranker);
        auto mpi = makeMpiCollective(k);
        for (std::size_t bytes : sizes) {
          CollShape shape = makeShape(k, DataType::kFloat32, bytes, n, false);
          if (shape.bytes == 0) continue;
          host->prepare(shape);
          mpi->prepare(shape);
          // A barrier between the two stacks everywhere: a rank that has left an Open MPI
          // collective may still owe the others progress on it (MPI progresses only inside MPI
          // calls), and a rank then waiting in tcp's poll() would never give it: all four ranks
          // stuck, three in tcp and one in MPI_Allgather, once in a full sweep (np 4, 64 MiB).
          bs.barrier();
          std::int64_t wt = bs.allReduceSum(host->check(3, dl()));
          bs.barrier();
          std::int64_t wm = bs.allReduceSum(mpi->check(3, dl()));
          bs.barrier();
          wrongAll += wt + wm;
          // Warm-up: one operation of each. A point whose operation takes --long-ms or more (large sizes
          // on a slow link) uses it as the probe, and a round is one batch of each (one operation unless
          // --batch-ms exceeds --long-ms; that long a batch averages out a lost time slice). Else one
          // more warm-up each and three probes.
          double warm = bs.allReduceMax(host->runBatch(1, dl()));
          bs.barrier();
          warm = std::max(warm, bs.allReduceMax(mpi->runBatch(1, dl())));
          bs.barrier();
          const bool longPoint = warm >= longMs * 1e-3;
          double probe = warm;
          if (!longPoint) {
            host->runBatch(1, dl());
            bs.barrier();
            mpi->runBatch(1, dl());
            bs.barrier();
            // Operation count per batch from the best of three single-operation probes of each.
            probe = 1e30;
            for (int i = 0; i < 3; ++i) {
              double th = host->runBatch(1, dl());
              bs.barrier();
              double tm = mpi->runBatch(1, dl());
              probe = std::min(probe, bs.allReduceMax(std::max(th, tm)));
              bs.barrier();
            }
          }
          const int pointPairs = longPoint ? 1 : pairs;
          int ops = static_cast<int>(std::clamp(batchMs * 1e-3 / std::max(probe, 1e-7), 1.0, double(maxOps)));
          // Each round: `pairs` short batches of each implementation, alternating (T M, M T, ...);
          // the round's time of each = the best of its batches (a batch that lost a core to
          // another process says nothing about either implementation), and, shown alongside, the
          // median of its batches. The point's times = medians over the rounds.
          std::vector<double> tt, tm, ttMed, tmMed;
          for (int r = 0; r < rounds; ++r) {
            std::vector<double> pt, pm;
            for (int i = 0; i < pointPairs; ++i) {
              for (int which = 0; which < 2; ++which) {
                bool hostTurn = (which == 0) == ((r * pointPairs + i) % 2 == 0);
                bs.barrier();
                double mine = hostTurn ? host->runBatch(ops, dl()) : mpi->runBatch(ops, dl());
                (hostTurn ? pt : pm).push_back(bs.allReduceMax(mine) / ops * 1e6);
              }
            }
            tt.push_back(*std::min_element(pt.begin(), pt.end()));
            tm.push_back(*std::min_element(pm.begin(), pm.end()));
            ttMed.push_back(median(pt));
            tmMed.push_back(median(pm));
          }
          if (bs.rank() == 0) {
            std::string algo = host->path().label;
            for (auto& [key, v] : host->path().details)
              if (key == "algorithm") algo = v;
            std::string ts, ms;
            for (double v : tt) ts += fmt::format("{:.3f} ", v);
            for (double v : tm) ms += fmt::format("{:.3f} ", v);
            double a = median(tt), b = median(tm);
            double am = median(ttMed), bm = median(tmMed);
            fmt::print("{} {} {} {} {} {}{}{:.3f} {:.3f} {:.4f} {:.3f} {:.3f} {:.4f} {} {}\n", n, collName(k), shape.bytes,
                       algo.empty() ? "-" : algo, ops, ts, ms, a, b, a / b, am, bm, am / bm, wt, wm);
            std::fflush(stdout);
          }
        }
      }
      if (bs.rank() == 0) fmt::print("# load(end)={} wrong={}\n", loadAvg(), wrongAll);
      if (wrongAll) rc = 1;
    } catch (const ConfigError& e) {
      if (bs.rank() == 0) std::fprintf(stderr, "host_vs_mpi: error: %s\n", e.what());
      rc = 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "host_vs_mpi: %s\n", e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  MPI_Finalize();
  return rc;
}

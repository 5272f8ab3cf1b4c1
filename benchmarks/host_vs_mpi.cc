// host_vs_mpi: the host baseline (tcp, or verbs) against Open MPI's own collectives, interleaved
// point by point so both see the same machine load (a benchmark, not a test; driven by
// benchmarks/host_vs_mpi.sh, which launches it with `mpirun --mca btl tcp,self`).
//
// For every collective and size: prepare both implementations, check both element by element
// (wrong elements are printed; a wrong element fails the run), warm up, pick an operation count
// per batch from a timed probe (about --target-ms per batch), then --rounds rounds, each one
// timed batch of each implementation (the order alternates: T M, M T, T M, ...). Time per op =
// max over ranks of each rank's batch / ops, as fabricbench's Runner measures it.
// Output (rank 0, one line per point, whitespace separated, after a '#' header):
//   np coll bytes algo ops tcp_us... mpi_us... tcp_median_us mpi_median_us ratio wrong_tcp wrong_mpi
// where ratio = median tcp time / median mpi time.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bootstrap/mpi_bootstrap.h"
#include "collectives/collective.h"
#include "core/error.h"
#include "core/units.h"

using namespace fb;

namespace {
std::string loadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    MpiBootstrap bs;
    try {
      std::string transport = "tcp", minB = "8", maxB = "64M";
      std::vector<std::string> collNames{"all"};
      double factor = 2, targetMs = 30;
      int rounds = 3, maxOps = 1000;
      TransportOptions topt;
      CLI::App app("host baseline vs MPI, interleaved");
      app.add_option("--transport", transport, "tcp or verbs")->capture_default_str();
      app.add_option("--collective", collNames, "allreduce,allgather,reducescatter,p2pring or all")->delimiter(',');
      app.add_option("-b,--minbytes", minB)->capture_default_str();
      app.add_option("-e,--maxbytes", maxB)->capture_default_str();
      app.add_option("-f,--stepfactor", factor)->capture_default_str();
      app.add_option("--rounds", rounds, "timed batches of each implementation per point")->capture_default_str();
      app.add_option("--target-ms", targetMs, "about this long per timed batch")->capture_default_str();
      app.add_option("--max-ops", maxOps, "at most this many operations per batch")->capture_default_str();
      app.add_option("--tcp-if", topt.tcpInterface, "tcp: interface");
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
      std::shared_ptr<Transport> t = makeTransport(transport, bs, topt);
      const int n = bs.size();
      auto dl = [] { return Deadline::in(std::chrono::seconds(120)); };
      if (bs.rank() == 0) {
        fmt::print("# host_vs_mpi np={} transport={} path='{}' rounds={} load(start)={}\n", n, transport,
                   t->path().label, rounds, loadAvg());
        fmt::print("# np coll bytes algo ops {} {} tcp_med_us mpi_med_us ratio wrong_tcp wrong_mpi\n",
                   fmt::format("tcp_us*{}", rounds), fmt::format("mpi_us*{}", rounds));
        std::fflush(stdout);
      }
      std::int64_t wrongAll = 0;
      for (CollKind k : kinds) {
        auto host = makeRingCollective(k, t);
        auto mpi = makeMpiCollective(k);
        for (std::size_t bytes : sizes) {
          CollShape shape = makeShape(k, DataType::kFloat32, bytes, n, false);
          if (shape.bytes == 0) continue;
          host->prepare(shape);
          mpi->prepare(shape);
          std::int64_t wt = bs.allReduceSum(host->check(3, dl()));
          std::int64_t wm = bs.allReduceSum(mpi->check(3, dl()));
          wrongAll += wt + wm;
          host->runBatch(2, dl());
          mpi->runBatch(2, dl());
          bs.barrier();
          double probe = bs.allReduceMax(std::max(host->runBatch(1, dl()), mpi->runBatch(1, dl())));
          int ops = static_cast<int>(std::clamp(targetMs * 1e-3 / std::max(probe, 1e-7), 1.0, double(maxOps)));
          std::vector<double> tt, tm;
          for (int r = 0; r < rounds; ++r) {
            for (int which = 0; which < 2; ++which) {
              bool hostTurn = (which == 0) == (r % 2 == 0);
              bs.barrier();
              double mine = hostTurn ? host->runBatch(ops, dl()) : mpi->runBatch(ops, dl());
              double us = bs.allReduceMax(mine) / ops * 1e6;
              (hostTurn ? tt : tm).push_back(us);
            }
          }
          if (bs.rank() == 0) {
            std::string algo = host->path().label;
            for (auto& [key, v] : host->path().details)
              if (key == "algorithm") algo = v;
            std::string ts, ms;
            for (double v : tt) ts += fmt::format("{:.3f} ", v);
            for (double v : tm) ms += fmt::format("{:.3f} ", v);
            double a = median(tt), b = median(tm);
            fmt::print("{} {} {} {} {} {}{}{:.3f} {:.3f} {:.4f} {} {}\n", n, collName(k), shape.bytes,
                       algo.empty() ? "-" : algo, ops, ts, ms, a, b, a / b, wt, wm);
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

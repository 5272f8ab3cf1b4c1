// tcp_vs_mpi: informational comparison (not a ctest) of the ring AllReduce over the tcp
// transport against MPI_Allreduce, interleaved batch by batch so both see the same machine load.
//   mpirun -np 2 --mca btl tcp,self tcp_vs_mpi [bytes=64M] [iters=5] [reps=7] [--tcp-if lo]
// Prints, per implementation, the median and best time per op (max over ranks) and busbw.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/mpi_bootstrap.h"
#include "collectives/collective.h"
#include "core/error.h"
#include "transport/tcp/tcp_transport.h"
#include "core/units.h"

using namespace fb;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  try {
    std::vector<std::string> pos;
    TransportOptions topt;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--tcp-if") == 0 && i + 1 < argc)
        topt.tcpInterface = argv[++i];
      else
        pos.push_back(argv[i]);
    }
    std::size_t bytes = pos.size() > 0 ? parseSize(pos[0]) : 64u << 20;
    int iters = pos.size() > 1 ? std::stoi(pos[1]) : 5;
    int reps = pos.size() > 2 ? std::stoi(pos[2]) : 7;
    MpiBootstrap bs;
    std::shared_ptr<Transport> t = tcp::createTransport(bs, topt);
    CollShape shape = makeShape(CollKind::kAllReduce, DataType::kFloat32, bytes, bs.size(), false);
    auto tcp = makeRingCollective(CollKind::kAllReduce, t);
    auto mpi = makeMpiCollective(CollKind::kAllReduce);
    tcp->prepare(shape);
    mpi->prepare(shape);
    auto dl = [] { return Deadline::in(std::chrono::seconds(120)); };
    std::int64_t wrongTcp = bs.allReduceSum(tcp->check(3, dl()));
    std::int64_t wrongMpi = bs.allReduceSum(mpi->check(3, dl()));
    tcp->runBatch(1, dl());
    mpi->runBatch(1, dl());
    std::vector<double> tt, tm;
    for (int r = 0; r < reps; ++r) {
      bs.barrier();
      tt.push_back(bs.allReduceMax(tcp->runBatch(iters, dl())) / iters);
      bs.barrier();
      tm.push_back(bs.allReduceMax(mpi->runBatch(iters, dl())) / iters);
    }
    if (bs.rank() == 0) {
      double factor = 2.0 * (bs.size() - 1) / bs.size();
      auto show = [&](const char* name, std::vector<double> v, std::int64_t wrong) {
        std::sort(v.begin(), v.end());
        double med = v[v.size() / 2], best = v[0];
        std::printf("%-28s %8s  median %9.2f ms  busbw %6.3f GB/s   best %9.2f ms  busbw %6.3f GB/s  #wrong %lld\n",
                    name, formatSize(bytes).c_str(), med * 1e3, bytes / med / kGB * factor, best * 1e3,
                    bytes / best / kGB * factor, static_cast<long long>(wrong));
      };
      std::printf("np=%d, %d ops per batch, %d interleaved batches; path: %s\n", bs.size(), iters, reps,
                  t->path().label.c_str());
      show("ring allreduce over tcp", tt, wrongTcp);
      show("MPI_Allreduce", tm, wrongMpi);
      std::sort(tt.begin(), tt.end());
      std::sort(tm.begin(), tm.end());
      std::printf("tcp/mpi speed ratio (median): %.2fx\n", tm[tm.size() / 2] / tt[tt.size() / 2]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}

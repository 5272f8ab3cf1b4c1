// fabricbench-verbs: raw RDMA WRITE bandwidth and latency between rank pairs, perftest style,
// so the verbs rows can be held against what the NIC gives (ib_write_bw / ib_write_lat).
//
//   mpirun -np 2 fabricbench-verbs --test bw  --sizes 64K -n 5000     (like ib_write_bw)
//   mpirun -np 2 fabricbench-verbs --test lat --sizes 2   -n 1000     (like ib_write_lat)
//
// Three ways to start the ranks (the loops and numbers are the same in all three):
//   mpirun -np N fabricbench-verbs ...            N ranks = N/2 pairs, MPI as the control plane
//   fabricbench-verbs --server ... / --peer HOST  two plain processes that meet over one TCP
//                                                 connection, as perftest's server and client do
//   fabricbench-verbs --threads 2 ...             the ranks as threads of one process
// The last two start no MPI runtime at all (no mpirun/orted processes, no MPI helper threads
// in the ranks), so nothing but the two ranks and the kernel compete for the CPUs.
//
// Ranks pair up (0,1), (2,3), ...; the even rank of a pair drives. Pairs run at the same time.
//  bw : the driver keeps --tx-depth WRITEs in flight, one signaled every --cq-mod; time from
//       the first post to the last completion (perftest's definition); BW = bytes*iters/time.
//       Afterwards the passive side checks every byte of what arrived (wrong bytes counted).
//  lat: ping-pong of WRITEs (inline when small); each side spins on the last byte of its
//       receive buffer, exactly like ib_write_lat; latency = half the round trip; median
//       (perftest's t_typical), average, min, max, 99th percentile. Time stamps from the CPU's
//       time-stamp counter like perftest (--timer), send and receive areas a page apart.
// Numbers: MB/s as perftest prints it (MiB/s = 2^20 B/s), GB/s = 1e9 B/s, Mpps.
// Exit: 0 ok, 1 wrong bytes or a failure, 2 bad input, 77 no RDMA device (skipped).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string_view>
#include <vector>

#include "app/shutdown.h"
#include "bootstrap/mpi_bootstrap.h"
#include "bootstrap/socket_pair_bootstrap.h"
#include "bootstrap/thread_bootstrap.h"
#include "core/error.h"
#include "verbs_pairs.h"

namespace fb::verbs {
namespace {

void addOptions(CLI::App& app, Args& a) {
  app.add_option("--test", a.test, "bw, lat or both");
  app.add_option("-s,--sizes", a.sizes, "message sizes (e.g. 2,64K); default: bw 64K, lat 2")->delimiter(',');
  app.add_option("-n,--iters", a.iters, "iterations (default: bw 5000, lat 1000, like perftest)");
  app.add_option("--tx-depth", a.txDepth, "bw: WRITEs in flight (default 128, like perftest)");
  app.add_option("--cq-mod", a.cqMod, "bw: one signaled WRITE every N (default 100, like perftest)");
  app.add_option("--warmup", a.warmup, "bw: untimed WRITEs before each size (default 0, like perftest)");
  app.add_option("--ib-dev", a.t.verbsDevice, "RDMA device (default: first with an ACTIVE port)");
  app.add_option("--ib-port", a.t.verbsPort, "port (default: first ACTIVE)");
  app.add_option("--gid-index", a.t.gidIndex, "GID index (default: a RoCEv2 GID bound to a routable IPv4)");
  app.add_flag("!--no-check", a.check, "skip the byte-by-byte check of what arrived");
  app.add_option("--timer", a.timer,
                 "lat time stamps: tsc (rdtsc like perftest's get_cycles, its rate measured against the monotonic "
                 "clock over the same loop; default on x86) or steady (clock_gettime: in a VM whose clocksource is "
                 "HPET one read costs microseconds)");
  app.add_flag("--packed", a.packed,
               "put the receive area right behind the send area (default: a page apart, as perftest)");
  app.add_option("--threads", a.threads, "run N ranks as threads of this process (no MPI)");
  app.add_flag("--server", a.server, "two processes without MPI: wait for the --peer client (rank 1)");
  app.add_option("--peer", a.peer, "two processes without MPI: connect to the --server on HOST (rank 0, prints)");
  app.add_option("--port", a.port, "TCP port of --server/--peer (default 18520)");
  app.add_option("--dump-samples", a.dump, "lat: append every half round trip (us, in order) to FILE (rank 0)");
  app.add_option("--timeout", a.timeoutS, "seconds to wait for a peer in the control plane (default 120)");
  app.add_option("--results-dir", a.resultsDir, "parent folder of the run folders (default results)");
  app.add_option("--run-id", a.runId, "rank 0 writes <results-dir>/<run-id>/: table.csv, run.json (with the fingerprint), "
                                      "report.md (default: <job>.<step> under Slurm, else UTC time and host; -verbs)");
  app.add_flag("--no-files", a.noFiles, "print only, write no result folder");
}

// mpirun (or Slurm) starts the ranks unless the command line asks for threads or a TCP pair;
// decided before MPI_Init so those modes never start an MPI runtime.
bool wantsMpi(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view v(argv[i]);
    if (v == "--server" || v == "--peer" || v.starts_with("--peer=") || v == "--threads" || v.starts_with("--threads="))
      return false;
  }
  return true;
}

int mainMpi(int argc, char** argv) {
  fb::prepareMpiInit();  // FB_PROGRESS=block/yield: Open MPI yields too
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    MpiBootstrap bs;
    setIdentity(bs.hostname(), bs.rank());
    Args a;
    CLI::App app{"fabricbench-verbs: RDMA WRITE bandwidth / latency between rank pairs (perftest style)"};
    addOptions(app, a);
    try {
      app.parse(argc, argv);
      rc = run(bs, a, "mpirun", argc, argv, mpiLibraryVersion());
    } catch (const CLI::ParseError& e) {
      rc = bs.rank() == 0 ? app.exit(e) : (e.get_exit_code() ? 2 : 0);
      if (rc != 0) rc = 2;
    } catch (const ConfigError& e) {
      if (bs.rank() == 0) ::fb::printLine("fabricbench-verbs: error: ", e.what());
      rc = 2;
    } catch (const std::exception& e) {
      ::fb::printLine("fabricbench-verbs: ", e.what());
      bs.abortJob(1);
    }
  }
  MPI_Finalize();
  return rc;
}

int mainNoMpi(int argc, char** argv) {
  Args a;
  CLI::App app{"fabricbench-verbs: RDMA WRITE bandwidth / latency between rank pairs (perftest style)"};
  addOptions(app, a);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc ? 2 : 0;
  }
  const bool socket = a.server || !a.peer.empty();
  try {
    if (socket && a.threads) throw ConfigError("--threads cannot go with --server/--peer: choose one way to start");
    if (a.server && !a.peer.empty()) throw ConfigError("--server and --peer exclude each other (the server waits, the client names it)");
    if (!socket && a.threads < 1) throw ConfigError("--threads must be at least 2 (an even number)");
    std::vector<std::size_t> sizes;
    validate(a, socket ? 2 : a.threads, sizes);  // bad input ends here, before any connection
  } catch (const ConfigError& e) {
    ::fb::printLine("fabricbench-verbs: error: ", e.what());
    return 2;
  } catch (const UnavailableError& e) {
    std::printf("SKIPPED: verbs unavailable: %s\n", e.what());
    return 77;
  }
  const auto timeout = std::chrono::milliseconds(std::int64_t(a.timeoutS) * 1000);
  try {
    if (socket) {
      SocketPairBootstrap bs(a.peer, a.port, timeout);
      setIdentity(bs.hostname(), bs.rank());
      return run(bs, a, a.server ? "tcp pair, this is the server" : "tcp pair, this is the client", argc, argv);
    }
    std::vector<int> rcs(std::size_t(a.threads), 0);
    runRanks(a.threads, [&](Bootstrap& bs) { rcs[std::size_t(bs.rank())] = run(bs, a, "threads of one process", argc, argv); },
             timeout);
    return *std::max_element(rcs.begin(), rcs.end());
  } catch (const ConfigError& e) {
    ::fb::printLine("fabricbench-verbs: error: ", e.what());
    return 2;
  } catch (const std::exception& e) {
    ::fb::printLine("fabricbench-verbs: ", e.what());
    return 1;
  }
}

}  // namespace
}  // namespace fb::verbs

int main(int argc, char** argv) {
  // Signals first (every thread MPI or --threads starts inherits the mask): rank 0 finalises
  // run.json and report.md on SIGTERM/SIGINT/SIGHUP, checkpoints them on SIGCONT (RunRecorder).
  fb::shutdown::installSignalThread();
  return fb::verbs::wantsMpi(argc, argv) ? fb::verbs::mainMpi(argc, argv) : fb::verbs::mainNoMpi(argc, argv);
}

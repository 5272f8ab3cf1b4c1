// fabricbench: the one Google Benchmark executable, with our own main over lib/app.
//   MPI_Init → the options, agreed by every rank → --list | --doctor | --accept-baseline |
//   --accept | the run: claim the result folder → plan (backends × collectives × dtypes ×
//   placements × sizes) → fingerprint → begin the files → measure backend by backend → verdict.
// Each benchmark is ONE Google Benchmark iteration = one Runner point (warm-up, timed batch of -n
// ops, max over ranks, verification), fed to SetIterationTime per operation.
// Google Benchmark under MPI, the three traps: the iteration count is fixed (1 per benchmark,
// -n ops inside), random interleaving is refused, only rank 0 reports or writes files (its
// --benchmark_* flags are read by fabricbench itself: app/gbench_flags.h).
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "app/accept_command.h"
#include "app/doctor_command.h"
#include "app/measure.h"
#include "app/phases.h"
#include "app/run_recorder.h"
#include "app/shutdown.h"
#include "bootstrap/mpi_bootstrap.h"
#include "core/error.h"
#include "report/run_folder.h"

namespace fb {
namespace {

int realMain(int argc, char** argv, MpiBootstrap& bs, RunRecorder& recorder, int startupTimeout) {
  // 1. The options, the same on every rank (else one line and exit 2 everywhere).
  AgreedOptions agreed = agreeOnOptions(bs, std::vector<std::string>(argv + 1, argv + argc),
                                        std::chrono::seconds(startupTimeout));
  if (!agreed.options) return agreed.exitCode;
  Options& o = *agreed.options;
  const std::string commandLine = joinArgs(argc, argv);

  // 2. The command.
  if (o.list) {
    printList(bs, o);
    return 0;
  }
  if (o.doctor) {  // lib/app/doctor_command.cc, lib/doctor
    std::string id = onRankZero(bs, "doctor run id", [&] {
      return o.runId.empty() ? "doctor-" + defaultRunId(bs.hostname()) : o.runId;
    });
    return runDoctorCommand(bs, o, id, commandLine);
  }
  // --benchmark_list_tests lists the points of the normal run (--accept's collectives phase) and
  // starts nothing else.
  if (!o.acc.baselineDir.empty() && !o.gb.listTests) {  // lib/app/accept_command.cc: local, rank 0 writes
    int rc = bs.rank() == 0 ? writeBaseline(o) : 0;
    return static_cast<int>(bs.allReduceMax(rc));
  }
  if (o.accept && !o.gb.listTests)  // the doctor, the pair test, then this run's measurements as the collectives phase
    return runAcceptance(bs, o, commandLine,
                         [&](Options& c) { return runMeasurements(bs, c, commandLine, argv[0], recorder); });
  return runMeasurements(bs, o, commandLine, argv[0], recorder);
}

}  // namespace
}  // namespace fb

int main(int argc, char** argv) {
  // Signals first (every thread MPI starts inherits the mask), then a watchdog over MPI_Init and
  // the bootstrap's first collective: a rank stuck there (a stopped peer) ends with one line
  // within --timeout instead of hanging without a word.
  fb::shutdown::installSignalThread();
  const int startupTimeout = fb::shutdown::timeoutFromArgs(argc, argv, 45);
  fb::shutdown::armStartupWatchdog(std::chrono::seconds(startupTimeout));
  fb::prepareMpiInit();  // FB_PROGRESS=block/yield: Open MPI yields too
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    fb::MpiBootstrap bs;  // collective: pids and hosts of every rank
    fb::shutdown::disarmStartupWatchdog();
    fb::setIdentity(bs.hostname(), bs.rank());
    fb::RunRecorder recorder;
    // SIGCONT checkpoints run.json and report.md; SIGTERM/SIGINT/SIGHUP finalise them (rank 0).
    recorder.handleSignals(bs, "fabricbench");
    // Google Benchmark gets no flags: fabricbench reads --benchmark_* itself (gbench_flags.h), so
    // that only rank 0 reports and the outputs hold per-operation real time and bytes_per_second.
    std::vector<char*> gbArgs{argv[0]};
    int gbArgc = 1;
    benchmark::Initialize(&gbArgc, gbArgs.data());
    try {
      rc = fb::realMain(argc, argv, bs, recorder, startupTimeout);
    } catch (const fb::ConfigError& e) {
      if (bs.rank() == 0) ::fb::printLine("fabricbench: error: ", e.what());
      rc = 2;
    } catch (const std::exception& e) {
      fb::failJob(bs, recorder.begun ? &recorder : nullptr, e);
    }
    recorder.stopHandlingSignals();
    benchmark::Shutdown();
  }
  // Tests only (tests/e2e/mpi/faults.py, phase "shutdown"): a pause before shutdown, to stop a rank there.
  if (const char* p = std::getenv("FB_TEST_SHUTDOWN_PAUSE_MS"))
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(p)));
  fb::shutdown::armShutdownWatchdog(std::chrono::seconds(startupTimeout), rc);
  MPI_Finalize();
  return rc;
}

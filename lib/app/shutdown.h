// How fabricbench ends when it is not allowed to finish: signals (SIGTERM from Slurm's time limit,
// scancel or mpirun tearing a job down after a lost peer; SIGINT from Ctrl-C; SIGHUP) and a rank
// that never gets through start-up.
//
//  * installSignalThread(), first thing in main (before MPI_Init, so every thread MPI starts
//    inherits the mask): SIGTERM, SIGINT and SIGHUP are blocked in every thread and taken by one
//    thread with sigwait(). It runs the handler set with onSignal() (rank 0 finalises run.json as
//    "interrupted (signal ...)" and writes report.md of the finished rows; it may take the sinks'
//    lock for up to 0.3 s) and ends the process with 128 + the signal number.
//  * SIGCONT is a warning: Open MPI's orted ends a job with SIGCONT, then 1 s later SIGTERM and
//    at once SIGKILL (measured with 4.1.4: nothing written after its SIGTERM survives), Slurm
//    with SIGCONT + SIGTERM and SIGKILL after KillWait. The onContinue() handler writes run.json
//    and report.md as interrupted without closing anything: should the run go on (a suspended
//    job resumed), the next row rewrites run.json as "running" and the end rewrites both.
//  * armStartupWatchdog(): a rank that has not disarmed it within the time (MPI_Init and the
//    bootstrap's first collective included) prints one line naming what this host can see (a
//    rank of this job stopped, or exited) and ends with exit code 1. armShutdownWatchdog() does the
//    same for MPI_Finalize.
#pragma once
#include <chrono>
#include <functional>
#include <string>

namespace fb::shutdown {

void installSignalThread();
// The handler for a signal (called on the signal thread); replaces the previous one.
void onSignal(std::function<void(int sig)> handler);
// The handler for SIGCONT (the run goes on afterwards).
void onContinue(std::function<void()> handler);
// "SIGTERM", "SIGINT", ...
std::string signalName(int sig);

// --timeout (or -T) from the raw command line, before any parsing; `fallback` when absent or
// malformed (the parser reports that later).
int timeoutFromArgs(int argc, char** argv, int fallback);
void armStartupWatchdog(std::chrono::seconds timeout);
void disarmStartupWatchdog();
// Armed just before MPI_Finalize, which waits for every rank: if a rank is stopped or lost then,
// the same one line per host after `timeout`, and the process ends with exitCode (1 when it was
// 0, so that the launcher ends the job, the stopped rank included).
void armShutdownWatchdog(std::chrono::seconds timeout, int exitCode);

}  // namespace fb::shutdown

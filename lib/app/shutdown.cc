#include "app/shutdown.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "core/error.h"
#include "report/result_sink.h"

namespace fb::shutdown {
namespace {

std::mutex g_mu;
std::function<void(int)> g_handler;
std::function<void()> g_warning;

std::atomic<bool> g_continued{false};  // a SIGCONT arrived: the launcher may be ending the job
std::mutex g_wdMu;
std::condition_variable g_wdCv;
bool g_wdDisarmed = false;

// This process's job (launcher's namespace) and rank, from the environment the launcher set.
struct JobKey {
  std::string key;  // "" when not under a known launcher
  int rank = -1;
};

std::map<std::string, std::string> envOf(const std::string& pid) {
  std::map<std::string, std::string> env;
  std::ifstream f("/proc/" + pid + "/environ", std::ios::binary);
  std::string kv;
  while (std::getline(f, kv, '\0')) {
    auto eq = kv.find('=');
    if (eq != std::string::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

// `parent` is the process's parent pid: MPICH's hydra gives no job id, so its ranks on one host
// are known by their common parent, the hydra_pmi_proxy.
JobKey jobKeyOf(const std::map<std::string, std::string>& env, long parent) {
  auto get = [&](const char* k) {
    auto it = env.find(k);
    return it == env.end() ? std::string() : it->second;
  };
  JobKey j;
  std::string rank;
  if (!get("PMIX_NAMESPACE").empty()) {
    j.key = "pmix:" + get("PMIX_NAMESPACE");
    rank = get("PMIX_RANK");
  } else if (!get("OMPI_MCA_ess_base_jobid").empty()) {
    j.key = "ompi:" + get("OMPI_MCA_ess_base_jobid");
    rank = get("OMPI_COMM_WORLD_RANK");
  } else if (!get("SLURM_JOB_ID").empty() && !get("SLURM_PROCID").empty()) {
    j.key = "slurm:" + get("SLURM_JOB_ID") + "." + get("SLURM_STEP_ID");
    rank = get("SLURM_PROCID");
  } else if (!get("PMI_RANK").empty() && (!get("PMI_FD").empty() || !get("PMI_PORT").empty())) {
    j.key = "hydra:" + std::to_string(parent);
    rank = get("PMI_RANK");
  }
  j.rank = rank.empty() ? -1 : std::atoi(rank.c_str());
  return j;
}

// /proc/<pid>/stat after the command name: state, then the parent pid.
struct ProcStat {
  char state = '?';
  long parent = -1;
};

ProcStat procStat(const std::string& pid) {
  std::ifstream f("/proc/" + pid + "/stat");
  std::string line;
  std::getline(f, line);
  ProcStat s;
  auto close = line.rfind(')');
  if (close == std::string::npos) return s;
  std::istringstream rest(line.substr(close + 1));
  rest >> s.state >> s.parent;
  return s;
}

// `phase` names what did not finish; `after` is appended to the line; the process ends with `code`.
[[noreturn]] void watchdogFired(int seconds, const std::string& phase, const std::string& after, int code) {
  // Resumed (SIGCONT) while starting: this rank was the stopped one, or the launcher is already
  // ending the job and another rank has said why.
  if (g_continued) std::_Exit(code);
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::map<std::string, std::string> myEnv;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) myEnv.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  JobKey me = jobKeyOf(myEnv, static_cast<long>(::getppid()));
  // The other ranks of this job on this host, and their state.
  std::vector<std::string> stopped, running;
  int lowestRunning = me.rank;
  if (!me.key.empty()) {
    if (DIR* d = ::opendir("/proc")) {
      while (dirent* de = ::readdir(d)) {
        std::string pid = de->d_name;
        if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
        if (std::atol(pid.c_str()) == static_cast<long>(::getpid())) continue;
        ProcStat ps = procStat(pid);
        JobKey j = jobKeyOf(envOf(pid), ps.parent);
        if (j.key != me.key || j.rank < 0 || j.rank == me.rank) continue;
        char st = ps.state;
        std::string who = "rank " + std::to_string(j.rank) + " (pid " + pid + ")";
        if (st == 'T' || st == 't') {
          stopped.push_back(who);
        } else if (st != 'Z' && st != 'X') {
          running.push_back(std::to_string(j.rank));
          if (j.rank < lowestRunning) lowestRunning = j.rank;
        }
      }
      ::closedir(d);
    }
  }
  // One line per host: the lowest running rank here says it; the others leave quietly.
  if (lowestRunning == me.rank) {
    std::string what;
    if (!stopped.empty()) {
      for (std::size_t i = 0; i < stopped.size(); ++i) what += (i ? ", " : "") + stopped[i];
      what += (stopped.size() == 1 ? " is" : " are") + std::string(" stopped (SIGSTOP or a debugger) on ") + host;
    } else {
      what = std::string("no rank of this job on ") + host +
             " is stopped (a rank on another node is stuck or lost, or the launcher did not start every rank)";
    }
    std::string line = "fabricbench: error: " + phase + " did not finish within " + std::to_string(seconds) +
                       " s (--timeout) on rank " + (me.rank >= 0 ? std::to_string(me.rank) : std::string("?")) +
                       " (" + host + "): " + what + after + "\n";
    fb::detail::writeStderrLine(line);
  }
  // Stay a moment, so that a rank here that fires just after still sees this one running and
  // leaves the line to it. The other ranks here stay longer (the watchdog's time again): the
  // reporter's exit makes the launcher end the job, and it ends them in its usual way (SIGTERM),
  // as when one rank fails. Every rank leaving on its own at once, next to a stopped one, was seen
  // to crash Open MPI 4.1's mpirun (SIGSEGV, 1 in 20 trials at np 4) or leave it hanging (once in
  // CI, mpi_fault_suite's SIGSTOP-shutdown-np4); a launcher that does not end the job on one
  // rank's failure (srun without --kill-on-bad-exit) still sees them leave then.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  if (lowestRunning != me.rank) std::this_thread::sleep_for(std::chrono::seconds(seconds));
  std::_Exit(code);
}

}  // namespace

std::string signalName(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(sig);
  }
}

void installSignalThread() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  // SIGCONT still resumes a stopped process when blocked; blocking it only lets this thread see it.
  sigaddset(&set, SIGCONT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int sig = 0;
    for (;;) {
      if (sigwait(&set, &sig) != 0) continue;
      if (sig != SIGCONT) break;
      g_continued = true;
      std::function<void()> w;
      {
        std::lock_guard<std::mutex> lk(g_mu);
        w = g_warning;
      }
      if (w) w();
    }
    std::function<void(int)> h;
    {
      std::lock_guard<std::mutex> lk(g_mu);
      h = g_handler;
    }
    if (h) h(sig);
    // The main thread may be writing a result file meanwhile: its named temporary goes with the process.
    dropTemporariesForExit();
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(128 + sig);
  }).detach();
}

void onSignal(std::function<void(int)> handler) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_handler = std::move(handler);
}

void onContinue(std::function<void()> handler) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_warning = std::move(handler);
}

int timeoutFromArgs(int argc, char** argv, int fallback) {
  int t = fallback;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    if ((a == "--timeout" || a == "-T") && i + 1 < argc) v = argv[i + 1];
    else if (a.rfind("--timeout=", 0) == 0) v = a.substr(10);
    else continue;
    char* end = nullptr;
    long x = std::strtol(v.c_str(), &end, 10);
    if (end && *end == '\0' && x >= 1 && x <= 24 * 3600) t = static_cast<int>(x);  // last one wins
  }
  return t;
}

void armStartupWatchdog(std::chrono::seconds timeout) {
  std::thread([timeout] {
    std::unique_lock<std::mutex> lk(g_wdMu);
    if (!g_wdCv.wait_for(lk, timeout, [] { return g_wdDisarmed; }))
      watchdogFired(static_cast<int>(timeout.count()), "start-up (MPI_Init and the first exchange)", "", 1);
  }).detach();
}

void armShutdownWatchdog(std::chrono::seconds timeout, int exitCode) {
  const int code = exitCode != 0 ? exitCode : 1;
  const std::string after = exitCode == 0 ? "; the run itself had finished (its result files are complete)" : "";
  std::thread([timeout, code, after] {
    std::this_thread::sleep_for(timeout);
    watchdogFired(static_cast<int>(timeout.count()), "shutdown (MPI_Finalize)", after, code);
  }).detach();
}

void disarmStartupWatchdog() {
  {
    std::lock_guard<std::mutex> lk(g_wdMu);
    g_wdDisarmed = true;
  }
  g_wdCv.notify_all();
}

}  // namespace fb::shutdown

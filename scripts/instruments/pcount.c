// Instrument (issue 33): count the user-space instructions and cycles of a command and every thread and child
// it starts (perf_event_open, inherited), so two runs of one tool that differ only in -n give the cost of one
// operation by difference. Prints "instructions N cycles N task_clock_ns N" (a counter the machine lacks: -1).
// Build: cc -O2 -o pcount pcount.c    Use: pcount -- COMMAND ARGS...
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int open_counter(uint32_t type, uint64_t config, pid_t pid) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = type;
  a.config = config;
  a.disabled = 1;
  a.enable_on_exec = 1;  // counting starts at the exec, not in this wrapper
  a.inherit = 1;         // threads and children count too
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, 0);
}

int main(int argc, char** argv) {
  int first = 1;
  if (first < argc && strcmp(argv[first], "--") == 0) ++first;
  if (first >= argc) {
    fprintf(stderr, "usage: pcount -- COMMAND ARGS...\n");
    return 2;
  }
  int go[2];
  if (pipe(go) != 0) return 2;
  pid_t child = fork();
  if (child == 0) {  // wait until the counters are attached, then exec
    char c;
    close(go[1]);
    if (read(go[0], &c, 1) != 1) _exit(127);
    execvp(argv[first], argv + first);
    perror("exec");
    _exit(127);
  }
  close(go[0]);
  int fd[3] = {open_counter(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, child),
               open_counter(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, child),
               open_counter(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, child)};
  if (write(go[1], "x", 1) != 1) return 2;
  close(go[1]);
  int status = 0;
  waitpid(child, &status, 0);
  long long v[3];
  for (int i = 0; i < 3; ++i) {
    uint64_t x = 0;
    v[i] = fd[i] >= 0 && read(fd[i], &x, sizeof x) == (ssize_t)sizeof x ? (long long)x : -1;
  }
  fprintf(stderr, "instructions %lld cycles %lld task_clock_ns %lld\n", v[0], v[1], v[2]);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

#include "core/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/units.h"

extern char** environ;

namespace fb {

std::string findInPath(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string full = dir + "/" + name;
    struct stat st {};
    if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(full.c_str(), X_OK) == 0)
      return full;
    start = end + 1;
  }
  return "";
}

CommandResult runCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  CommandResult r;
  if (argv.empty()) {
    r.error = "empty command";
    return r;
  }
  std::string exe = findInPath(argv[0]);
  if (exe.empty()) {
    r.error = argv[0] + " not found in PATH";
    return r;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, exe.c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    r.error = "cannot start " + exe + ": " + std::strerror(rc);
    return r;
  }
  r.started = true;
  Deadline deadline = Deadline::in(timeout);
  constexpr std::size_t kMaxOut = 4u << 20;
  char buf[8192];
  bool eof = false;
  while (!eof) {
    if (deadline.expired()) {
      r.timedOut = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, deadline.msLeft());
    if (n < 0) {
      if (errno == EINTR) continue;
      r.error = std::string("poll: ") + std::strerror(errno);
      break;
    }
    if (n == 0) continue;  // loop re-checks the deadline
    ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      r.error = std::string("read: ") + std::strerror(errno);
      break;
    }
    if (got == 0) {
      eof = true;
      break;
    }
    if (r.out.size() < kMaxOut) r.out.append(buf, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  if (!eof) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (r.timedOut)
      r.error = argv[0] + " did not finish within " + std::to_string(timeout.count()) + " ms (killed)";
    return r;
  }
  // stdout closed: the child is exiting (or closed stdout and keeps running: bounded wait).
  while (true) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (deadline.expired()) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      r.timedOut = true;
      r.error = argv[0] + " did not exit within " + std::to_string(timeout.count()) + " ms (killed)";
      return r;
    }
    ::usleep(2000);
  }
  if (WIFEXITED(status)) {
    r.exitCode = WEXITSTATUS(status);
    if (r.exitCode != 0) r.error = argv[0] + " exited with status " + std::to_string(r.exitCode);
  } else if (WIFSIGNALED(status)) {
    r.error = argv[0] + " killed by signal " + std::to_string(WTERMSIG(status));
  }
  return r;
}

}  // namespace fb

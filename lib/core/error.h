// Errors for the whole library (gloo style): lib/ throws, the top level catches.
// Every message starts with "[host:rank]" once setIdentity() has been called, so a
// line printed by any rank says where it came from.
#pragma once
#include <stdexcept>
#include <string>
#include <sstream>

namespace fb {

// Set once per process after the bootstrap knows who we are; thread-safe to read.
void setIdentity(const std::string& host, int rank);
std::string identity();  // "[host:rank]" or "[host]" before the bootstrap
// The running tool's name, which starts the lines lib/ prints itself ("fabricbench-model: warning: ..."):
// set once in main(); "fabricbench" until then.
void setProgramName(const std::string& name);
std::string programName();

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};
// Bad input from the user: exit code 2, before any communication.
class ConfigError : public Error { using Error::Error; };
// A peer vanished or a socket/QP failed. peer = rank (or -1 when unknown).
class IoError : public Error {
 public:
  IoError(const std::string& what, int peer = -1) : Error(what), peer_(peer) {}
  int peer() const { return peer_; }
 private:
  int peer_;
};
class TimeoutError : public Error { using Error::Error; };
// The backend can't run on this machine (no GPU, no RDMA device...): skipped with a reason.
class UnavailableError : public Error { using Error::Error; };
class CudaError : public Error { using Error::Error; };
class NcclError : public Error { using Error::Error; };
class VerbsError : public Error { using Error::Error; };

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
std::string where(const char* file, int line);
void writeStderrLine(const std::string& line);
}  // namespace detail

// One line to stderr in a single write(2): a launcher that merges several ranks' stderr
// (mpirun, srun) can then never splice another rank's line into the middle of this one.
template <typename... Args>
void printLine(const Args&... args) {
  detail::writeStderrLine(detail::concat(args...) + "\n");
}

}  // namespace fb

#define FB_THROW(Type, ...) \
  throw Type(::fb::identity() + " " + ::fb::detail::concat(__VA_ARGS__) + ::fb::detail::where(__FILE__, __LINE__))

#define FB_ENFORCE(cond, ...) \
  do { if (!(cond)) FB_THROW(::fb::Error, "check failed: " #cond ": ", ##__VA_ARGS__); } while (0)

#define FB_ENFORCE_EQ(a, b, ...)                                                              \
  do {                                                                                        \
    const auto& fb_a_ = (a); const auto& fb_b_ = (b);                                         \
    if (!(fb_a_ == fb_b_))                                                                    \
      FB_THROW(::fb::Error, "check failed: " #a " == " #b " (", fb_a_, " vs ", fb_b_, ") ", ##__VA_ARGS__); \
  } while (0)

// -1 + errno convention (POSIX); EINTR retried by the caller's loop where it matters.
#define FB_SYSCALL_CHECK(expr, ...)                                                 \
  ([&]() { auto fb_rv_ = (expr);                                                    \
     if (fb_rv_ == -1) { int fb_e_ = errno;                                         \
       FB_THROW(::fb::IoError, #expr ": ", ::fb::detail::errnoText(fb_e_), " ", ##__VA_ARGS__); } \
     return fb_rv_; }())

namespace fb::detail { std::string errnoText(int e); }

// The machine as the inventory (inventory.h) and the doctor read it, behind one interface so a
// recorded tree can replace the machine.
//
// Machine("/") is this node: files from /sys, /proc, /dev; commands run with a time-out; the
// process environment; statvfs; getifaddrs. Machine(<dir>) is a fixture: files under <dir>, and
// what is not a file on a real machine comes from files next to it:
//   <dir>/_commands/<argv joined by '_'>   a command's stdout ("nvidia-smi_topo_-m"); absent = not installed
//   <dir>/_commands/<...>.rc                its exit code when not 0
//   <dir>/_env                              KEY=VALUE lines (the environment)
//   <dir>/_statvfs                          "<path> <total bytes> <free bytes>" lines
//   <dir>/_interfaces                       "<name> <up|down> <ipv4,...|->" lines
//   <dir>/_uid                              the user id (default 1000)
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fb::topo {

struct Command {
  bool found = false;  // the tool exists
  bool ok = false;     // ran and exited 0
  std::string out;     // stdout
  std::string error;   // why not, in words
};

struct Interface {
  std::string name;
  bool up = false;
  std::vector<std::string> ipv4;
};

class Machine {
 public:
  explicit Machine(std::string root = "/");
  bool real() const { return real_; }
  const std::string& root() const { return root_; }

  // A file's content (trailing whitespace kept), nullopt when unreadable.
  std::optional<std::string> read(const std::string& absPath) const;
  // First line, trimmed; "" when unreadable.
  std::string line(const std::string& absPath) const;
  // Raw bytes (binary files such as PCI config space).
  std::optional<std::string> readBinary(const std::string& absPath) const;
  bool exists(const std::string& absPath) const;
  // Entry names of a folder, sorted; empty when absent.
  std::vector<std::string> list(const std::string& absDir) const;
  // Where a symlink points, resolved, as an absolute path of this machine ("" when not a link).
  std::string resolve(const std::string& absPath) const;

  Command run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  std::optional<std::string> env(const std::string& name) const;
  const std::map<std::string, std::string>& environment() const { return env_; }
  // Total and free bytes of the file system holding absPath.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> fsSize(const std::string& absPath) const;
  std::vector<Interface> interfaces() const;
  unsigned uid() const;

  // Test hook: replace one environment variable (fixtures and fabricbench's FB_DOCTOR_TEST_*).
  void setEnv(const std::string& name, const std::string& value) { env_[name] = value; }

 private:
  std::string path(const std::string& abs) const;
  std::string root_;
  bool real_;
  std::map<std::string, std::string> env_;
};

}  // namespace fb::topo

#include "topology/machine.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/text.h"
#include "core/process.h"

extern char** environ;

namespace fb::topo {
namespace fs = std::filesystem;

Machine::Machine(std::string root) : root_(std::move(root)) {
  if (root_.empty()) root_ = "/";
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  real_ = root_ == "/";
  if (real_) {
    for (char** e = environ; e && *e; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) env_[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  } else if (auto t = read("/_env")) {
    std::istringstream in(*t);
    std::string l;
    while (std::getline(in, l)) {
      auto eq = l.find('=');
      if (eq != std::string::npos && l[0] != '#') env_[l.substr(0, eq)] = l.substr(eq + 1);
    }
  }
}

std::string Machine::path(const std::string& abs) const {
  if (real_) return abs;
  return root_ + (abs.empty() || abs[0] != '/' ? "/" : "") + abs;
}

std::optional<std::string> Machine::read(const std::string& absPath) const {
  std::ifstream in(path(absPath), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::optional<std::string> Machine::readBinary(const std::string& absPath) const { return read(absPath); }

std::string Machine::line(const std::string& absPath) const {
  auto t = read(absPath);
  if (!t) return "";
  std::string s = *t;
  auto nl = s.find('\n');
  if (nl != std::string::npos) s = s.substr(0, nl);
  return text::trim(s);
}

bool Machine::exists(const std::string& absPath) const {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path(absPath), ec)) && !ec;
}

std::vector<std::string> Machine::list(const std::string& absDir) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(path(absDir), ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string Machine::resolve(const std::string& absPath) const {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path(absPath), ec);
  if (ec) return "";
  std::string s = p.string();
  if (real_) return s;
  if (s.rfind(root_, 0) != 0) return "";
  std::string rel = s.substr(root_.size());
  return rel.empty() ? "/" : rel;
}

Command Machine::run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) const {
  Command c;
  if (argv.empty()) return c;
  if (real_) {
    if (findInPath(argv[0]).empty()) {
      c.error = argv[0] + " not found in PATH";
      return c;
    }
    c.found = true;
    auto r = runCommand(argv, timeout);
    c.ok = r.ok();
    c.out = r.out;
    if (!c.ok)
      c.error = r.timedOut ? "timed out after " + std::to_string(timeout.count()) + " ms"
                           : (r.error.empty() ? "exit code " + std::to_string(r.exitCode) : r.error);
    return c;
  }
  std::string name;
  for (const auto& a : argv) name += (name.empty() ? "" : "_") + a;
  for (char& ch : name)
    if (ch == '/') ch = '%';
  auto out = read("/_commands/" + name);
  if (!out) {
    c.error = argv[0] + " not found in PATH";
    return c;
  }
  c.found = true;
  c.out = *out;
  std::string rc = line("/_commands/" + name + ".rc");
  c.ok = rc.empty() || rc == "0";
  if (!c.ok) c.error = "exit code " + rc;
  return c;
}

std::optional<std::string> Machine::env(const std::string& name) const {
  auto it = env_.find(name);
  if (it == env_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> Machine::fsSize(const std::string& absPath) const {
  if (real_) {
    struct statvfs s {};
    if (::statvfs(absPath.c_str(), &s) != 0) return std::nullopt;
    return std::make_pair(std::uint64_t(s.f_blocks) * s.f_frsize, std::uint64_t(s.f_bavail) * s.f_frsize);
  }
  auto t = read("/_statvfs");
  if (!t) return std::nullopt;
  std::istringstream in(*t);
  std::string p;
  std::uint64_t total = 0, avail = 0;
  while (in >> p >> total >> avail)
    if (p == absPath) return std::make_pair(total, avail);
  return std::nullopt;
}

std::vector<Interface> Machine::interfaces() const {
  std::vector<Interface> out;
  if (real_) {
    std::map<std::string, Interface> m;
    ifaddrs* ifa = nullptr;
    if (::getifaddrs(&ifa) != 0) return out;
    for (ifaddrs* p = ifa; p; p = p->ifa_next) {
      auto& e = m[p->ifa_name];
      e.name = p->ifa_name;
      e.up = e.up || ((p->ifa_flags & IFF_UP) && (p->ifa_flags & IFF_RUNNING));
      if (p->ifa_addr && p->ifa_addr->sa_family == AF_INET) {
        char buf[INET_ADDRSTRLEN];
        auto* sin = reinterpret_cast<sockaddr_in*>(p->ifa_addr);
        if (::inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf)) e.ipv4.push_back(buf);
      }
    }
    ::freeifaddrs(ifa);
    for (auto& [k, v] : m) out.push_back(v);
    return out;
  }
  auto t = read("/_interfaces");
  if (!t) return out;
  std::istringstream in(*t);
  std::string l;
  while (std::getline(in, l)) {
    std::istringstream ls(l);
    Interface i;
    std::string st, addrs;
    if (!(ls >> i.name >> st >> addrs)) continue;
    i.up = st == "up";
    if (addrs != "-") {
      std::istringstream as(addrs);
      std::string a;
      while (std::getline(as, a, ',')) i.ipv4.push_back(a);
    }
    out.push_back(i);
  }
  return out;
}

unsigned Machine::uid() const {
  if (real_) return ::getuid();
  std::string u = line("/_uid");
  return u.empty() ? 1000u : static_cast<unsigned>(std::stoul(u));
}

}  // namespace fb::topo

// Shared test helpers: a temporary folder removed at scope exit, file reading, sample rows.
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/sample.h"

namespace fbtest {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "fb_report_test.XXXXXX").string();
    std::vector<char> buf(t.begin(), t.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    path = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string str(const std::string& rel = "") const { return rel.empty() ? path.string() : (path / rel).string(); }
};

inline std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void spit(const std::string& p, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(p).parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
}

inline fb::Sample row(const std::string& coll, const std::string& impl, const std::string& path, std::size_t bytes,
                      double timeUs, double busbw, std::int64_t wrong = 0, bool inPlace = false) {
  fb::Sample s;
  s.coll = coll;
  s.impl = impl;
  s.path = path;
  s.dtype = "float32";
  s.inPlace = inPlace;
  s.bytes = bytes;
  s.count = bytes / 4;
  s.nRanks = 4;
  s.nNodes = 1;
  s.timer = "rank-clock";
  s.iters = 20;
  s.timeUs = timeUs;
  s.algBwGBps = timeUs > 0 ? static_cast<double>(bytes) / (timeUs * 1e3) : 0;
  s.busBwGBps = busbw;
  s.wrong = wrong;
  return s;
}

}  // namespace fbtest

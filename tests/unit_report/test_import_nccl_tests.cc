// lib/report/import_nccl_tests: nccl-tests output as people publish it (every 2.x format, launcher
// prefixes, several runs a file, elided rank lists), over every real log in tests/data.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "report/import.h"

namespace fs = std::filesystem;

namespace {
const std::string kData = std::string(FB_TEST_DATA_ROOT) + "/";

std::string slurpFile(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string extra(const fb::Sample& s, const std::string& k) {
  for (auto& [key, v] : s.extra)
    if (key == k) return v;
  return "";
}
}  // namespace

TEST_CASE("dump every log (diagnostic)", "[.dump]") {
  for (const char* dir : {"public-nccl-tests", "nccl-info", "nccl-tests-formats"}) {
    if (!fs::exists(kData + dir)) continue;
    std::vector<std::string> files;
    for (auto& e : fs::directory_iterator(kData + dir))
      if (e.path().extension() == ".log") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      try {
        auto runs = fb::loadRunsAny(f);
        for (auto& r : runs) {
          auto& i = r.runJson["nccl_tests"];
          std::printf("%s | %s | %s | %dx? ranks %d nodes %d rpn %s | %s | nccl %s | tr %s | ch %s | env %s | rows %zu\n",
                      fs::path(f).filename().c_str(), r.label.c_str(), i["coll"].get<std::string>().c_str(),
                      0, i["ranks"].get<int>(), i["nodes"].get<int>(), i["ranks_per_node"].dump().c_str(),
                      i["gpu"].dump().c_str(), i["nccl_version"].dump().c_str(), i["transports"].dump().c_str(),
                      i["channels"].dump().c_str(), i["env"].dump().c_str(), r.rows.size());
        }
      } catch (const std::exception& e) {
        std::printf("%s | ERROR %s\n", fs::path(f).filename().c_str(), e.what());
      }
    }
  }
}

// What the model tests share: a file's bytes, and fabricbench-model (FB_MODEL_TOOL) run as a user runs it,
// its exit code and its stdout and stderr together.
#pragma once
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "core/process.h"

namespace fbtest {

inline std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

#ifdef FB_MODEL_TOOL
struct Out {
  int rc;
  std::string text;
};
inline Out tool(const std::string& args) {
  auto r = fb::runCommand({"sh", "-c", std::string(FB_MODEL_TOOL) + " " + args + " 2>&1"}, std::chrono::seconds(120));
  return {r.exitCode, r.out};
}
#endif

}  // namespace fbtest

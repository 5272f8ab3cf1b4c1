// Small text helpers shared by the doctor's checks (private to lib/doctor).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "doctor/doctor.h"

namespace fb::doctor::util {

std::string trim(std::string_view s);
std::vector<std::string> split(std::string_view s, char sep);  // trimmed, empty parts dropped
std::vector<std::string> lines(std::string_view s);
bool startsWith(std::string_view s, std::string_view p);
std::string join(const std::vector<std::string>& v, const std::string& sep);
std::string lower(std::string s);
// Numeric-aware version comparison: "20.31.1014" vs "20.30.1004" -> +1 / 0 / -1.
int compareVersions(const std::string& a, const std::string& b);

inline void add(NodeReport& r, std::string id, Verdict v, std::string evidence, std::string source,
                std::string fix = "") {
  r.findings.push_back({std::move(id), v, std::move(evidence), std::move(source), std::move(fix)});
}

// The NVIDIA GPUs of this node as nvidia-smi reports them.
struct Gpu {
  int index = -1;
  std::string name, busId, mig;
};
struct GpuList {
  bool tool = false;       // nvidia-smi exists
  bool ok = false;         // it answered
  std::string why;         // when not
  std::vector<Gpu> gpus;
  std::string driver;
};
GpuList gpuList(const Machine& m);
// "0000:05:00.0": a PCI address (domain:bus:device.function).
bool isBdf(const std::string& s);
// RDMA devices in /sys/class/infiniband.
std::vector<std::string> rdmaDevices(const Machine& m);

}  // namespace fb::doctor::util

// Small text helpers shared by the doctor's checks (private to lib/doctor).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "doctor/doctor.h"
#include "topology/inventory.h"

namespace fb::doctor::util {

using text::join;
using text::lines;
using text::lower;
using text::split;  // trimmed, empty parts dropped
using text::startsWith;
using text::trim;
// Numeric-aware version comparison: "20.31.1014" vs "20.30.1004" -> +1 / 0 / -1.
int compareVersions(const std::string& a, const std::string& b);

inline void add(NodeReport& r, std::string id, Verdict v, std::string evidence, std::string source,
                std::string fix = "") {
  r.findings.push_back({std::move(id), v, std::move(evidence), std::move(source), std::move(fix)});
}

// The NVIDIA GPUs of this node as the inventory reports them (NVML, else nvidia-smi).
struct Gpu {
  int index = -1;
  std::string name, busId, mig;
};
struct GpuList {
  bool nvml = false;       // NVML answered (else nvidia-smi, or nothing)
  bool tool = false;       // NVML or nvidia-smi exists
  bool ok = false;         // it answered
  std::string why;         // when not
  std::vector<Gpu> gpus;
  std::string driver;
  // How the list was read: "NVML (libnvidia-ml.so.1)" or the nvidia-smi text given.
  std::string source(const std::string& nvidiaSmi) const { return nvml ? "NVML (libnvidia-ml.so.1)" : nvidiaSmi; }
};
GpuList gpuList(const Machine& m);
// "0000:05:00.0": a PCI address (domain:bus:device.function).
bool isBdf(const std::string& s);
// RDMA devices in /sys/class/infiniband (names of topo::readRdma).
std::vector<std::string> rdmaDevices(const Machine& m);

}  // namespace fb::doctor::util

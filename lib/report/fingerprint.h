// The run fingerprint: what hardware and software produced the numbers. Each rank collects
// its own (collectLocalFingerprint), rank 0 merges them (mergeFingerprints) and flags
// differences between nodes (driver, NCCL, NIC firmware, link speed).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fb {

// This process's view: host, CPU model and count, memory, kernel, OS, NICs (name, IPv4,
// link speed Mb/s, driver, firmware when ethtool/sysfs tell), RDMA devices (sysfs), GPUs
// (nvidia-smi or /proc/driver/nvidia when present), compiler, build config, git revision,
// MPI library version, relevant environment (NCCL_*, OMPI_*, UCX_*, SLURM_*, CUDA_VISIBLE_DEVICES).
nlohmann::json collectLocalFingerprint();

// Rank 0: one entry per host (ranks on it listed), plus "differences": keys whose values
// differ between hosts (e.g. "nccl_version", "nics.eth0.speed_mbps").
nlohmann::json mergeFingerprints(const std::vector<nlohmann::json>& perRank);

}  // namespace fb

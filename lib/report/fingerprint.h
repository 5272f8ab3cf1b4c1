// The run fingerprint: what hardware and software produced the numbers. Each rank collects
// its own (collectLocalFingerprint), rank 0 merges them (mergeFingerprints) and flags
// differences between nodes (driver, NCCL, NIC firmware, link speed).
#pragma once
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace fb {

// This process's view: host, CPU model and count, memory, kernel, OS, NICs (name, IPv4,
// link speed Mb/s, driver, firmware when ethtool/sysfs tell), RDMA devices and GPUs from the
// machine inventory (lib/topology/inventory.h: GPUs from NVML, else nvidia-smi, named in
// "gpu_source" with "gpu_source_why" when NVML did not answer; /proc/driver/nvidia when present),
// compiler, build config, git revision, MPI library version, relevant environment (NCCL_*, OMPI_*,
// UCX_*, SLURM_*, CUDA_VISIBLE_DEVICES).
nlohmann::json collectLocalFingerprint();

// Rank 0: one entry per host (ranks on it listed), plus "differences": keys whose values
// differ between hosts (e.g. "nccl_version", "nics.eth0.speed_mbps").
// Input: element i is rank i's fingerprint (its "rank" field wins when present).
// Output: {"nranks", "nhosts", "hosts": [{"hostname", "ranks": [...], "fingerprint": <lowest
// rank's, without "rank">}], "differences": [{"key", "values": {host: value}}] ("(absent)" where
// a host lacks the key), "compared_keys": [...]}.
nlohmann::json mergeFingerprints(const std::vector<nlohmann::json>& perRank);

// ---- additions (report helper) ----

struct FingerprintOptions {
  // Root of the file system to read /proc, /sys and /etc from ("/" = this machine). Tests point
  // it at a fake tree; with another root, getifaddrs/uname/gethostname are not used.
  std::string root = "/";
  // Query the GPUs (NVML, else nvidia-smi), run ethtool -i and git (each under commandTimeout).
  // Tests turn this off.
  bool runCommands = true;
  std::chrono::milliseconds commandTimeout{5000};
  // Filled by the caller, who links MPI/NCCL/CUDA (this library does not): e.g. the text of
  // MPI_Get_library_version. Empty = not recorded. (A caller that sets fp["mpi_library"] itself
  // is understood too.)
  std::string mpiVersion;
  // Merged into the result last (caller's keys win): "nccl_version", "cuda_driver_version",
  // "cuda_runtime_version", "rank", "local_rank", ... Keys named like this are compared between
  // hosts by mergeFingerprints.
  nlohmann::json extra = nlohmann::json::object();
  // What the verbs backend discovered (lib/transport/verbs discover(): {"devices": [...],
  // "selected"|"error"}), or null. Merged into "rdma" (one layout: keyed by device, see
  // mergeRdmaDiscovery); the selection goes to "rdma_selection".
  nlohmann::json rdmaDiscovery;
  // Environment to record; empty = this process's environ.
  std::vector<std::pair<std::string, std::string>> env;
};

// Same as collectLocalFingerprint() with explicit options.
nlohmann::json collectLocalFingerprint(const FingerprintOptions& options);

// The environment variables worth recording: names starting with NCCL_, OMPI_, OPAL_, PMIX_, PMI_,
// UCX_, SLURM_, CUDA_, NVIDIA_, FB_, IBV_, RDMAV_, MLX5_, HCOLL_, plus LD_LIBRARY_PATH; any
// name containing TOKEN, SECRET, KEY, PASS, CRED or AUTH (any case) is dropped.
nlohmann::json filterEnvironment(const std::vector<std::pair<std::string, std::string>>& env);

// The fingerprint's "rdma" has ONE layout, keyed by device and port as sysfs is:
//   {dev: {fw_ver, hca_type, board_id, node_type, netdevs, ports: {"1": {state, phys_state, rate,
//   link_layer, active_mtu, ...}}}}
// mergeRdmaDiscovery() folds verbs discovery ({"devices": [{name, fw_ver, ports: [{port, ...}]}]})
// into it: what sysfs already gave stays, verbs adds what sysfs lacks (active/max MTU, GIDs,
// gpudirect; everything when there is no sysfs). mergeFingerprints compares rdma.<dev>.fw_ver and
// the port rate/state/link layer/MTU between hosts; a run.json written with the verbs layout
// under "rdma" is converted the same way before comparing.
nlohmann::json mergeRdmaDiscovery(nlohmann::json sysfsRdma, const nlohmann::json& discovery);

// Keys compared between hosts (dot paths; '*' matches one segment), in report order.
std::vector<std::string> comparedFingerprintKeys();
// A fingerprint flattened to dot paths ("nics.eth0.speed_mbps" -> 100000). Virtual NICs are left
// out (their names and numbers differ between hosts for no reason that matters).
std::vector<std::pair<std::string, nlohmann::json>> flattenForComparison(const nlohmann::json& fp);

// nvidia-smi --query-gpu=<nvidiaSmiQueryFields()> --format=csv,noheader,nounits -> one object
// per GPU (index, name, uuid, pci_bus_id, memory_mib, driver_version, vbios_version,
// pcie_gen_max, pcie_width_max), the objects of the fingerprint's "gpus". Lines that do not have
// the 9 fields are skipped.
std::string nvidiaSmiQueryFields();
nlohmann::json parseNvidiaSmiGpus(const std::string& csv);

// The fingerprint section of report.md and the comparison page (merged or single-rank
// fingerprint), "Nodes differ" first; fingerprint_markdown.cc.
std::string renderFingerprintMarkdown(const nlohmann::json& fingerprint, const std::string& commandLine);

}  // namespace fb

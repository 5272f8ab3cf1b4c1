// fabricbench --doctor: the fabric pitfalls listed in doc/doctor.md, one small check per
// pitfall. Each check reads the machine through a Machine (topology/machine.h), so recorded
// fixtures (tests/data/doctor) replace the node in tests, and returns Findings:
//   {id, verdict pass/warn/fail/skip, evidence (what was seen), source (how it was read), fix}.
// checkNode() runs every local check on one node; aggregate() (rank 0) adds the checks that need
// every node (versions, firmware and GID index the same everywhere, reachability), merges equal
// findings of several nodes into one row and flags the rows where nodes differ.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topology/machine.h"

namespace fb::doctor {

// The doctor reads the node through the machine inventory's Machine (lib/topology).
using topo::Command;
using topo::Interface;
using topo::Machine;

enum class Verdict { kPass, kWarn, kFail, kSkip };
const char* verdictName(Verdict v);
std::optional<Verdict> parseVerdict(const std::string& s);

struct Finding {
  std::string id;        // "gpu.topology", "rdma.port"
  Verdict verdict = Verdict::kPass;
  std::string evidence;  // what was seen (for skip: the reason)
  std::string source;    // how it was read: "nvidia-smi topo -m", "/sys/class/infiniband/*/fw_ver"
  std::string fix;       // what to do ("" for pass / skip)
};

// What the binary knows that the doctor library cannot read by itself (it links neither CUDA,
// NCCL, MPI nor verbs). Empty functions / values: "not available in this build", said so.
struct Hooks {
  // The real P2P copy check over every local GPU pair (lib/gpu/cuda/p2p_check): ok, the
  // summary line, and the pairs that advertised P2P but failed the copy (hang, wrong data).
  struct P2P {
    bool ran = false;
    bool ok = false;
    std::string summary;
    std::vector<std::string> brokenPairs;
  };
  std::function<P2P()> p2p;
  // dma-buf registration of GPU memory on an RDMA device (lib/transport/verbs/gpudirect):
  // {possible, why}.
  std::function<std::pair<bool, std::string>(const std::string& device)> dmabuf;
  // Versions the binary links or loads: "cuda_driver", "cuda_runtime", "nccl", "mpi".
  std::map<std::string, std::string> versions;
};

struct NodeReport {
  std::string host;
  std::vector<Finding> findings;
  // Facts compared between nodes by aggregate(): "version.<name>", "fw.<device>",
  // "gid_index.<device>/<port>", "rate.<device>/<port>", "reach.address".
  std::map<std::string, std::string> facts;
  // How each fact was read ("version.mpi" -> "MPI_Get_library_version").
  std::map<std::string, std::string> factSources;
};

// Every local check on this node; with `required` (--require), one "require.<item>" finding per
// item: fail where this node lacks the device or path (a GPU, an active RDMA port, ...).
NodeReport checkNode(const Machine& m, const Hooks& hooks, const std::string& host,
                     const std::vector<std::string>& required = {});
// What --doctor --require accepts: gpu, cuda, nccl (a GPU; nccl also needs NCCL in the build),
// rdma = verbs (an ACTIVE RDMA port), tcp (an interface up besides lo), mpi.
const std::vector<std::string>& requirableItems();
void checkRequired(const Machine& m, const Hooks& h, const std::vector<std::string>& required, NodeReport& r);

// The individual checks (each appends to r.findings, may add facts); exposed for the tests.
void checkGpuTopology(const Machine& m, const Hooks& h, NodeReport& r);   // gpu.topology, gpu.p2p, gpu.geforce, gpu.mig
void checkGpuNicAffinity(const Machine& m, NodeReport& r);                // gpu.nic_affinity
void checkGpuDirect(const Machine& m, const Hooks& h, NodeReport& r);     // gpu.gpudirect_rdma
void checkPcie(const Machine& m, NodeReport& r);                          // pcie.acs, pcie.iommu, pcie.link
void checkRdma(const Machine& m, NodeReport& r);  // rdma.port, rdma.mtu, rdma.gid, rdma.flow_control, rdma.firmware
void checkLimits(const Machine& m, NodeReport& r);                        // limits.memlock, limits.cgroup_rdma, limits.shm
void checkSoftware(const Machine& m, const Hooks& h, NodeReport& r);      // software.versions (facts), env.interfaces, env.disabled

// Reachability between nodes, measured by run.cc: per node, the peers it could not reach.
struct Reachability {
  std::string iface;    // interface / address used, and why
  std::string address;  // ip:port listened on ("" = could not listen: see error)
  std::string error;
  std::map<std::string, std::string> failures;  // peer host -> why
  std::map<std::string, double> okMs;           // peer host -> connect + echo time
};

struct Row {
  std::string id;
  std::vector<std::string> nodes;
  Verdict verdict = Verdict::kPass;
  std::string evidence, source, fix;
  bool differs = false;  // nodes disagree on this check (one row per group)
};

struct Report {
  std::vector<Row> rows;
  int fails = 0, warns = 0, passes = 0, skips = 0;
  std::vector<std::string> differences;  // "check id: what differs"
  int exitCode() const { return fails > 0 ? 1 : 0; }
};

// Rank 0: node reports (+ reachability per node, same order; may be empty) -> the table.
Report aggregate(const std::vector<NodeReport>& nodes, const std::vector<Reachability>& reach = {});

std::string renderTable(const Report& r);
nlohmann::json toJson(const Report& r, const std::vector<NodeReport>& nodes);
nlohmann::json toJson(const NodeReport& n);
NodeReport nodeFromJson(const nlohmann::json& j);

// The same version on every node: ids compared ("version.nccl" ...), shown in the table.
// FB_DOCTOR_TEST_VERSIONS="mpi=Open MPI v9.9;nccl=2.0.0" replaces what this node reports (a test
// hook for the multi-node tests: the evidence says "(FB_DOCTOR_TEST_VERSIONS)").
void applyTestOverrides(const Machine& m, NodeReport& r);

}  // namespace fb::doctor

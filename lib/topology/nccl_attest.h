// What NCCL's own INFO log says about how a communicator moved its data, as a training user needs
// to see it: the intra-node transport (P2P over NVLink or PCIe, CUMEM/IPC, SHM, NVLS), the
// inter-node transport (NET/IB, NET/Socket or a net plugin such as aws-ofi-nccl / EFA), which NICs
// carried it and how many distinct ones per node (rails), GPUDirect RDMA, PXN, and the algorithm,
// protocol and channels NCCL chose per operation (TUNING lines). Pure text parsing, no GPU: tested
// on public multi-node logs (tests/data/nccl-info) and on logs saved from our GPU host.
//
// `--require ib|roce|gdr|nvlink|rails=N` checks are here too (requirementError), so the CLI can
// refuse a malformed value before any communication and the NCCL backend can fail a run whose
// attestation does not hold.
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fb::topo {

// One NIC NCCL lists at init: "NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_2:1/IB ..." or
// "NET/Socket : Using [0]eno2:192.168.1.105<0>".
struct NcclNic {
  int index = -1;
  std::string name;  // "mlx5_0:1", "eno2"
  std::string kind;  // "ib", "roce", "socket"
};

// One per-operation choice: "AllReduce: 4096 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}"
// (NCCL >= 2.24, TUNING subsystem, rank 0 only), "... Algo 1 proto 0 nchannels 2 ..." (older), or
// "AllReduce [Symmetric]: 4096 Bytes -> Kernel X nchannels 2 ..." (symmetric kernels).
struct NcclTuning {
  std::string func;  // "AllReduce", "Send", ...
  long long bytes = -1;
  std::string algo;   // "RING", "TREE", "NVLS", "NVLS_TREE", "PAT", "COLLNET_DIRECT", ..., "symmetric/<kernel>"
  std::string proto;  // "LL", "LL128", "SIMPLE", "" (symmetric kernels)
  int channels = -1;
};

// One rank as its own log lines show it: "comm 0x.. rank R nranks N cudaDev D [nvmlDev D] busId B".
struct NcclRankNet {
  std::string host;    // from the line's prefix
  std::string busId;   // "0000:18:00.0" (NCCL prints the hex number 18000)
  std::set<int> nics;  // NET device indices its own GPU's traffic left through (PXN sends are
                       // counted for the proxy rank, whose GPU's NIC carried them)
  bool gdr = false;    // at least one of those connections was /GDRDMA
  bool noGdr = false;  // at least one was not
};

struct NcclAttestation {
  std::string version;
  // Inside a node.
  std::set<std::string> intra;   // "P2P/CUMEM", "P2P/IPC", "P2P/direct pointer", "SHM"
  int intraConnections = 0;
  std::string intraLink;         // "NVLink", "PCIe" (from the GRAPH search's "type NVL/..."), "" unknown
  std::string nvls;              // "used", "set up", "available", "disabled", "not available", "not set up" (0 nvls channels), "" not in the log
  int nvlsChannels = -1;
  // Between nodes (every NET/... connection).
  std::string net;               // NCCL's network: "IB", "Socket", "NCCL RDMA Plugin v8", "AWS Libfabric"; "" none
  std::string netPlugin;         // "NCCL RDMA Plugin v8 (v8)", "aws-ofi-nccl (provider efa)"; "" built-in
  std::string interKind;         // "ib", "roce", "ib+roce", "socket", "efa", "ofi", "unknown"; "" no NET connection
  int netConnections = 0;
  std::map<std::string, std::vector<NcclNic>> nicsListed;  // per host: the NICs NCCL listed at init
  std::map<std::string, std::set<int>> nicsUsed;           // per host: NET device indices connections used
  std::vector<std::string> hcas;  // names of the devices used (all hosts), "netdev 2 (not listed: virtual NIC)" if unnamed
  int railsPerNode = -1;          // distinct NICs used, the fewest over the hosts in the log; -1 no NET connection
  int gdrConnections = 0;         // NET connections "/GDRDMA"
  bool pxn = false;               // a send proxied through another GPU's NIC ("NET/IB/3(7)") or "use ring PXN 1"
  std::vector<NcclTuning> tuning;
  std::map<int, NcclRankNet> ranks;  // every rank whose init line or NET connection is in the log
  std::vector<std::string> warnings;

  // "yes" (every NET connection GDRDMA), "no", "partial (k of n)", "" (no NET connection).
  std::string gdr() const;
  // "P2P/CUMEM over NVLink + SHM" style text; "none" when no intra-node connection.
  std::string intraText() const;
  // "IB mlx5_0:1,mlx5_2:1 (2 rails) GDRDMA PXN" style one-line summary of the NET side; "none".
  std::string netText() const;
  // Comma-joined names of hcas.
  std::string hcasText() const;
};

// NCCL's busId number as a PCI address: 0x18000 -> "0000:18:00.0" (domain, bus, device, function).
std::string ncclBusIdToBdf(const std::string& hex);

// `host` of each line is taken from NCCL's "host:pid:tid [dev] NCCL INFO" prefix ("" if absent).
NcclAttestation attestNcclLog(std::string_view text);

// Combines the NICs used per host of several ranks' attestations (each rank reads its own log
// file) and recomputes railsPerNode and hcas.
void mergeNicUse(NcclAttestation& into, const std::map<std::string, std::set<int>>& nicsUsed);

// "ib", "roce", "gdr", "nvlink", "rails=N" (N >= 1).
bool isAttestRequirement(const std::string& r);
// "" when `r` is a well-formed attestation requirement, else one line naming the problem.
std::string requirementFormError(const std::string& r);
// "" when the attestation holds `r`, else the reason ("--require ib: NCCL used NET/Socket between
// nodes ..."). `nvlinkBetweenGpus`: what the machine's topology says of the GPUs of one node
// (-1 unknown: the log's graph search decides).
std::string requirementError(const std::string& r, const NcclAttestation& a, int nvlinkBetweenGpus = -1);

}  // namespace fb::topo

// Reader for NCCL's own INFO output (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV,NET,P2P,SHM):
// which transport each channel connection used and how many channels, so a row can name the
// path NCCL really took ("attested") instead of the one it was asked for. Pure text parsing;
// tested on real logs saved from the GPU host (tests/data/nccl_logs).
#pragma once
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fb::topo {

// One "Channel 03/0 : 0[0] -> 1[1] [send] via P2P/CUMEM/read" line.
struct NcclConnection {
  int channel = -1;
  int connIndex = 0;             // the "/N" after the channel (0 ring/tree, 1 p2p), 0 when absent
  int from = -1, to = -1;        // ranks
  int fromDev = -1, toDev = -1;  // CUDA devices as NCCL prints them in brackets
  std::string direction;         // "send", "receive" or "" (NCCL prints it only for some)
  std::string via;               // "P2P/CUMEM/read", "SHM/direct/direct", "NET/Socket/0", ...
  std::string host;              // from the "host:pid:tid [dev] NCCL INFO" prefix, "" when absent
};

struct NcclLogSummary {
  std::string version;            // "2.28.3+cuda13.0"
  int nRanks = -1, nNodes = -1;   // from "comm 0x.. rank R nRanks N nNodes M ..."
  std::vector<int> ranks;         // ranks whose init lines are in the text
  int collChannels = -1;          // "24 coll channels, ..., 32 p2p channels, ..."
  int p2pChannels = -1;
  int nvlsChannels = -1;
  int ringChannels = -1;          // "Channel 00/24 : 0 1" → 24
  std::vector<std::string> graphTypes;  // "NVL/PIX" from "Pattern 4, ..., type NVL/PIX, ..."
  std::string network;            // "Socket" or "IB" from "Using network X"
  std::vector<std::string> socketInterfaces;  // "eth0" from "NET/Socket : Using [0]eth0:192.0.2.2<0>"
  std::vector<NcclConnection> connections;
  std::vector<std::string> envLines;  // "NCCL_P2P_DISABLE set by environment to 1"
  std::vector<std::string> warnings;  // text after "NCCL WARN "
  int initComplete = 0;              // "Init COMPLETE" lines

  // Connections that involve `rank` (all when rank < 0).
  std::vector<NcclConnection> connectionsOf(int rank) const;
  // Distinct transport families (see transportFamily) of connectionsOf(rank).
  std::set<std::string> families(int rank = -1) const;
  // "P2P/CUMEM/read ×24" style list of the distinct `via` strings with their counts.
  std::string transportsText(int rank = -1) const;
  // Highest channel index seen in connections + 1 (the channels really connected).
  int connectedChannels(int rank = -1) const;
};

NcclLogSummary parseNcclLog(std::string_view text);
// The same single pass, also handing every other INFO line (not a "Channel ... via" connection) to
// `other` with its host, so readers of more fields (the attestation) need not walk the text again.
using NcclInfoLine = std::function<void(const std::string& host, const std::string& msg)>;
NcclLogSummary parseNcclLog(std::string_view text, const NcclInfoLine& other);

// "P2P/CUMEM/read" → "P2P", "P2P/direct pointer" → "P2P", "P2P/IPC" → "P2P",
// "SHM/direct/direct" → "SHM", "NET/Socket/0" → "NET/Socket", "NET/IB/0/GDRDMA" → "NET/IB",
// "CollNet..." → "CollNet"; otherwise the text up to the first '/'.
std::string transportFamily(std::string_view via);
// Does the `via` text say GPUDirect RDMA was used ("/GDRDMA")?
bool usesGdrdma(std::string_view via);

}  // namespace fb::topo

// The NCCL attestation parser over real multi-node NCCL INFO logs published by others
// (tests/data/nccl-info, sources in its README). Each expected value below was read from the log
// by hand (the line that shows it is named); every field of every log is compared and the wrong
// ones counted.
#include <catch2/catch.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

#include "topology/nccl_attest.h"

namespace {

std::string readLog(const std::string& name) {
  std::ifstream f(std::string(FB_TEST_DATA) + "/nccl-info/" + name);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Expected {
  const char* file;
  const char* intra;      // intraText()
  const char* interKind;  // ib, roce, socket, efa
  const char* net;        // NCCL's network name
  const char* plugin;     // "" built-in
  const char* hcas;       // NICs used
  int rails;              // per node, fewest over the hosts in the log
  const char* gdr;
  bool pxn;
  const char* nvls;
  std::vector<std::pair<std::string, std::string>> requireVerdict;  // requirement → "" holds / start of the reason
};

const std::vector<Expected>& cases() {
  static const std::vector<Expected> k = {
      // 1. IB NDR 2x8, HPC-X plugin; rank 0's lines only: "via NET/NCCL RDMA Plugin v8/0/GDRDMA" (NIC 0 =
      //    mlx5_0:1 in "NET/IB : Using [0]mlx5_0:1/IB/SHARP ..."), "P2P/CUMEM" inside, "16 nvls channels".
      {"h100-ib-ndr-2x8-gdrdma-nvls-nccl2.26.2-rank0.log", "P2P/CUMEM", "ib", "NCCL RDMA Plugin v8",
       "NCCL RDMA Plugin v8 (v8)", "mlx5_0:1", 1, "yes", false, "set up",
       {{"ib", ""}, {"gdr", ""}, {"roce", "--require roce: NCCL used NET/NCCL RDMA Plugin v8 (ib)"},
        {"rails=2", "--require rails=2: NCCL used 1 distinct NIC per node"}}},
      // 2. RoCE 2x2, no GDR: "via NET/IB/2" (no /GDRDMA; "3 Net devices", device 2 not in the Using list),
      //    "SHM/direct/direct" inside, "NVLS multicast support is not available".
      {"a100pcie-roce-2x2-nogdr-nccl2.30.4.log", "SHM", "roce", "IB", "", "netdev 2 (not listed: virtual NIC)", 1, "no",
       false, "not available",
       {{"roce", ""}, {"gdr", "--require gdr: GPUDirect RDMA on 0 of 8 NET connections"},
        {"ib", "--require ib: NCCL used NET/IB (roce) between nodes, not InfiniBand"},
        {"nvlink", "--require nvlink: NCCL used SHM inside a node"}}},
      // 3. 1 RoCE + 1 IB port listed, 2 ports down (absent); 1 GPU per node: "via NET/IB/1/GDRDMA" = mlx5_2:1/IB.
      {"a100pcie-roce+ib-2x1-gdr-forced-nccl2.16.5-gather.log", "none", "ib", "IB", "", "mlx5_2:1", 1, "yes", false, "",
       {{"ib", ""}, {"gdr", ""}, {"nvlink", "--require nvlink: NCCL made no intra-node connection"}}},
      // 4. AWS EFA through aws-ofi-nccl: "NET/OFI Selected Provider is efa", "via NET/AWS Libfabric/0..3/GDRDMA"
      //    on both hosts, "P2P/IPC/read" inside.
      {"a100-p4d-efa-2x8-nccl2.9.9.log", "P2P/IPC", "efa", "AWS Libfabric", "aws-ofi-nccl (provider efa)",
       "AWS Libfabric/0,AWS Libfabric/1,AWS Libfabric/2,AWS Libfabric/3", 4, "yes", false, "",
       {{"gdr", ""}, {"rails=4", ""}, {"rails=5", "--require rails=5: NCCL used 4 distinct NICs per node"},
        {"ib", "--require ib: NCCL used NET/AWS Libfabric (efa) between nodes, not InfiniBand"}}},
      // 5. Socket fallback (libibverbs missing): "NET/Socket : Using [0]eno2:...", "via NET/Socket/0",
      //    "P2P/IPC" and "via direct shared memory" inside.
      {"2x4gpu-socket-nolibibverbs-nccl2.7.8-node0.log", "P2P/IPC + SHM", "socket", "Socket", "", "eno2", 1, "no", false,
       "",
       {{"ib", "--require ib: NCCL used NET/Socket (TCP) between nodes, not InfiniBand (interfaces eno2)"},
        {"gdr", "--require gdr: GPUDirect RDMA on 0 of 8 NET connections"}}},
      // 6. RoCE bonds through Tencent's plugin, PXN: "via NET/NCCL RDMA Plugin v6/0(0)/GDRDMA/Shared",
      //    NICs 0 and 1 = mlx5_bond_6:1, mlx5_bond_7:1; "0 nvls channels".
      {"h20-vm-roce-bond-2x2-pxn-alltoall-nccl2.26.5-host40.log", "P2P/CUMEM", "roce", "NCCL RDMA Plugin v6",
       "NCCL RDMA Plugin v6 (v6)", "mlx5_bond_6:1,mlx5_bond_7:1", 2, "yes", true, "not set up",
       {{"roce", ""}, {"gdr", ""}, {"rails=2", ""}}},
      // 7. IB HDR x4 + an unused 25G RoCE port, PXN: "via NET/IB/1..4/GDRDMA", "NET/IB/2(0)/GDRDMA"; NIC 0
      //    (mlx5_0:1/RoCE) never used; one line glued to a table row ("-1gcn151:...") still counts for gcn151.
      {"h100-snellius-ib-2x4-pxn-gdrdma-nccl2.22.3-allreduce.log", "P2P/CUMEM", "ib", "IB", "",
       "mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1", 4, "yes", true, "not available",
       {{"ib", ""}, {"gdr", ""}, {"rails=4", ""}, {"roce", "--require roce: NCCL used NET/IB (ib) between nodes"}}},
  };
  return k;
}

}  // namespace

TEST_CASE("attestation over every real multi-node log: each field as the log shows it") {
  int fields = 0, wrong = 0;
  for (const auto& e : cases()) {
    INFO(e.file);
    auto a = fb::topo::attestNcclLog(readLog(e.file));
    auto check = [&](const std::string& what, const std::string& got, const std::string& want) {
      ++fields;
      if (got != want) {
        ++wrong;
        std::cout << e.file << ": " << what << " = '" << got << "', the log shows '" << want << "'\n";
      }
      CHECK(got == want);
    };
    check("intra", a.intraText(), e.intra);
    check("inter", a.interKind, e.interKind);
    check("net", a.net, e.net);
    check("plugin", a.netPlugin, e.plugin);
    check("nics", a.hcasText(), e.hcas);
    check("rails", std::to_string(a.railsPerNode), std::to_string(e.rails));
    check("gdr", a.gdr(), e.gdr);
    check("pxn", a.pxn ? "yes" : "no", e.pxn ? "yes" : "no");
    check("nvls", a.nvls, e.nvls);
    for (const auto& [req, want] : e.requireVerdict) {
      std::string got = fb::topo::requirementError(req, a);
      check("--require " + req, want.empty() ? got : got.substr(0, want.size()), want);
    }
  }
  std::cout << "nccl-info attestation: " << cases().size() << " logs, " << fields << " fields, wrong = " << wrong << "\n";
  CHECK(wrong == 0);
  CHECK(fields == 87);  // 7 logs x 9 fields + 24 --require verdicts
}

TEST_CASE("per-host NIC use: hosts, and rails from the ranks of a node merged") {
  auto a = fb::topo::attestNcclLog(readLog("h100-snellius-ib-2x4-pxn-gdrdma-nccl2.22.3-allreduce.log"));
  REQUIRE(a.nicsUsed.size() == 2);
  CHECK(a.nicsUsed.at("gcn151") == std::set<int>{1, 2, 3, 4});
  CHECK(a.nicsUsed.at("gcn154") == std::set<int>{1, 2, 3, 4});
  CHECK(a.netConnections == 64);
  CHECK(a.gdrConnections == 64);
  CHECK(a.intraConnections == 120);
  // One rank's log (rank 0 of the NDR cluster) sees one rail; merging the other ranks' NICs of the
  // same host (as the NCCL backend does with every rank's log) raises it.
  auto b = fb::topo::attestNcclLog(readLog("h100-ib-ndr-2x8-gdrdma-nvls-nccl2.26.2-rank0.log"));
  CHECK(b.railsPerNode == 1);
  fb::topo::mergeNicUse(b, {{"lccn09", {1, 2, 3}}});
  CHECK(b.railsPerNode == 4);
  CHECK(b.hcasText() == "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_4:1");
}

TEST_CASE("TUNING lines as NCCL 2.28.9 prints them (src/enqueue.cc), older numeric ones, symmetric kernels") {
  // Synthetic: no public multi-node log with clean TUNING lines exists (tests/data/nccl-info/README);
  // the format strings are NCCL's: "%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}" and
  // "%s [Symmetric]: %ld Bytes -> Kernel %s nchannels %d nthreads %d nWorks %d".
  std::string text =
      "h:1:1 [0] NCCL INFO AllReduce: 4096 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}\n"
      "h:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo NVLS proto SIMPLE channel{Lo..Hi}={0..15}\n"
      "h:1:1 [0] NCCL INFO AllGather: 8 Bytes -> Algo 1 proto 0 nchannels 2 nthreads 256\n"
      "h:1:1 [0] NCCL INFO AllReduce [Symmetric]: 65536 Bytes -> Kernel AllReduce_AGxLL_R nchannels 4 nthreads 512 nWorks 4\n";
  auto a = fb::topo::attestNcclLog(text);
  REQUIRE(a.tuning.size() == 4);
  CHECK(a.tuning[0].func == "AllReduce");
  CHECK(a.tuning[0].bytes == 4096);
  CHECK(a.tuning[0].algo == "RING");
  CHECK(a.tuning[0].proto == "LL");
  CHECK(a.tuning[0].channels == 2);
  CHECK(a.tuning[1].algo == "NVLS");
  CHECK(a.tuning[1].proto == "SIMPLE");
  CHECK(a.tuning[1].channels == 16);
  CHECK(a.tuning[2].func == "AllGather");
  CHECK(a.tuning[2].algo == "RING");
  CHECK(a.tuning[2].proto == "LL");
  CHECK(a.tuning[2].channels == 2);
  CHECK(a.tuning[3].algo == "symmetric/AllReduce_AGxLL_R");
  CHECK(a.tuning[3].proto == "");
  CHECK(a.tuning[3].channels == 4);
  CHECK(a.nvls == "used");  // an NVLS algorithm was chosen
}

TEST_CASE("--require values: form checked before any communication") {
  using fb::topo::isAttestRequirement;
  using fb::topo::requirementFormError;
  for (const char* ok : {"ib", "roce", "gdr", "nvlink", "rails=1", "rails=8"}) {
    CHECK(isAttestRequirement(ok));
    CHECK(requirementFormError(ok).empty());
  }
  for (const char* bad : {"rails=", "rails=0", "rails=x", "rails=2x", "rails=-1"}) {
    CHECK(isAttestRequirement(bad));
    CHECK(requirementFormError(bad).find("N must be a whole number >= 1") != std::string::npos);
  }
  CHECK_FALSE(isAttestRequirement("tcp"));
  CHECK_FALSE(isAttestRequirement("gpu"));
  // No NET connection at all (one node): ib cannot hold.
  fb::topo::NcclAttestation one;
  one.intra = {"P2P/CUMEM"};
  one.intraConnections = 4;
  CHECK(fb::topo::requirementError("ib", one).rfind("--require ib: NCCL made no inter-node (NET) connection", 0) == 0);
  CHECK(fb::topo::requirementError("nvlink", one, 1).empty());
  CHECK(fb::topo::requirementError("nvlink", one, 0).find("no NVLink between them") != std::string::npos);
}

TEST_CASE("our own host: 2 ranks on one H200 as two NCCL nodes (NCCL_HOSTID), --path training, NVLS off") {
  // tests/data/nccl_logs/h200x1_hostid2_training_rank0.log: rank 0's log of the --require ib run on the
  // GPU host (NCCL 2.28.3, NCCL_NVLS_ENABLE=0 in the host's environment, our profiler plugin loaded).
  std::ifstream f(std::string(FB_TEST_DATA) + "/nccl_logs/h200x1_hostid2_training_rank0.log");
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  auto a = fb::topo::attestNcclLog(ss.str());
  CHECK(a.intraText() == "none");
  CHECK(a.interKind == "socket");
  CHECK(a.net == "Socket");
  CHECK(a.hcasText() == "eth0");
  CHECK(a.railsPerNode == 1);
  CHECK(a.netConnections == 4);
  CHECK(a.gdr() == "no");
  CHECK_FALSE(a.pxn);
  CHECK(a.nvls == "disabled");
  CHECK(fb::topo::requirementError("ib", a) ==
        "--require ib: NCCL used NET/Socket (TCP) between nodes, not InfiniBand (interfaces eth0)");
}

// The NCCL INFO log reader and the path attestation, on real logs saved from the 2×H200 host
// (tests/data/nccl_logs/*.log, NCCL 2.28, NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV,NET,P2P,SHM).
#include <cstdlib>
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "topology/nccl_log.h"
#include "gpu/nccl/path_profile.h"

namespace {

std::string readLog(const std::string& name) {
  std::ifstream f(std::string(FB_TEST_DATA) + "/nccl_logs/" + name);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("transport families") {
  using fb::topo::transportFamily;
  CHECK(transportFamily("P2P/CUMEM/read") == "P2P");
  CHECK(transportFamily("P2P/direct pointer") == "P2P");
  CHECK(transportFamily("P2P/IPC") == "P2P");
  CHECK(transportFamily("SHM/direct/direct") == "SHM");
  CHECK(transportFamily("NET/Socket/0") == "NET/Socket");
  CHECK(transportFamily("NET/IB/0/GDRDMA") == "NET/IB");
  CHECK(transportFamily("NET/IB/3") == "NET/IB");
  CHECK(fb::topo::usesGdrdma("NET/IB/0/GDRDMA"));
  CHECK_FALSE(fb::topo::usesGdrdma("NET/IB/0"));
}

TEST_CASE("real nvlink log (2xH200 NV18, NCCL 2.28.3, 2 MPI ranks): P2P/CUMEM on every connection") {
  auto s = fb::topo::parseNcclLog(readLog("h200x2_nvlink_rank0.log"));
  CHECK(s.version == "2.28.3+cuda13.0");
  CHECK(s.nRanks == 2);
  CHECK(s.nNodes == 1);
  CHECK(s.ranks == std::vector<int>{0});
  CHECK(s.collChannels == 24);
  CHECK(s.p2pChannels == 32);
  CHECK(s.nvlsChannels == 0);
  CHECK(s.ringChannels == 24);
  CHECK(std::find(s.graphTypes.begin(), s.graphTypes.end(), "NVL/PIX") != s.graphTypes.end());
  CHECK(s.initComplete == 1);
  REQUIRE(s.connections.size() == 56);
  CHECK(s.families(0) == std::set<std::string>{"P2P"});
  CHECK(s.connectedChannels(0) == 32);
  const auto& c = s.connections.front();
  CHECK(c.from == 0);
  CHECK(c.to == 1);
  CHECK(c.fromDev == 0);
  CHECK(c.toDev == 1);
  CHECK(c.via == "P2P/CUMEM");
  bool sawP2pConn = false;
  for (const auto& x : s.connections) sawP2pConn = sawP2pConn || x.connIndex == 1;
  CHECK(sawP2pConn);
  CHECK(s.transportsText(0) == "P2P/CUMEM x56");

  auto nv = fb::nccl::makeProfile("nvlink", {});
  CHECK(fb::nccl::attestationError(nv, s, 0, true).empty());
  // Same log, but the topology says the GPUs are not NVLink-connected: P2P went over PCIe.
  CHECK(fb::nccl::attestationError(nv, s, 0, false).find("forced path nvlink but NCCL used P2P over PCIe") == 0);
  // Forced shm, but NCCL used P2P: the run must fail naming what NCCL used.
  auto shm = fb::nccl::makeProfile("shm", {});
  CHECK(fb::nccl::attestationError(shm, s, 0, true).find("forced path shm but NCCL used P2P/CUMEM") == 0);
  // A rank that is not in the log has no connections: not attested.
  CHECK(fb::nccl::attestationError(nv, s, 5, true).find("no channel connection") != std::string::npos);
}

TEST_CASE("real shm log (NCCL_P2P_DISABLE=1): SHM/direct/direct, channel lines without /N") {
  auto s = fb::topo::parseNcclLog(readLog("h200x2_shm_rank0.log"));
  CHECK(s.collChannels == 4);
  CHECK(s.ringChannels == 4);
  REQUIRE(s.connections.size() == 4);
  CHECK(s.connections[3].channel == 3);
  CHECK(s.connections[3].via == "SHM/direct/direct");
  CHECK(s.families(0) == std::set<std::string>{"SHM"});
  bool sawEnv = false;
  for (const auto& e : s.envLines) sawEnv = sawEnv || e.find("NCCL_P2P_DISABLE set by environment to 1") == 0;
  CHECK(sawEnv);
  CHECK(fb::nccl::attestationError(fb::nccl::makeProfile("shm", {}), s, 0, true).empty());
  CHECK(fb::nccl::attestationError(fb::nccl::makeProfile("socket", {}), s, 0, true)
            .find("forced path socket but NCCL used SHM/direct/direct") == 0);
}

TEST_CASE("real socket log (P2P and SHM off): NET/Socket with [send]/[receive]") {
  auto s = fb::topo::parseNcclLog(readLog("h200x2_socket_rank0.log"));
  CHECK(s.network == "Socket");
  REQUIRE(s.connections.size() == 8);
  int recv = 0;
  for (const auto& c : s.connections) recv += c.direction == "receive";
  CHECK(recv == 4);
  CHECK(s.families(0) == std::set<std::string>{"NET/Socket"});
  CHECK(s.transportsText(0) == "NET/Socket/0 x4, NET/Socket/0/Shared x4");
  CHECK(fb::nccl::attestationError(fb::nccl::makeProfile("socket", {}), s, 0, true).empty());
  CHECK(s.socketInterfaces == std::vector<std::string>{"eth0"});  // the NIC whose rate is the nominal one
  CHECK(fb::nccl::attestationError(fb::nccl::makeProfile("nvlink", {}), s, 0, true)
            .find("forced path nvlink but NCCL used NET/Socket/0") == 0);
}

TEST_CASE("profiles: env settings, RDMA port choice, one profile per process") {
  auto sock = fb::nccl::makeProfile("socket", {});
  CHECK(sock.family == "NET/Socket");
  bool p2pOff = false;
  for (const auto& [k, v] : sock.env) p2pOff = p2pOff || (k == "NCCL_P2P_DISABLE" && v == "1");
  CHECK(p2pOff);
  CHECK_THROWS_AS(fb::nccl::makeProfile("ib", {}), fb::UnavailableError);
  CHECK_THROWS_AS(fb::nccl::makeProfile("warp", {}), fb::ConfigError);
  fb::topo::RdmaPort roce;
  roce.device = "mlx5_1";
  roce.port = 1;
  roce.linkLayer = "Ethernet";
  roce.state = "4: ACTIVE";
  roce.roceV2GidIndex = 3;
  auto r = fb::nccl::makeProfile("roce", {roce});
  bool gid = false, hca = false;
  for (const auto& [k, v] : r.env) {
    gid = gid || (k == "NCCL_IB_GID_INDEX" && v == "3");
    hca = hca || (k == "NCCL_IB_HCA" && v == "=mlx5_1:1");
  }
  CHECK(gid);
  CHECK(hca);
  CHECK_THROWS_AS(fb::nccl::makeProfile("ib", {roce}), fb::UnavailableError);  // Ethernet port only

  // NVLS is the site's choice: neither the logging nor a forced path sets NCCL_NVLS_ENABLE
  unsetenv("NCCL_NVLS_ENABLE");
  fb::nccl::enableNcclLogging("");
  fb::nccl::activateProfile(sock);
  CHECK(std::getenv("NCCL_NVLS_ENABLE") == nullptr);
  CHECK(fb::nccl::activeProfileName() == "socket");
  CHECK_NOTHROW(fb::nccl::activateProfile(sock));
  CHECK_THROWS_AS(fb::nccl::activateProfile(fb::nccl::makeProfile("shm", {})), fb::UnavailableError);
}

TEST_CASE("real log of two ranks as threads of one process: P2P/direct pointer, per-rank view") {
  auto s = fb::topo::parseNcclLog(readLog("h200x2_threads_2ranks_one_process.log"));
  CHECK(s.ranks == std::vector<int>{0, 1});
  CHECK(s.initComplete == 2);
  CHECK(s.families(0) == std::set<std::string>{"P2P"});
  CHECK(s.families(1) == std::set<std::string>{"P2P"});
  for (const auto& c : s.connectionsOf(1)) CHECK(c.via == "P2P/direct pointer");
  CHECK(fb::nccl::attestationError(fb::nccl::makeProfile("nvlink", {}), s, 1, true).empty());
}

TEST_CASE("real rank-1 log of the P2P ring run: ring and p2p connections (/0 and /1)") {
  auto s = fb::topo::parseNcclLog(readLog("h200x2_nvlink_p2pring_rank1.log"));
  CHECK(s.ranks == std::vector<int>{1});
  int p2p = 0;
  for (const auto& c : s.connectionsOf(1)) {
    CHECK(c.from == 1);
    CHECK(c.to == 0);
    p2p += c.connIndex == 1;
  }
  CHECK(p2p == 32);
  CHECK(s.connectedChannels(1) == 32);
  CHECK(s.transportsText(1) == "P2P/CUMEM x32");
}

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>

#include "helpers.h"
#include "report/fingerprint.h"
#include "core/process.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A fake /proc, /sys and /etc under a temp dir.
void makeTree(const fbtest::TempDir& d, const std::string& host, const std::string& speed, const std::string& fw) {
  auto w = [&](const std::string& rel, const std::string& text) { fbtest::spit(d.str(rel), text); };
  w("proc/sys/kernel/hostname", host + "\n");
  w("proc/sys/kernel/osrelease", "6.1.0-fake-amd64\n");
  w("proc/sys/kernel/version", "#1 SMP Debian\n");
  w("proc/cpuinfo",
    "processor\t: 0\nmodel name\t: Fake CPU 9000\nphysical id\t: 0\ncore id\t: 0\n\n"
    "processor\t: 1\nmodel name\t: Fake CPU 9000\nphysical id\t: 0\ncore id\t: 1\n\n"
    "processor\t: 2\nmodel name\t: Fake CPU 9000\nphysical id\t: 1\ncore id\t: 0\n\n");
  w("proc/meminfo", "MemTotal:       2048 kB\nMemFree:        1024 kB\n");
  w("etc/os-release", "NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n");
  w("sys/class/net/eth0/operstate", "up\n");
  w("sys/class/net/eth0/speed", speed + "\n");
  w("sys/class/net/eth0/mtu", "9000\n");
  w("sys/class/net/eth0/address", "aa:bb:cc:dd:ee:ff\n");
  w("sys/class/net/eth0/device/firmware_version", fw + "\n");
  fs::create_symlink("../../../bus/pci/drivers/mlx5_core", d.path / "sys/class/net/eth0/device/driver");
  w("sys/class/net/veth" + host + "/operstate", "up\n");  // virtual: no device/
  w("sys/class/net/veth" + host + "/speed", "10000\n");
  w("sys/class/net/lo/operstate", "unknown\n");
  w("sys/class/net/lo/mtu", "65536\n");
  w("sys/class/infiniband/mlx5_0/fw_ver", fw + "\n");
  w("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  w("sys/class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)\n");
  w("sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
}

json fakeFingerprint(const fbtest::TempDir& d, int rank, const std::string& nccl) {
  fb::FingerprintOptions o;
  o.root = d.str();
  o.runCommands = false;
  o.mpiVersion = "Open MPI v4.1.4\n";
  o.env = {{"NCCL_DEBUG", "INFO"}, {"HOME", "/root"}, {"FB_JOB_TOKEN", "s3cret"}, {"OMPI_COMM_WORLD_RANK", "0"}};
  o.extra = {{"rank", rank}, {"nccl_version", nccl}};
  return fb::collectLocalFingerprint(o);
}

}  // namespace

TEST_CASE("fingerprint: reads a fake /proc, /sys, /etc tree", "[fingerprint]") {
  fbtest::TempDir d;
  makeTree(d, "nodeA", "100000", "28.39.1002");
  auto fp = fakeFingerprint(d, 0, "2.27.3");
  CHECK(fp["hostname"] == "nodeA");
  CHECK(fp["kernel"] == "6.1.0-fake-amd64");
  CHECK(fp["os"] == "Debian GNU/Linux 12 (bookworm)");
  CHECK(fp["cpu"]["model"] == "Fake CPU 9000");
  CHECK(fp["cpu"]["logical_cpus"] == 3);
  CHECK(fp["cpu"]["sockets"] == 2);
  CHECK(fp["cpu"]["physical_cores"] == 3);
  CHECK(fp["memory_bytes"] == 2048 * 1024);
  CHECK(fp["nics"]["eth0"]["speed_mbps"] == 100000);
  CHECK(fp["nics"]["eth0"]["mtu"] == 9000);
  CHECK(fp["nics"]["eth0"]["operstate"] == "up");
  CHECK(fp["nics"]["eth0"]["driver"] == "mlx5_core");
  CHECK(fp["nics"]["eth0"]["firmware"] == "28.39.1002");
  CHECK(fp["nics"]["eth0"]["virtual"] == false);
  CHECK(fp["nics"]["vethnodeA"]["virtual"] == true);
  CHECK(fp["nics"]["lo"]["speed_mbps"].is_null());  // no speed file: unknown, not an error
  CHECK(fp["rdma"]["mlx5_0"]["fw_ver"] == "28.39.1002");
  CHECK(fp["rdma"]["mlx5_0"]["ports"]["1"]["state"] == "4: ACTIVE");
  CHECK(fp["rdma"]["mlx5_0"]["ports"]["1"]["rate"] == "200 Gb/sec (4X HDR)");
  CHECK(fp["rdma"]["mlx5_0"]["ports"]["1"]["link_layer"] == "InfiniBand");
  CHECK(fp["gpus"].empty());
  CHECK(fp["gpu_count"] == 0);
  CHECK(fp["mpi_version"] == "Open MPI v4.1.4");
  CHECK(fp["nccl_version"] == "2.27.3");
  CHECK(fp["rank"] == 0);
  CHECK(fp["compiler"].get<std::string>().size() > 0);
  CHECK(fp["env"]["NCCL_DEBUG"] == "INFO");
  CHECK(fp["env"]["OMPI_COMM_WORLD_RANK"] == "0");
  CHECK_FALSE(fp["env"].contains("HOME"));
  CHECK_FALSE(fp["env"].contains("FB_JOB_TOKEN"));
}

TEST_CASE("fingerprint: environment filter keeps relevant names, drops secrets", "[fingerprint]") {
  auto e = fb::filterEnvironment({{"SLURM_JOB_ID", "7"},
                                  {"CUDA_VISIBLE_DEVICES", "0,1"},
                                  {"UCX_TLS", "rc"},
                                  {"PMIX_RANK", "3"},
                                  {"LD_LIBRARY_PATH", "/usr/local/cuda/lib64"},
                                  {"PATH", "/bin"},
                                  {"NCCL_IB_KEY_x", "k"},
                                  {"SLURM_Password", "p"},
                                  {"FB_AUTH", "a"},
                                  {"OMPI_MCA_secret_thing", "s"},
                                  {"AWS_ACCESS_KEY_ID", "z"}});
  CHECK(e.size() == 5);
  CHECK(e["PMIX_RANK"] == "3");
  CHECK_FALSE(e.contains("PATH"));
  CHECK_FALSE(e.contains("NCCL_IB_KEY_x"));
  CHECK_FALSE(e.contains("SLURM_Password"));
  CHECK_FALSE(e.contains("OMPI_MCA_secret_thing"));
}

TEST_CASE("fingerprint: merge groups ranks by host and lists the differences", "[fingerprint]") {
  fbtest::TempDir a, b;
  makeTree(a, "nodeA", "100000", "28.39.1002");
  makeTree(b, "nodeB", "25000", "28.36.9999");  // slower link, older firmware
  auto a0 = fakeFingerprint(a, 0, "2.27.3");
  auto a1 = fakeFingerprint(a, 1, "2.27.3");
  auto b2 = fakeFingerprint(b, 2, "2.26.2");
  auto b3 = fakeFingerprint(b, 3, "2.26.2");
  // Extra NIC only on nodeB (physical): shows as absent on nodeA.
  b3["nics"]["eth1"] = {{"speed_mbps", 1000}, {"virtual", false}, {"mtu", 1500}};
  b2["nics"]["eth1"] = b3["nics"]["eth1"];
  auto m = fb::mergeFingerprints({a0, b2, a1, b3});  // order of arrival is not the rank order
  CHECK(m["nranks"] == 4);
  CHECK(m["nhosts"] == 2);
  REQUIRE(m["hosts"].size() == 2);
  CHECK(m["hosts"][0]["hostname"] == "nodeA");
  CHECK(m["hosts"][0]["ranks"] == json({0, 1}));
  CHECK(m["hosts"][1]["ranks"] == json({2, 3}));
  CHECK_FALSE(m["hosts"][0]["fingerprint"].contains("rank"));

  std::map<std::string, json> diffs;
  for (auto& d : m["differences"]) diffs[d["key"]] = d["values"];
  CHECK(diffs.count("nics.eth0.speed_mbps"));
  CHECK(diffs["nics.eth0.speed_mbps"]["nodeA"] == 100000);
  CHECK(diffs["nics.eth0.speed_mbps"]["nodeB"] == 25000);
  CHECK(diffs["nics.eth0.firmware"]["nodeB"] == "28.36.9999");
  CHECK(diffs["rdma.mlx5_0.fw_ver"]["nodeA"] == "28.39.1002");
  CHECK(diffs["nccl_version"]["nodeB"] == "2.26.2");
  CHECK(diffs["nics.eth1.speed_mbps"]["nodeA"] == "(absent)");
  // Same on both: not listed. Virtual NICs and per-host identity never count as differences.
  CHECK_FALSE(diffs.count("kernel"));
  CHECK_FALSE(diffs.count("cpu.model"));
  CHECK_FALSE(diffs.count("hostname"));
  for (auto& [k, v] : diffs) CHECK(k.find("veth") == std::string::npos);
  CHECK(diffs.size() == 6);  // eth0 speed, eth0 firmware, eth1 speed, eth1 mtu, rdma fw, nccl

  // One host: no differences.
  auto single = fb::mergeFingerprints({a0, a1});
  CHECK(single["nhosts"] == 1);
  CHECK(single["differences"].empty());
  // Ranks without a "rank" field take their index.
  a0.erase("rank");
  a1.erase("rank");
  CHECK(fb::mergeFingerprints({a0, a1})["hosts"][0]["ranks"] == json({0, 1}));
}

TEST_CASE("fingerprint: this machine (real /proc, /sys) gives a sane record", "[fingerprint]") {
  fb::FingerprintOptions o;
  o.commandTimeout = std::chrono::milliseconds(5000);
  auto fp = fb::collectLocalFingerprint(o);
  CHECK_FALSE(fp["hostname"].get<std::string>().empty());
  CHECK(fp["cpu"]["logical_cpus"].get<int>() >= 1);
  CHECK(fp["memory_bytes"].get<long long>() > 0);
  CHECK(fp["nics"].contains("lo"));
  CHECK(fp["git"].contains("rev"));
  CHECK(fp.contains("gpu_query"));
}

TEST_CASE("process: runCommand captures output, reports absence, kills at the deadline", "[process]") {
  auto r = fb::runCommand({"sh", "-c", "echo hello; exit 3"}, std::chrono::milliseconds(5000));
  CHECK(r.started);
  CHECK(r.out == "hello\n");
  CHECK(r.exitCode == 3);
  CHECK_FALSE(r.ok());
  auto missing = fb::runCommand({"no-such-program-fb"}, std::chrono::milliseconds(1000));
  CHECK_FALSE(missing.started);
  CHECK(missing.error.find("not found") != std::string::npos);
  auto t0 = std::chrono::steady_clock::now();
  auto slow = fb::runCommand({"sleep", "10"}, std::chrono::milliseconds(300));
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(slow.timedOut);
  CHECK(took < std::chrono::seconds(3));
  // A child that closes stdout but keeps running is still bounded.
  auto detached = fb::runCommand({"sh", "-c", "exec >/dev/null; sleep 10"}, std::chrono::milliseconds(300));
  CHECK(detached.timedOut);
}

TEST_CASE("fingerprint: nvidia-smi output saved from the 2xH200 host parses", "[fingerprint]") {
  auto gpus = fb::parseNvidiaSmiGpus(fbtest::slurp(FB_REPORT_TEST_DATA "/nvidia_smi_query_gpu_2xH200.csv"));
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[0]["index"] == 0);
  CHECK(gpus[1]["index"] == 1);
  CHECK(gpus[0]["name"] == "NVIDIA H200");
  CHECK(gpus[0]["driver_version"] == "580.159.04");
  CHECK(gpus[0]["memory_mib"] == 143771);
  CHECK(gpus[1]["pci_bus_id"] == "00000000:00:07.0");
  CHECK(gpus[0]["pcie_gen_max"] == 5);
  CHECK(gpus[0]["pcie_width_max"] == 16);
  // Short or garbled lines are skipped, not misread.
  CHECK(fb::parseNvidiaSmiGpus("0, NVIDIA H200, only three\n\n").empty());
  CHECK(fb::nvidiaSmiQueryFields().find("driver_version") != std::string::npos);
}

TEST_CASE("fingerprint: invalid UTF-8 in the environment is replaced, dump() works", "[fingerprint]") {
  fbtest::TempDir d;
  fb::FingerprintOptions o;
  o.root = d.str();
  o.runCommands = false;
  o.env = {{"NCCL_SOCKET_IFNAME", std::string("eth\xff")}};
  auto fp = fb::collectLocalFingerprint(o);
  CHECK_NOTHROW(fp.dump());
  CHECK(fp["env"]["NCCL_SOCKET_IFNAME"].get<std::string>().rfind("eth", 0) == 0);
}

// The bug this fixes: fabricbench (verbs build) stored verbs discovery under "rdma" in its own
// layout ({devices: [...]}), which the comparison did not understand: RDMA firmware and rate
// differences between nodes were never flagged. Discovery is now merged into the one layout.
TEST_CASE("fingerprint: verbs discovery is merged into rdma.<dev>; fw/rate/MTU differences flagged", "[fingerprint]") {
  auto discovery = [](const std::string& fw, const std::string& rate, int mtu) {
    return json{{"devices", json::array({{{"name", "rxe0"},
                                          {"fw_ver", fw},
                                          {"node_type", "RNIC"},
                                          {"ports", json::array({{{"port", 1},
                                                                  {"state", "ACTIVE"},
                                                                  {"rate", rate},
                                                                  {"link_layer", "Ethernet (RoCE)"},
                                                                  {"active_mtu", mtu}}})}}})},
                {"selected", {{"device", "rxe0"}, {"gid_index", 1}}}};
  };
  fbtest::TempDir a, b;
  fb::FingerprintOptions oa, ob;
  oa.root = a.str("nofs");
  ob.root = b.str("nofs");
  oa.runCommands = ob.runCommands = false;
  oa.rdmaDiscovery = discovery("0.0.0", "10 GbE", 1024);
  ob.rdmaDiscovery = discovery("0.0.1", "25 GbE", 4096);
  auto fa = fb::collectLocalFingerprint(oa), fbb = fb::collectLocalFingerprint(ob);
  CHECK(fa["rdma"]["rxe0"]["fw_ver"] == "0.0.0");
  CHECK(fa["rdma"]["rxe0"]["ports"]["1"]["rate"] == "10 GbE");
  CHECK(fa["rdma_selection"]["selected"]["gid_index"] == 1);
  CHECK_FALSE(fa["rdma"].contains("devices"));
  fa["hostname"] = "nodeA";
  fbb["hostname"] = "nodeB";
  auto m = fb::mergeFingerprints({fa, fbb});
  std::map<std::string, json> diffs;
  for (auto& d : m["differences"]) diffs[d["key"]] = d["values"];
  CHECK(diffs["rdma.rxe0.fw_ver"]["nodeB"] == "0.0.1");
  CHECK(diffs["rdma.rxe0.ports.1.rate"]["nodeA"] == "10 GbE");
  CHECK(diffs["rdma.rxe0.ports.1.active_mtu"]["nodeB"] == 4096);
  // sysfs values win over verbs' where both exist; verbs adds what sysfs lacks
  json sys = {{"mlx5_0", {{"fw_ver", "20.35.1012"}, {"ports", {{"1", {{"rate", "100 Gb/sec (4X EDR)"}}}}}}}};
  json merged = fb::mergeRdmaDiscovery(sys, {{"devices", json::array({{{"name", "mlx5_0"}, {"fw_ver", "x"},
      {"ports", json::array({{{"port", 1}, {"rate", "EDR 100 Gb/s (4X)"}, {"active_mtu", 4096}}})}}})}});
  CHECK(merged["mlx5_0"]["fw_ver"] == "20.35.1012");
  CHECK(merged["mlx5_0"]["ports"]["1"]["rate"] == "100 Gb/sec (4X EDR)");
  CHECK(merged["mlx5_0"]["ports"]["1"]["active_mtu"] == 4096);
  // a run.json written before the fix (verbs layout under "rdma") is compared all the same
  json oldA = {{"hostname", "nodeA"}, {"rdma", discovery("0.0.0", "10 GbE", 1024)}};
  json oldB = {{"hostname", "nodeB"}, {"rdma", discovery("0.0.2", "10 GbE", 1024)}};
  auto mo = fb::mergeFingerprints({oldA, oldB});
  REQUIRE(mo["differences"].size() == 1);
  CHECK(mo["differences"][0]["key"] == "rdma.rxe0.fw_ver");
}

namespace {
// Every dot path of `want` whose value differs in `got` (or is absent), one INFO line each.
int differences(const json& got, const json& want) {
  int bad = 0;
  auto g = got.flatten(), w = want.flatten();
  for (auto& [k, v] : w.items())
    if (!g.contains(k) || g[k] != v) {
      ++bad;
      UNSCOPED_INFO(k << ": got " << (g.contains(k) ? g[k].dump() : std::string("(absent)")) << ", want " << v.dump());
    }
  for (auto& [k, v] : g.items())
    if (!w.contains(k)) {
      ++bad;
      UNSCOPED_INFO(k << ": unexpected " << v.dump());
    }
  return bad;
}
}  // namespace

TEST_CASE("fingerprint: GPUs and RDMA are the machine inventory's (recorded machines)", "[fingerprint]") {
  const std::string fixtures = FB_TEST_DATA_ROOT "/doctor";
  fb::FingerprintOptions o;
  o.root = fixtures + "/h200x2";
  o.runCommands = true;  // the inventory runs the fixture's nvidia-smi; ethtool/git find nothing to do there
  o.commandTimeout = std::chrono::milliseconds(5000);
  o.env = {{"NCCL_DEBUG", "INFO"}};
  auto fp = fb::collectLocalFingerprint(o);
  CHECK(fp["gpu_source"] == "nvidia-smi");
  CHECK(fp["gpu_source_why"] == "NVML: no NVML on a recorded machine");
  CHECK(fp["gpu_query"] == "nvidia-smi");
  CHECK(fp["gpu_count"] == 2);
  CHECK(fp["gpu_driver"] == "580.159.04");
  // the same objects as the 9-field query recorded on that host gives
  auto want = fb::parseNvidiaSmiGpus(fbtest::slurp(FB_REPORT_TEST_DATA "/nvidia_smi_query_gpu_2xH200.csv"));
  REQUIRE(want.size() == 2);
  CHECK(differences(fp["gpus"], want) == 0);

  // RDMA in the fingerprint's one layout: {dev: {fw_ver, hca_type, board_id, node_type, ports, netdevs}}
  o.root = fixtures + "/roce_bad";
  o.runCommands = false;
  auto rb = fb::collectLocalFingerprint(o);
  json port1 = {{"state", "4: ACTIVE"}, {"phys_state", "5: LinkUp"}, {"rate", "100 Gb/sec (4X EDR)"},
                {"link_layer", "Ethernet"}};
  json port2 = {{"state", "1: DOWN"}, {"phys_state", "3: Disabled"}, {"rate", "10 Gb/sec (4X SDR)"},
                {"link_layer", "Ethernet"}};
  auto dev = [](const json& port) {
    return json{{"fw_ver", "20.28.1002"}, {"hca_type", "MT4123"}, {"board_id", "MT_0000000222"},
                {"node_type", "1: CA"}, {"ports", {{"1", port}}}, {"netdevs", json::array()}};
  };
  json wantRdma = {{"mlx5_0", dev(port1)}, {"mlx5_1", dev(port2)}};
  CHECK(differences(rb["rdma"], wantRdma) == 0);
  CHECK(rb["gpu_query"] == "not queried");
  CHECK_FALSE(rb.contains("gpu_source"));
}

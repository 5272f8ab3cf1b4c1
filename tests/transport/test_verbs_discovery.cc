// Host-side unit tests of the verbs discovery rules (no RDMA device needed): GID parsing and
// classification, the sysfs GID table reader on a fake tree, rate names, GID choice and the
// ConfigErrors for bad settings.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/error.h"
#include "transport/verbs/discovery.h"

using namespace fb;
using namespace fb::verbs;

namespace {

GidEntry gid(int index, const std::string& sysfs, const std::string& type, const std::string& netdev = "eth0") {
  GidEntry g;
  g.index = index;
  REQUIRE(parseSysfsGid(sysfs, g.raw));
  g.text = gidText(g.raw);
  g.type = type;
  g.netdev = netdev;
  return g;
}

const char* kLinkLocal = "fe80:0000:0000:0000:a83c:7fff:fe9d:1b63";
const char* kV4 = "0000:0000:0000:0000:0000:ffff:c000:0201";         // ::ffff:192.0.2.1
const char* kV4Loop = "0000:0000:0000:0000:0000:ffff:7f00:0001";     // ::ffff:127.0.0.1
const char* kV4Apipa = "0000:0000:0000:0000:0000:ffff:a9fe:0001";    // ::ffff:169.254.0.1
const char* kV6Global = "2001:0db8:0000:0000:0000:0000:0000:0042";

PortInfo rocePort(std::vector<GidEntry> gids) {
  PortInfo p;
  p.port = 1;
  p.state = "ACTIVE";
  p.active = true;
  p.ethernet = true;
  p.activeMtu = 1024;
  p.gidTableLen = 16;
  p.gids = std::move(gids);
  return p;
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

}  // namespace

TEST_CASE("GID text and classes", "[verbs][unit]") {
  auto ll = gid(0, kLinkLocal, "RoCEv2");
  CHECK(ll.text == "fe80::a83c:7fff:fe9d:1b63");
  CHECK(ll.linkLocal());
  CHECK_FALSE(ll.routableIpv4());
  auto v4 = gid(1, kV4, "RoCEv2");
  CHECK(v4.text == "::ffff:192.0.2.1");
  CHECK(v4.ipv4Mapped());
  CHECK(v4.ipv4() == "192.0.2.1");
  CHECK(v4.routableIpv4());
  CHECK_FALSE(gid(2, kV4Loop, "RoCEv2").routableIpv4());
  CHECK_FALSE(gid(3, kV4Apipa, "RoCEv2").routableIpv4());
  CHECK(gid(4, kV6Global, "RoCEv2").globalIpv6());
  std::array<std::uint8_t, 16> raw{};
  CHECK_FALSE(parseSysfsGid("fe80::1", raw));
  CHECK_FALSE(parseSysfsGid("zz80:0000:0000:0000:a83c:7fff:fe9d:1b63", raw));
}

TEST_CASE("rate names from active_speed x active_width", "[verbs][unit]") {
  double g = 0;
  CHECK(rateText(64, 2, false, &g) == "HDR 200 Gb/s (4X)");
  CHECK(g == 200);
  CHECK(rateText(32, 2, false) == "EDR 100 Gb/s (4X)");
  CHECK(rateText(128, 2, false) == "NDR 400 Gb/s (4X)");
  CHECK(rateText(16, 2, false) == "FDR 56 Gb/s (4X)");
  CHECK(rateText(32, 2, true) == "100 GbE");
  CHECK(rateText(64, 16, true) == "100 GbE");  // 2 x 50G lanes
  CHECK(rateText(1, 1, true) == "2.5 GbE");    // what rxe reports
  CHECK(rateText(3, 1, false).find("unknown") != std::string::npos);
}

TEST_CASE("GID table read from a sysfs tree with types and netdevs", "[verbs][unit]") {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("fb-sysfs-" + std::to_string(::getpid()));
  fs::path port = root / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "1";
  fs::create_directories(port / "gids");
  fs::create_directories(port / "gid_attrs" / "types");
  fs::create_directories(port / "gid_attrs" / "ndevs");
  auto put = [](const fs::path& p, const std::string& s) { std::ofstream(p) << s << "\n"; };
  const char* zero = "0000:0000:0000:0000:0000:0000:0000:0000";
  put(port / "gids" / "0", kLinkLocal);
  put(port / "gids" / "1", kLinkLocal);
  put(port / "gids" / "2", "0000:0000:0000:0000:0000:ffff:0a00:0005");
  put(port / "gids" / "3", "0000:0000:0000:0000:0000:ffff:0a00:0005");
  put(port / "gids" / "4", zero);
  put(port / "gid_attrs" / "types" / "0", "IB/RoCE v1");
  put(port / "gid_attrs" / "types" / "1", "RoCE v2");
  put(port / "gid_attrs" / "types" / "2", "IB/RoCE v1");
  put(port / "gid_attrs" / "types" / "3", "RoCE v2");
  for (int i = 0; i < 4; ++i) put(port / "gid_attrs" / "ndevs" / std::to_string(i), "ens1f0np0");
  auto t = readGidTable(fb::topo::Machine(root.string()), "mlx5_0", 1, 8);
  fs::remove_all(root);
  REQUIRE(t.size() == 4);  // the zero entry is dropped, missing ones skipped
  CHECK(t[0].type == "RoCEv1");
  CHECK(t[1].type == "RoCEv2");
  CHECK(t[3].text == "::ffff:10.0.0.5");
  CHECK(t[3].netdev == "ens1f0np0");
  std::string why;
  CHECK(chooseGid("mlx5_0", rocePort(t), -1, &why) == 3);  // RoCEv2 + IPv4, not the v1 twin at 2
  CHECK(why.find("RoCEv2") != std::string::npos);
}

TEST_CASE("default GID choice", "[verbs][unit]") {
  std::string why;
  // rxe on dummy0: 0 = link-local, 1 = ::ffff:192.0.2.1 -> 1
  CHECK(chooseGid("rxe0", rocePort({gid(0, kLinkLocal, "RoCEv2"), gid(1, kV4, "RoCEv2")}), -1, &why) == 1);
  // loopback / APIPA addresses don't count; a global IPv6 RoCEv2 GID is the fallback
  CHECK(chooseGid("x", rocePort({gid(0, kV4Loop, "RoCEv2"), gid(1, kV4Apipa, "RoCEv2"), gid(2, kV6Global, "RoCEv2")}),
                  -1, &why) == 2);
  CHECK(why.find("IPv6") != std::string::npos);
  // RoCEv1 with IPv4 is not chosen by default
  CHECK(errorOf([] { chooseGid("x", rocePort({gid(0, kLinkLocal, "RoCEv2"), gid(1, kV4, "RoCEv1")}), -1, nullptr); })
            .find("no RoCEv2 GID bound to a routable address") != std::string::npos);
  // InfiniBand: LID addressing
  PortInfo ib = rocePort({gid(0, "fe80:0000:0000:0000:0002:c903:0001:0001", "IB", "")});
  ib.ethernet = false;
  CHECK(chooseGid("mlx5_0", ib, -1, &why) == -1);
  CHECK(chooseGid("mlx5_0", ib, 0, &why) == 0);
}

TEST_CASE("bad settings are ConfigErrors that name the fix", "[verbs][unit]") {
  PortInfo p = rocePort({gid(0, kLinkLocal, "RoCEv2", "dummy0"), gid(1, kV4, "RoCEv2", "dummy0")});
  std::string e = errorOf([&] { chooseGid("rxe0", p, 7, nullptr); });
  CHECK(e.find("GID index 7 does not exist on rxe0 port 1") != std::string::npos);
  CHECK(e.find("--gid-index 1") != std::string::npos);
  e = errorOf([&] { chooseGid("rxe0", p, 0, nullptr); });
  CHECK(e.find("link-local") != std::string::npos);
  CHECK(e.find("--gid-index 1") != std::string::npos);
  CHECK(chooseGid("rxe0", p, 1, nullptr) == 1);
  // a port whose only GID is link-local: the fix is an address on the netdev
  e = errorOf([&] { chooseGid("rxe0", rocePort({gid(0, kLinkLocal, "RoCEv2", "dummy0")}), -1, nullptr); });
  CHECK(e.find("ip addr add") != std::string::npos);
  CHECK(e.find("dummy0") != std::string::npos);

  DeviceInfo d;
  d.name = "rxe0";
  d.ports = {p};
  TransportOptions o;
  o.verbsDevice = "mlx5_9";
  e = errorOf([&] { select({d}, o); });
  CHECK(e.find("no RDMA device named 'mlx5_9'") != std::string::npos);
  CHECK(e.find("rxe0") != std::string::npos);
  o.verbsDevice = "rxe0";
  o.verbsPort = 2;
  e = errorOf([&] { select({d}, o); });
  CHECK(e.find("no port 2") != std::string::npos);
  o.verbsPort = 0;
  Selection s = select({d}, o);
  CHECK(s.gidIndex == 1);
  CHECK(s.summary().find("RoCEv2 GID 1 ::ffff:192.0.2.1 (dummy0)") != std::string::npos);
  CHECK_THROWS_AS(select({}, TransportOptions{}), UnavailableError);
  try {
    select({}, TransportOptions{});
  } catch (const UnavailableError& u) {
    CHECK(std::string(u.what()) == "no RDMA device");
  }
}

TEST_CASE("gpudirect: verdict from the peer-memory module and the dma-buf probe") {
  auto s = gpuDirectVerdict("nvidia_peermem", false, false, "");
  CHECK(s.possible);
  CHECK(s.via == "nvidia_peermem");
  CHECK(s.text().rfind("yes (nvidia_peermem module loaded", 0) == 0);
  s = gpuDirectVerdict("", false, false, "");
  CHECK_FALSE(s.possible);
  CHECK(s.via.empty());
  CHECK(s.text() == "no (nvidia_peermem not loaded; dma-buf not tried: this build has no CUDA)");
  s = gpuDirectVerdict("", true, false, "cuInit: CUDA_ERROR_NO_DEVICE");
  CHECK_FALSE(s.possible);
  CHECK(s.text() == "no (nvidia_peermem not loaded; dma-buf: cuInit: CUDA_ERROR_NO_DEVICE)");
  s = gpuDirectVerdict("", true, true, "dma-buf: rxe0 registered a 2 MiB buffer of GPU 0");
  CHECK(s.possible);
  CHECK(s.via == "dma-buf");
  // the module wins over a failed probe
  s = gpuDirectVerdict("nv_peer_mem", true, false, "whatever");
  CHECK(s.possible);
  CHECK(s.via == "nv_peer_mem");
}

TEST_CASE("gpudirect: the peer-memory module is found in /sys/module") {
  char tmpl[] = "/tmp/fb-sysmod-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  std::string root = tmpl;
  CHECK(loadedPeermemModule(root) == "");
  std::filesystem::create_directories(root + "/nv_peer_mem");
  CHECK(loadedPeermemModule(root) == "nv_peer_mem");
  std::filesystem::create_directories(root + "/nvidia_peermem");
  CHECK(loadedPeermemModule(root) == "nvidia_peermem");
  std::filesystem::remove_all(root);
  // this host: the answer matches what /sys/module holds, and the probe says why
  bool loaded = std::filesystem::exists("/sys/module/nvidia_peermem") || std::filesystem::exists("/sys/module/nv_peer_mem");
  auto st = probeGpuDirect("no-such-device", std::chrono::seconds(20));
  CHECK(!st.why.empty());
  if (loaded) CHECK(st.possible);
  else CHECK_FALSE(st.possible);  // no module, and the dma-buf probe cannot open a device that does not exist
}

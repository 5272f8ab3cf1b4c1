// What RDMA hardware this machine has, and which device / port / GID a run should use.
//
// Devices and ports come from libibverbs (ibv_query_device / ibv_query_port); the board id and the
// GID table with each entry's type (IB, RoCE v1, RoCE v2) and the netdev it belongs to come from
// the machine inventory (topo::readRdma: /sys/class/infiniband/<dev>/ports/<p>/{gids,
// gid_attrs/types,gid_attrs/ndevs}/<i>, what the kernel's RoCE GID cache reports). The choice
// rules are pure functions over these structs so they are unit-tested without hardware.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topology/inventory.h"
#include "transport/transport.h"
#include "transport/verbs/gpudirect.h"
#include "transport/verbs/verbs.h"

namespace fb::verbs {

struct GidEntry {
  int index = 0;
  std::array<std::uint8_t, 16> raw{};
  std::string text;    // "fe80::a83c:7fff:fe9d:1b63", "::ffff:192.0.2.1"
  std::string type;    // "RoCEv2", "RoCEv1", "IB", "" (unknown)
  std::string netdev;  // "dummy0", "" for IB
  bool zero() const;
  bool linkLocal() const;      // fe80::/10
  bool ipv4Mapped() const;     // ::ffff:a.b.c.d
  std::string ipv4() const;    // "192.0.2.1" when ipv4Mapped
  // An IPv4-mapped GID whose address routes: not 0.0.0.0, 127/8, 169.254/16.
  bool routableIpv4() const;
  bool globalIpv6() const;     // not mapped, not link-local, not zero, not ::1
};

struct PortInfo {
  int port = 1;
  std::string state;         // "ACTIVE", "DOWN", ...
  bool active = false;
  bool ethernet = false;     // link layer Ethernet = RoCE; otherwise InfiniBand
  int activeMtu = 0;         // bytes
  int maxMtu = 0;
  int mtuEnum = 0;           // enum ibv_mtu of the active MTU
  int speedCode = 0;         // ibv_port_attr::active_speed
  int widthCode = 0;         // ibv_port_attr::active_width
  double gbps = 0;           // nominal data rate (lanes x lane rate)
  std::string rate;          // "HDR 200 Gb/s (4X)", "100 GbE"
  std::uint16_t lid = 0;
  std::uint32_t maxMsgSize = 0;
  int gidTableLen = 0;
  std::vector<GidEntry> gids;  // non-zero entries only
  std::string linkLayer() const { return ethernet ? "Ethernet (RoCE)" : "InfiniBand"; }
};

struct DeviceInfo {
  std::string name;     // "mlx5_0", "rxe0"
  std::string fwVer;
  std::string nodeGuid;
  std::string boardId;
  std::string nodeType; // "CA", "RNIC"
  std::vector<PortInfo> ports;
  // Filled by discover() / describe() (probeGpuDirect), not by discoverDevices(): the probe may
  // start CUDA, which the per-run device choice does not need.
  std::optional<GpuDirectStatus> gpuDirect;
};

// Every device and port (verbs), with sysfs facts from the inventory of `m`. Empty when there is
// no RDMA device (never throws for that).
std::vector<DeviceInfo> discoverDevices(const topo::Machine& m);
std::vector<DeviceInfo> discoverDevices();  // this machine
// The GID table of one inventory port (populated entries below tableLen, types normalised).
std::vector<GidEntry> gidTable(const topo::RdmaPortFacts& port, int tableLen);
// The same for device `dev` port `port` of machine `m` (empty when absent); for unit tests.
std::vector<GidEntry> readGidTable(const topo::Machine& m, const std::string& dev, int port, int tableLen);
// Parses "fe80:0000:...:1b63" (sysfs form) into raw bytes; false if malformed.
bool parseSysfsGid(const std::string& text, std::array<std::uint8_t, 16>& raw);
std::string gidText(const std::array<std::uint8_t, 16>& raw);  // inet_ntop(AF_INET6)

// "HDR 200 Gb/s (4X)" for InfiniBand, "100 GbE" for Ethernet; gbps gets the nominal rate.
std::string rateText(int speedCode, int widthCode, bool ethernet, double* gbps = nullptr);

// The device/port/GID a run uses and why.
struct Selection {
  DeviceInfo device;
  PortInfo port;
  int gidIndex = -1;             // -1: InfiniBand LID addressing without GRH
  std::optional<GidEntry> gid;
  std::string why;               // human sentence: why this device/port/GID
  std::string summary() const;   // one line: "rxe0 port 1, RoCEv2 GID 1 ::ffff:192.0.2.1 (dummy0), MTU 1024, ..."
};

// GID choice for one port. requested < 0: the first RoCEv2 GID bound to a routable IPv4
// address (then a RoCEv2 global IPv6 one); InfiniBand: LID addressing (-1). requested >= 0:
// validated. Throws ConfigError naming the fix (bad index, link-local, no usable GID).
int chooseGid(const std::string& dev, const PortInfo& port, int requested, std::string* why);

// Applies options (--ib-dev, --ib-port, --gid-index) to the discovered devices.
// Throws UnavailableError("no RDMA device") when there is none, ConfigError for bad settings.
Selection select(const std::vector<DeviceInfo>& devices, const TransportOptions& options);

// The selected port, opened for QPs: its device's context and the port's addressing (port,
// GID index, link layer, active MTU, LID, GID). The GID is read again through verbs: sysfs and
// the device must agree on the bytes sent. (VerbsTransport and fabricbench-verbs.)
struct OpenPort {
  Context ctx;
  PortSel port;
};
OpenPort openPort(const Selection& sel);

nlohmann::json toJson(const std::vector<DeviceInfo>& devices);
// discoverDevices() as JSON for run.json (each device with "gpudirect": {possible, via, why}),
// with the selection under "selected" (or "error").
nlohmann::json discover(const TransportOptions& options = {});
// Human-readable listing for fabricbench --list: every device ("gpudirect: yes/no (why)"), port,
// GID; the choice and why.
std::string describe(const TransportOptions& options = {});

}  // namespace fb::verbs

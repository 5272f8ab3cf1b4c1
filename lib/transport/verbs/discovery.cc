#include "transport/verbs/discovery.h"

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/error.h"
#include "transport/verbs/verbs.h"

namespace fb::verbs {
namespace {

std::string normalizeGidType(const std::string& t) {
  if (t == "RoCE v2") return "RoCEv2";
  if (t == "IB/RoCE v1" || t == "RoCE v1") return "RoCEv1";
  if (t == "IB") return "IB";
  return t;
}

std::string numText(double v) {
  char b[32];
  if (std::fabs(v - std::round(v)) < 1e-9) std::snprintf(b, sizeof b, "%.0f", v);
  else std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

const char* stateText(int s) {
  switch (s) {
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "NOP";
  }
}

std::string hex64(std::uint64_t beGuid) {
  std::uint64_t g = be64toh(beGuid);
  char b[32];
  std::snprintf(b, sizeof b, "%04x:%04x:%04x:%04x", unsigned(g >> 48) & 0xffff, unsigned(g >> 32) & 0xffff,
                unsigned(g >> 16) & 0xffff, unsigned(g) & 0xffff);
  return b;
}

std::string gidListText(const PortInfo& p) {
  std::string s;
  for (const auto& g : p.gids) {
    if (!s.empty()) s += ", ";
    s += std::to_string(g.index) + " " + g.text + (g.type.empty() ? "" : " " + g.type);
  }
  return s.empty() ? "none" : s;
}

}  // namespace

// ------------------------------------------------------------------ GidEntry
bool GidEntry::zero() const {
  for (auto b : raw) if (b) return false;
  return true;
}
bool GidEntry::linkLocal() const { return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80; }
bool GidEntry::ipv4Mapped() const {
  for (int i = 0; i < 10; ++i) if (raw[i]) return false;
  return raw[10] == 0xff && raw[11] == 0xff;
}
std::string GidEntry::ipv4() const {
  if (!ipv4Mapped()) return "";
  return std::to_string(raw[12]) + "." + std::to_string(raw[13]) + "." + std::to_string(raw[14]) + "." +
         std::to_string(raw[15]);
}
bool GidEntry::routableIpv4() const {
  if (!ipv4Mapped()) return false;
  if (raw[12] == 0 || raw[12] == 127) return false;
  if (raw[12] == 169 && raw[13] == 254) return false;
  return true;
}
bool GidEntry::globalIpv6() const {
  if (zero() || ipv4Mapped() || linkLocal()) return false;
  bool loop = raw[15] == 1;
  for (int i = 0; i < 15; ++i) if (raw[i]) loop = false;
  return !loop;
}

bool parseSysfsGid(const std::string& text, std::array<std::uint8_t, 16>& raw) {
  // sysfs writes 8 groups of 4 hex digits separated by ':'
  std::string hex;
  for (char c : text) {
    if (c == ':') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    hex += c;
  }
  if (hex.size() != 32) return false;
  for (int i = 0; i < 16; ++i) raw[i] = static_cast<std::uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return true;
}

std::string gidText(const std::array<std::uint8_t, 16>& raw) {
  char b[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, raw.data(), b, sizeof b);
  return b;
}

std::vector<GidEntry> gidTable(const topo::RdmaPortFacts& port, int tableLen) {
  std::vector<GidEntry> out;
  for (const auto& g : port.gids) {
    if (g.index >= tableLen) break;
    GidEntry e;
    e.index = g.index;
    if (!parseSysfsGid(g.gid, e.raw) || e.zero()) continue;
    e.text = gidText(e.raw);
    if (!g.type.empty()) e.type = normalizeGidType(g.type);
    e.netdev = g.netdev;
    out.push_back(e);
  }
  return out;
}

namespace {
const topo::RdmaPortFacts* findPort(const std::vector<topo::RdmaDeviceFacts>& devs, const std::string& dev, int port) {
  for (const auto& d : devs)
    if (d.name == dev)
      for (const auto& p : d.ports)
        if (p.port == port) return &p;
  return nullptr;
}
}  // namespace

std::vector<GidEntry> readGidTable(const topo::Machine& m, const std::string& dev, int port, int tableLen) {
  auto devs = topo::readRdma(m);
  const auto* p = findPort(devs, dev, port);
  return p ? gidTable(*p, tableLen) : std::vector<GidEntry>{};
}

std::string rateText(int speedCode, int widthCode, bool ethernet, double* gbps) {
  const char* name = nullptr;
  double lane = 0;
  switch (speedCode) {
    case 1: name = "SDR"; lane = 2.5; break;
    case 2: name = "DDR"; lane = 5; break;
    case 4: name = "QDR"; lane = 10; break;
    case 8: name = "FDR10"; lane = 10; break;
    case 16: name = "FDR"; lane = 14; break;
    case 32: name = "EDR"; lane = 25; break;
    case 64: name = "HDR"; lane = 50; break;
    case 128: name = "NDR"; lane = 100; break;
    default: break;
  }
  int lanes = 0;
  switch (widthCode) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: break;
  }
  if (!name || !lanes) {
    if (gbps) *gbps = 0;
    return "unknown rate (speed code " + std::to_string(speedCode) + ", width code " + std::to_string(widthCode) + ")";
  }
  double total = lane * lanes;
  if (gbps) *gbps = total;
  if (ethernet) return numText(total) + " GbE";
  return std::string(name) + " " + numText(total) + " Gb/s (" + std::to_string(lanes) + "X)";
}

// ------------------------------------------------------------------ discovery
std::vector<DeviceInfo> discoverDevices() { return discoverDevices(topo::Machine("/")); }

std::vector<DeviceInfo> discoverDevices(const topo::Machine& m) {
  std::vector<DeviceInfo> out;
  const auto sysfs = topo::readRdma(m);
  DeviceList holder;
  for (ibv_device* d : deviceList(holder)) {
    DeviceInfo di;
    di.name = ibv_get_device_name(d);
    di.nodeType = ibv_node_type_str(d->node_type);
    errno = 0;
    Context ctx(ibv_open_device(d));
    if (!ctx) {
      di.fwVer = "(cannot open: " + errText(errno) + ")";
      out.push_back(di);
      continue;
    }
    ibv_device_attr da{};
    if (int rc = ibv_query_device(ctx.get(), &da); rc != 0) {
      di.fwVer = "(ibv_query_device failed: " + errText(rc) + ")";
      out.push_back(di);
      continue;
    }
    di.fwVer = da.fw_ver;
    di.nodeGuid = hex64(da.node_guid);
    for (const auto& d : sysfs)
      if (d.name == di.name) di.boardId = d.boardId;
    for (int p = 1; p <= da.phys_port_cnt; ++p) {
      ibv_port_attr pa{};
      if (ibv_query_port(ctx.get(), static_cast<std::uint8_t>(p), &pa) != 0) continue;
      PortInfo pi;
      pi.port = p;
      pi.state = stateText(pa.state);
      pi.active = pa.state == IBV_PORT_ACTIVE;
      pi.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
      pi.mtuEnum = pa.active_mtu;
      pi.activeMtu = mtuBytes(pa.active_mtu);
      pi.maxMtu = mtuBytes(pa.max_mtu);
      pi.speedCode = pa.active_speed;
      pi.widthCode = pa.active_width;
      pi.rate = rateText(pa.active_speed, pa.active_width, pi.ethernet, &pi.gbps);
      pi.lid = pa.lid;
      pi.maxMsgSize = pa.max_msg_sz;
      pi.gidTableLen = pa.gid_tbl_len;
      if (const auto* sp = findPort(sysfs, di.name, p)) pi.gids = gidTable(*sp, pa.gid_tbl_len);
      if (pi.gids.empty()) {  // no sysfs (containers): ask verbs; types unknown
        for (int i = 0; i < pa.gid_tbl_len; ++i) {
          ibv_gid g{};
          if (ibv_query_gid(ctx.get(), static_cast<std::uint8_t>(p), i, &g) != 0) break;
          GidEntry e;
          e.index = i;
          std::copy(std::begin(g.raw), std::end(g.raw), e.raw.begin());
          if (e.zero()) continue;
          e.text = gidText(e.raw);
          e.type = pi.ethernet ? "" : "IB";
          pi.gids.push_back(e);
        }
      }
      di.ports.push_back(pi);
    }
    out.push_back(di);
  }
  return out;
}

// ------------------------------------------------------------------ choice
int chooseGid(const std::string& dev, const PortInfo& port, int requested, std::string* why) {
  std::string where = dev + " port " + std::to_string(port.port);
  const GidEntry* best = nullptr;
  std::string reason;
  for (const auto& g : port.gids) {
    if (g.type == "RoCEv2" && g.routableIpv4()) {
      best = &g;
      reason = "the first RoCEv2 GID bound to a routable IPv4 address";
      break;
    }
  }
  if (!best) {
    for (const auto& g : port.gids) {
      if (g.type == "RoCEv2" && g.globalIpv6()) {
        best = &g;
        reason = "no RoCEv2 GID has a routable IPv4 address; the first RoCEv2 GID with a global IPv6 address";
        break;
      }
    }
  }
  auto suggestion = [&]() -> std::string {
    if (best) return "use --gid-index " + std::to_string(best->index) + " (" + best->type + " " + best->text + ")";
    return "";
  };

  if (requested >= 0) {
    const GidEntry* g = nullptr;
    for (const auto& e : port.gids) if (e.index == requested) g = &e;
    if (!g) {
      std::string fix = suggestion();
      throw ConfigError("verbs: GID index " + std::to_string(requested) + " does not exist on " + where + " (table of " +
                        std::to_string(port.gidTableLen) + ", populated: " + gidListText(port) + "); " +
                        (fix.empty() ? "choose a populated index" : fix) + " or omit --gid-index");
    }
    if (port.ethernet && g->linkLocal()) {
      std::string fix = suggestion();
      throw ConfigError("verbs: GID index " + std::to_string(requested) + " on " + where + " is the link-local " +
                        g->text + ", which does not route beyond one L2 segment; " +
                        (fix.empty() ? "give " + (g->netdev.empty() ? std::string("the netdev") : g->netdev) +
                                           " an IPv4 address and choose its GID"
                                     : fix) +
                        " or omit --gid-index");
    }
    if (port.ethernet && g->type == "RoCEv1" && why) *why = "--gid-index " + std::to_string(requested) + " (RoCEv1, as asked)";
    else if (why) *why = "--gid-index " + std::to_string(requested) + " (as asked)";
    return requested;
  }
  if (!port.ethernet) {
    if (why) *why = "InfiniBand: LID addressing within the subnet (no GRH); --gid-index selects a GID";
    return -1;
  }
  if (!best) {
    std::string nd;
    for (const auto& g : port.gids) if (!g.netdev.empty()) nd = g.netdev;
    throw ConfigError("verbs: no RoCEv2 GID bound to a routable address on " + where + " (GIDs: " + gidListText(port) +
                      "); give " + (nd.empty() ? std::string("its netdev") : nd) +
                      " an IPv4 address (ip addr add A.B.C.D/N dev " + (nd.empty() ? std::string("<netdev>") : nd) +
                      ") or pass --gid-index");
  }
  if (why) *why = reason + " (--gid-index overrides)";
  return best->index;
}

Selection select(const std::vector<DeviceInfo>& devices, const TransportOptions& o) {
  if (devices.empty()) throw UnavailableError("no RDMA device");
  const DeviceInfo* dev = nullptr;
  std::string names;
  for (const auto& d : devices) names += (names.empty() ? "" : ", ") + d.name;
  std::string why;
  if (!o.verbsDevice.empty()) {
    for (const auto& d : devices) if (d.name == o.verbsDevice) dev = &d;
    if (!dev)
      throw ConfigError("verbs: no RDMA device named '" + o.verbsDevice + "' (devices here: " + names +
                        "); pass one of them to --ib-dev, or omit --ib-dev");
    why = "--ib-dev " + o.verbsDevice;
  }
  const PortInfo* port = nullptr;
  auto pickPort = [&](const DeviceInfo& d) -> const PortInfo* {
    if (o.verbsPort > 0) {
      for (const auto& p : d.ports) if (p.port == o.verbsPort) return &p;
      return nullptr;
    }
    for (const auto& p : d.ports) if (p.active) return &p;
    return nullptr;
  };
  if (dev) {
    port = pickPort(*dev);
    if (!port && o.verbsPort > 0)
      throw ConfigError("verbs: " + dev->name + " has no port " + std::to_string(o.verbsPort) + " (it has " +
                        std::to_string(dev->ports.size()) + "); fix --ib-port or omit it");
    if (!port) throw UnavailableError("verbs: " + dev->name + " has no ACTIVE port (check the cable / `ibstat`)");
  } else {
    for (const auto& d : devices) {
      const PortInfo* p = pickPort(d);
      if (p && p->active) {
        dev = &d;
        port = p;
        break;
      }
    }
    if (!dev) throw UnavailableError("verbs: no RDMA device has an ACTIVE port (devices: " + names + ")");
    why = "first device with an ACTIVE port";
  }
  if (!port->active)
    throw ConfigError("verbs: " + dev->name + " port " + std::to_string(port->port) + " is " + port->state +
                      ", not ACTIVE; choose another --ib-port/--ib-dev");

  Selection s;
  s.device = *dev;
  s.port = *port;
  std::string gidWhy;
  s.gidIndex = chooseGid(dev->name, *port, o.gidIndex, &gidWhy);
  for (const auto& g : port->gids) if (g.index == s.gidIndex) s.gid = g;
  s.why = dev->name + ": " + why + "; port " + std::to_string(port->port) + ": " +
          (o.verbsPort > 0 ? "--ib-port" : "first ACTIVE port") + "; GID: " + gidWhy;
  return s;
}

std::string Selection::summary() const {
  std::ostringstream os;
  os << device.name << " port " << port.port << ", " << (port.ethernet ? "RoCE" : "InfiniBand");
  if (gid) os << ", " << (gid->type.empty() ? "GID" : gid->type + " GID") << " " << gidIndex << " " << gid->text
              << (gid->netdev.empty() ? "" : " (" + gid->netdev + ")");
  else os << ", LID " << port.lid;
  os << ", MTU " << port.activeMtu << ", " << port.rate << ", fw " << device.fwVer;
  return os.str();
}

nlohmann::json toJson(const std::vector<DeviceInfo>& devices) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& d : devices) {
    nlohmann::json jd = {{"name", d.name}, {"fw_ver", d.fwVer}, {"node_guid", d.nodeGuid}, {"board_id", d.boardId},
                         {"node_type", d.nodeType}};
    nlohmann::json ports = nlohmann::json::array();
    for (const auto& p : d.ports) {
      nlohmann::json jp = {{"port", p.port},          {"state", p.state},       {"link_layer", p.linkLayer()},
                           {"active_mtu", p.activeMtu}, {"max_mtu", p.maxMtu},    {"rate", p.rate},
                           {"rate_gbps", p.gbps},     {"lid", p.lid},           {"max_msg_size", p.maxMsgSize},
                           {"gid_table_len", p.gidTableLen}};
      nlohmann::json gids = nlohmann::json::array();
      for (const auto& g : p.gids)
        gids.push_back({{"index", g.index}, {"gid", g.text}, {"type", g.type}, {"netdev", g.netdev},
                        {"link_local", g.linkLocal()}, {"ipv4", g.ipv4()}});
      jp["gids"] = gids;
      ports.push_back(jp);
    }
    jd["ports"] = ports;
    if (d.gpuDirect)
      jd["gpudirect"] = {{"possible", d.gpuDirect->possible}, {"via", d.gpuDirect->via}, {"why", d.gpuDirect->why}};
    arr.push_back(jd);
  }
  return arr;
}

nlohmann::json discover(const TransportOptions& o) {
  auto devs = discoverDevices();
  for (auto& d : devs) d.gpuDirect = probeGpuDirect(d.name);
  nlohmann::json j = {{"devices", toJson(devs)}};
  try {
    Selection s = select(devs, o);
    j["selected"] = {{"device", s.device.name}, {"port", s.port.port}, {"gid_index", s.gidIndex},
                     {"gid", s.gid ? s.gid->text : ""}, {"gid_type", s.gid ? s.gid->type : ""},
                     {"summary", s.summary()}, {"why", s.why}};
  } catch (const Error& e) {
    j["error"] = e.what();
  }
  return j;
}

std::string describe(const TransportOptions& o) {
  auto devs = discoverDevices();
  std::ostringstream os;
  if (devs.empty()) return "verbs: no RDMA device\n";
  for (const auto& d : devs) {
    os << "  " << d.name << "  fw " << d.fwVer << "  node_guid " << d.nodeGuid << "  " << d.nodeType << "\n";
    os << "    gpudirect: " << probeGpuDirect(d.name).text() << "\n";
    for (const auto& p : d.ports) {
      os << "    port " << p.port << ": " << p.state << ", " << p.linkLayer() << ", MTU " << p.activeMtu << " (max "
         << p.maxMtu << "), " << p.rate;
      if (!p.ethernet) os << ", LID " << p.lid;
      os << "\n";
      for (const auto& g : p.gids)
        os << "      GID " << g.index << "  " << g.text << "  " << (g.type.empty() ? "?" : g.type)
           << (g.netdev.empty() ? "" : "  " + g.netdev) << (g.linkLocal() ? "  (link-local)" : "")
           << (g.routableIpv4() ? "  (IPv4 " + g.ipv4() + ")" : "") << "\n";
    }
  }
  try {
    Selection s = select(devs, o);
    os << "  chosen: " << s.summary() << "\n  why: " << s.why << "\n";
  } catch (const Error& e) {
    os << "  chosen: none: " << e.what() << "\n";
  }
  return os.str();
}

OpenPort openPort(const Selection& sel) {
  OpenPort o;
  o.port.port = sel.port.port;
  o.port.gidIndex = sel.gidIndex;
  o.port.ethernet = sel.port.ethernet;
  o.port.activeMtu = static_cast<ibv_mtu>(sel.port.mtuEnum);
  o.port.lid = sel.port.lid;
  if (sel.gid) o.port.gid = sel.gid->raw;
  o.ctx = openDevice(sel.device.name);
  if (o.port.gidIndex >= 0) {
    ibv_gid g{};
    FB_VERBS_CHECK(ibv_query_gid(o.ctx.get(), static_cast<std::uint8_t>(o.port.port), o.port.gidIndex, &g),
                   "(GID index ", o.port.gidIndex, ")");
    std::copy(std::begin(g.raw), std::end(g.raw), o.port.gid.begin());
  }
  return o;
}

}  // namespace fb::verbs

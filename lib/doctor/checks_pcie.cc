// PCIe checks: ACS on the bridges above GPUs and RDMA NICs, IOMMU, links trained below maximum.
#include <set>

#include "doctor/doctor.h"
#include "doctor/nic_placement.h"
#include "doctor/util.h"

namespace fb::doctor {
using namespace util;

namespace {

struct PciDev {
  std::string bdf;   // 0000:05:00.0
  std::string what;  // "GPU", "NIC mlx5_0"
  std::vector<std::string> bridges;  // upstream bridges, root port first
};

// The NVIDIA GPUs and PCI RDMA NICs with the bridges above them (nic_placement's sysfs reading).
std::vector<PciDev> devicesOfInterest(const Machine& m) {
  std::vector<PciDev> out;
  auto map = readPcieMap(m);
  for (const auto& [bdf, p] : map.gpus) out.push_back({bdf, "GPU " + bdf, p.bridges});
  for (const auto& [dev, p] : map.nics) out.push_back({p.bdf, "NIC " + dev + " (" + p.bdf + ")", p.bridges});
  return out;
}

// ACS control register of a PCI function from its config space, or nullopt (why in `why`).
std::optional<unsigned> acsControl(const std::string& cfg, std::string& why) {
  if (cfg.size() < 0x104) {
    why = "config space is " + std::to_string(cfg.size()) + " bytes (extended capabilities need root)";
    return std::nullopt;
  }
  auto u32 = [&](std::size_t off) {
    return unsigned(static_cast<unsigned char>(cfg[off])) | unsigned(static_cast<unsigned char>(cfg[off + 1])) << 8 |
           unsigned(static_cast<unsigned char>(cfg[off + 2])) << 16 |
           unsigned(static_cast<unsigned char>(cfg[off + 3])) << 24;
  };
  std::size_t off = 0x100;
  for (int guard = 0; off >= 0x100 && off + 8 <= cfg.size() && guard < 64; ++guard) {
    unsigned hdr = u32(off);
    if (hdr == 0 || hdr == 0xffffffffu) break;
    if ((hdr & 0xffff) == 0x000d) return (u32(off + 4) >> 16) & 0xffff;  // ACS control at +6
    off = hdr >> 20;
  }
  why = "no ACS capability";
  return std::nullopt;
}

double gts(const std::string& s) {
  try {
    return std::stod(s);
  } catch (...) {
    return 0;
  }
}

}  // namespace

void checkPcie(const Machine& m, NodeReport& r) {
  auto devs = devicesOfInterest(m);

  // ---- ACS
  {
    const std::string src = "/sys/bus/pci/devices/<bridge>/config (ACS extended capability, control register SrcValid bit)";
    if (devs.empty()) {
      add(r, "pcie.acs", Verdict::kSkip, "no NVIDIA GPU or PCI RDMA NIC found in /sys/bus/pci/devices", src);
    } else {
      std::set<std::string> seen;
      std::vector<std::string> on, off, unread;
      bool switchPortOn = false;
      for (const auto& d : devs)
        for (std::size_t i = 0; i < d.bridges.size(); ++i) {
          const std::string& b = d.bridges[i];
          if (!seen.insert(b).second) continue;
          std::string why;
          auto cfg = m.readBinary("/sys/bus/pci/devices/" + b + "/config");
          auto ctl = cfg ? acsControl(*cfg, why) : std::nullopt;
          if (!cfg) why = "config unreadable";
          std::string label = b + (i == 0 ? " (root port)" : "") + " above " + d.what;
          if (!ctl) {
            if (why != "no ACS capability") unread.push_back(b + ": " + why);
            continue;
          }
          if (*ctl & 1) {
            on.push_back(label + ": ACSCtl SrcValid+ (0x" + [&] {
              char buf[16];
              std::snprintf(buf, sizeof buf, "%04x", *ctl & 0xffffu);
              return std::string(buf);
            }() + ")");
            if (i > 0) switchPortOn = true;
          } else {
            off.push_back(b);
          }
        }
      if (seen.empty()) {
        add(r, "pcie.acs", Verdict::kPass,
            "no PCIe bridge between the GPUs/NICs and the root complex (" + std::to_string(devs.size()) +
                " devices on a root bus, e.g. a VM): nothing to redirect",
            src);
      } else if (!on.empty()) {
        add(r, "pcie.acs", switchPortOn ? Verdict::kFail : Verdict::kWarn,
            "ACS source validation on: " + join(on, "; ") +
                ": peer-to-peer requests are redirected through the root complex (halved P2P/GPUDirect bandwidth, "
                "nccl-tests issue 112)",
            src,
            "disable ACS in the BIOS, or each boot as root: setpci -s <bridge> ECAP_ACS+0x6.w=0000 (NCCL "
            "troubleshooting: PCI Access Control Services)");
      } else if (!unread.empty() && off.empty()) {
        add(r, "pcie.acs", Verdict::kSkip, "cannot read ACS: " + join(unread, "; "), src);
      } else {
        add(r, "pcie.acs", Verdict::kPass,
            std::to_string(seen.size()) + " bridge(s) above GPUs/NICs, none with SrcValid+" +
                (unread.empty() ? "" : " (unread: " + join(unread, "; ") + ")"),
            src);
      }
    }
  }

  // ---- IOMMU
  {
    const std::string src = "/sys/class/iommu, /sys/kernel/iommu_groups, /proc/cmdline";
    auto units = m.list("/sys/class/iommu");
    auto groups = m.list("/sys/kernel/iommu_groups");
    std::string cmd = m.line("/proc/cmdline");
    std::vector<std::string> args;
    for (const auto& a : split(cmd, ' '))
      if (a.find("iommu") != std::string::npos) args.push_back(a);
    bool pt = false, off = false;
    for (const auto& a : args) {
      if (a == "iommu=pt" || a == "iommu.passthrough=1" || a == "iommu.passthrough=on") pt = true;
      if (a == "intel_iommu=off" || a == "amd_iommu=off" || a == "iommu=off") off = true;
    }
    std::string argText = args.empty() ? "no iommu argument on the kernel command line" : "kernel: " + join(args, " ");
    if (units.empty() && (groups.empty() || off)) {
      add(r, "pcie.iommu", Verdict::kPass, "IOMMU off (no /sys/class/iommu unit); " + argText, src);
    } else if (pt) {
      add(r, "pcie.iommu", Verdict::kPass,
          "IOMMU on in passthrough mode (" + (units.empty() ? std::string("?") : join(units, ",")) + "; " + argText + ")", src);
    } else {
      add(r, "pcie.iommu", Verdict::kWarn,
          "IOMMU translating DMA (" + (units.empty() ? std::to_string(groups.size()) + " IOMMU groups" : join(units, ",")) +
              "; " + argText + "): PCI P2P traffic may be sent to the root complex",
          src, "boot with iommu=pt (or disable VT-d/AMD-Vi in the BIOS) on bare-metal GPU nodes (NCCL troubleshooting: IOMMU)");
    }
  }

  // ---- links trained below their maximum
  {
    const std::string src = "/sys/bus/pci/devices/<dev>/{current,max}_link_{speed,width}";
    if (devs.empty()) {
      add(r, "pcie.link", Verdict::kSkip, "no NVIDIA GPU or PCI RDMA NIC found in /sys/bus/pci/devices", src);
    } else {
      std::vector<std::string> all, bad, slowGpu, unknown;
      for (const auto& d : devs) {
        std::string b = "/sys/bus/pci/devices/" + d.bdf + "/";
        std::string cs = m.line(b + "current_link_speed"), ms = m.line(b + "max_link_speed");
        std::string cw = m.line(b + "current_link_width"), mw = m.line(b + "max_link_width");
        if (cs.empty() || ms.empty() || cw.empty() || mw.empty() || gts(ms) == 0) {
          unknown.push_back(d.what);
          continue;
        }
        std::string t = d.what + " " + cs + " x" + cw + " (max " + ms + " x" + mw + ")";
        all.push_back(t);
        bool narrow = std::atoi(cw.c_str()) < std::atoi(mw.c_str());
        bool slow = gts(cs) + 1e-6 < gts(ms);
        bool gpu = startsWith(d.what, "GPU");
        if (narrow || (slow && !gpu)) bad.push_back(t);
        else if (slow) slowGpu.push_back(t);
      }
      std::string unk = unknown.empty() ? "" : "; link attributes unreadable for " + join(unknown, ", ");
      if (!bad.empty())
        add(r, "pcie.link", Verdict::kFail, "trained below maximum: " + join(bad, "; ") + unk, src,
            "reseat the card / check the slot, riser and BIOS PCIe settings (NCCL models links from max_link_speed "
            "and cannot see a down-trained link)");
      else if (!slowGpu.empty())
        add(r, "pcie.link", Verdict::kWarn,
            "GPU link speed below maximum: " + join(slowGpu, "; ") +
                " (GPUs lower it when idle; a busy GPU must show the maximum)" + unk,
            src, "re-check while the GPU is busy (nvidia-smi -q -d PCIE); if it stays low, reseat / check the slot");
      else if (all.empty())
        add(r, "pcie.link", Verdict::kSkip, "link attributes unreadable" + unk, src);
      else
        add(r, "pcie.link", Verdict::kPass, "at maximum: " + join(all, "; ") + unk, src);
    }
  }
}

}  // namespace fb::doctor

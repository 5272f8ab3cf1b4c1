#!/usr/bin/env python3
"""Writes the doctor's fixture machines under tests/data/doctor/ (run from the repository root;
the output is committed). Each folder is a Machine root (lib/topology/machine.h): a sysfs/procfs
tree plus _commands/ (command outputs), _env, _statvfs, _interfaces, _uid.

  h200x2     the 2xH200 host (topo -m / topo -p2p r / PCIe link values saved from it, see
             tests/data/topology): NV18, P2P OK, MIG off, no peermem, no RDMA NIC
  rtx4090x2  GeForce pair behind a PCIe switch whose downstream port has ACS SrcValid+, a GPU link
             trained at x8 of x16, IOMMU translating, P2P not supported, a ConnectX-5 at SYS, no peermem
  a100_mig   A100s with MIG enabled, nvidia_peermem loaded, ConnectX-6 at PXB from the GPUs
  roce_ok    a healthy RoCE node: ConnectX-6 fw 20.35, RoCEv2 GID on 10.0.0.5, MTU 4096/9000, ECN
             on, memlock unlimited, variables naming what exists
  roce_bad   RoCE without a routable GID, MTU 1024/1500, ECN/PFC off, ConnectX-6 fw below
             20.31.1014, a second port down, memlock 64 KiB, cgroup rdma.max limit, 64 MiB
             /dev/shm, variables naming a missing interface and HCA, NCCL_P2P_DISABLE/NCCL_NET=Socket
  roce_v6    roce_ok with a global IPv6 RoCEv2 GID only
  ib_down    an InfiniBand HCA whose only port is down, no /dev/shm
  nic_aligned, nic_crossed, gdr_possible, gdr_no_peermem
             PCIe trees around the GPUs of two public NCCL logs (see pcie_node below)
"""
import os, shutil, struct, sys

OUT = sys.argv[1] if len(sys.argv) > 1 else "tests/data/doctor"
TOPO = "tests/data/topology"
# The machine inventory's one GPU query (lib/topology/inventory.cc kInventoryGpuQuery).
QUERY = ("nvidia-smi_--query-gpu=index,name,uuid,pci.bus_id,memory.total,driver_version,vbios_version,"
         "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,mig.mode.current"
         "_--format=csv,noheader,nounits")


def gpu_row(index, name, bus, mig, driver, uuid="[N/A]", mem="[N/A]", vbios="[N/A]", pcie=("[N/A]",) * 4):
    """One line of QUERY's answer; the synthetic machines leave what no check reads as [N/A]."""
    return ", ".join([str(index), name, uuid, bus, mem, driver, vbios, *pcie, mig]) + "\n"



def w(root, rel, text, mode="w"):
    p = os.path.join(root, rel.lstrip("/"))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, mode) as f:
        f.write(text)


def link(root, rel, target):
    p = os.path.join(root, rel.lstrip("/"))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if os.path.lexists(p):
        os.remove(p)
    os.symlink(target, p)


def config(acs_ctl=None):
    """4096-byte PCI config space; an ACS extended capability at 0x100 when acs_ctl is given."""
    b = bytearray(4096)
    b[0:4] = struct.pack("<HH", 0x8086, 0x1234)
    if acs_ctl is not None:
        b[0x100:0x104] = struct.pack("<I", 0x000D | (1 << 16) | (0 << 20))
        b[0x104:0x108] = struct.pack("<HH", 0x005F, acs_ctl)
    return bytes(b)


def pci(root, chain, leaf_attrs=None, acs=None, host="pci0000:00"):
    """chain = [root port BDF, ..., device BDF] below root complex `host`; bridges get a config space
    (acs: {bdf: ctl})."""
    path = "/sys/devices/" + host
    for i, bdf in enumerate(chain):
        path += "/" + bdf
        rel = os.path.relpath(os.path.join(root, path.lstrip("/")), os.path.join(root, "sys/bus/pci/devices"))
        link(root, "/sys/bus/pci/devices/" + bdf, rel)
        if i < len(chain) - 1:
            w(root, path + "/config", config((acs or {}).get(bdf, 0)), "wb")
            w(root, path + "/class", "0x060400\n")
            w(root, path + "/vendor", "0x10b5\n")
    for k, v in (leaf_attrs or {}).items():
        w(root, path + "/" + k, v + "\n")
    return path


def gpu_attrs(speed="32.0 GT/s PCIe", width="16", maxspeed="32.0 GT/s PCIe", maxwidth="16"):
    return {"vendor": "0x10de", "class": "0x030200", "current_link_speed": speed, "current_link_width": width,
            "max_link_speed": maxspeed, "max_link_width": maxwidth}


def common(root, env="", memlock="unlimited", shm=(64 << 30, 60 << 30), uid=1000, cgroup="0::/user.slice/job\n",
           interfaces="lo up 127.0.0.1\neth0 up 192.168.1.10\n", cmdline="BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet"):
    w(root, "/proc/self/limits",
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max open files            1048576              1048576              files     \n"
      f"Max locked memory         {memlock:<20} {memlock:<20} bytes     \n")
    w(root, "/proc/self/cgroup", cgroup)
    w(root, "/proc/cmdline", cmdline + "\n")
    w(root, "/proc/sys/kernel/osrelease", "6.1.0-28-amd64\n")
    w(root, "/_env", env)
    w(root, "/_statvfs", "" if shm is None else f"/dev/shm {shm[0]} {shm[1]}\n")
    w(root, "/_interfaces", interfaces)
    w(root, "/_uid", f"{uid}\n")
    w(root, "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0", "")
    link(root, "/usr/lib/x86_64-linux-gnu/libibverbs.so.1", "libibverbs.so.1.14.44.0")


def rdma_port(root, dev, port, state, phys, rate, ll, gids=(), netdev=""):
    d = f"/sys/class/infiniband/{dev}/ports/{port}/"
    w(root, d + "state", state + "\n")
    w(root, d + "phys_state", phys + "\n")
    w(root, d + "rate", rate + "\n")
    w(root, d + "link_layer", ll + "\n")
    for idx, gid, typ, nd in gids:
        w(root, d + f"gids/{idx}", gid + "\n")
        w(root, d + f"gid_attrs/types/{idx}", typ + "\n")
        w(root, d + f"gid_attrs/ndevs/{idx}", nd + "\n")
    # an unused slot: sysfs returns EINVAL for it; here it is a zero GID
    w(root, d + "gids/15", "0000:0000:0000:0000:0000:0000:0000:0000\n")


def rdma_dev(root, dev, fw, hca_type, board, chain=None, host="pci0000:00", numa=None):
    d = f"/sys/class/infiniband/{dev}/"
    w(root, d + "fw_ver", fw + "\n")
    w(root, d + "hca_type", hca_type + "\n")
    w(root, d + "board_id", board + "\n")
    w(root, d + "node_type", "1: CA\n")
    if chain:
        attrs = {"vendor": "0x15b3", "class": "0x020700", "current_link_speed": "16.0 GT/s PCIe",
                 "current_link_width": "16", "max_link_speed": "16.0 GT/s PCIe", "max_link_width": "16"}
        if numa is not None:
            attrs["numa_node"] = str(numa)
        path = pci(root, chain, attrs, host=host)
        link(root, d + "device", os.path.relpath(os.path.join(root, path.lstrip("/")), os.path.join(root, d.lstrip("/"))))


def devinfo(entries):
    """entries: [(hca, fw, [(port, state, max_mtu, active_mtu, link_layer)])] -> ibv_devinfo text"""
    mtu = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
    out = ""
    for hca, fw, ports in entries:
        out += f"hca_id:\t{hca}\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t{fw}\n\tphys_port_cnt:\t\t\t{len(ports)}\n"
        for port, st, mx, act, ll in ports:
            out += (f"\t\tport:\t{port}\n\t\t\tstate:\t\t\t{st}\n\t\t\tmax_mtu:\t\t{mx} ({mtu[mx]})\n"
                    f"\t\t\tactive_mtu:\t\t{act} ({mtu[act]})\n\t\t\tsm_lid:\t\t\t0\n\t\t\tlink_layer:\t\t{ll}\n\n")
    return out


ROCE_GID_LL = (0, "fe80:0000:0000:0000:0ac0:ebff:fe12:3456", "IB/RoCE v1", "eth2")
ROCE_GID_LL2 = (1, "fe80:0000:0000:0000:0ac0:ebff:fe12:3456", "RoCE v2", "eth2")
ROCE_GID_V1 = (2, "0000:0000:0000:0000:0000:ffff:0a00:0005", "IB/RoCE v1", "eth2")
ROCE_GID_V2 = (3, "0000:0000:0000:0000:0000:ffff:0a00:0005", "RoCE v2", "eth2")


def h200x2(root):
    common(root, env="NCCL_NVLS_ENABLE=0\n")
    # recorded on the 2xH200 host: uuid, memory, vbios from tests/data/topology/
    # nvidia_smi_query_gpu_2xH200.csv, PCIe current/max from tests/data/topology/gpu_query.csv
    w(root, "/_commands/" + QUERY,
      gpu_row(0, "NVIDIA H200", "00000000:00:06.0", "Disabled", "580.159.04", "GPU-dcb12c3d-829c-e1af-f387-4975af14d0d4",
              "143771", "96.00.A5.00.1A", ("5", "5", "16", "16")) +
      gpu_row(1, "NVIDIA H200", "00000000:00:07.0", "Disabled", "580.159.04", "GPU-3a819cdb-d032-6280-36f1-3b58795dc238",
              "143771", "96.00.A5.00.1A", ("5", "5", "16", "16")))
    # the recordings themselves, linked (one copy, in tests/data/topology)
    for cmd, rec in (("nvidia-smi_topo_-m", "topo_m.txt"), ("nvidia-smi_topo_-p2p_r", "topo_p2p_r.txt"),
                     ("nvidia-smi_nvlink_-s", "nvlink_s.txt")):
        link(root, "/_commands/" + cmd, os.path.relpath(os.path.join(TOPO, rec), os.path.join(root, "_commands")))
    for bdf in ("0000:00:06.0", "0000:00:07.0"):  # on the root bus of a VM: no bridge above
        pci(root, [bdf], gpu_attrs())
    w(root, "/sys/module/nvidia/version", "580.159.04\n")


def rtx4090x2(root):
    common(root, cmdline="BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro intel_iommu=on")
    w(root, "/sys/class/iommu/dmar0/devices/.keep", "")
    w(root, "/_commands/" + QUERY, gpu_row(0, "NVIDIA GeForce RTX 4090", "00000000:03:00.0", "[N/A]", "550.54.14") +
                                   gpu_row(1, "NVIDIA GeForce RTX 4090", "00000000:04:00.0", "[N/A]", "550.54.14"))
    w(root, "/_commands/nvidia-smi_topo_-m",
      "\t\x1b[4mGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
      "GPU0\t X \tPHB\tSYS\t0-15\t0\t\tN/A\nGPU1\tPHB\t X \tSYS\t0-15\t0\t\tN/A\n"
      "NIC0\tSYS\tSYS\t X \t\t\t\t\n\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n\n")
    w(root, "/_commands/nvidia-smi_topo_-p2p_r",
      " \t\x1b[4mGPU0\tGPU1\t\x1b[0m\n GPU0\tX\tCNS\t\n GPU1\tCNS\tX\t\n\nLegend:\n\n  X    = Self\n  OK   = Status Ok\n")
    # root port 00:01.0 -> switch upstream 01:00.0 -> downstream 02:08.0 / 02:10.0 -> GPUs
    pci(root, ["0000:00:01.0", "0000:01:00.0", "0000:02:08.0", "0000:03:00.0"], gpu_attrs(width="8"),
        acs={"0000:02:08.0": 0x001D})
    pci(root, ["0000:00:01.0", "0000:01:00.0", "0000:02:10.0", "0000:04:00.0"], gpu_attrs(speed="2.5 GT/s PCIe"))
    # a ConnectX-5 on the other socket (SYS from both GPUs)
    rdma_dev(root, "mlx5_0", "16.35.2000", "MT4119", "MT_0000000008", ["0000:00:1c.0", "0000:81:00.0"])
    rdma_port(root, "mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "100 Gb/sec (4X EDR)", "InfiniBand")


def a100_mig(root):
    common(root, interfaces="lo up 127.0.0.1\nib0 up 10.1.0.7\n")
    w(root, "/_commands/" + QUERY, gpu_row(0, "NVIDIA A100-SXM4-80GB", "00000000:07:00.0", "Enabled", "535.129.03") +
                                   gpu_row(1, "NVIDIA A100-SXM4-80GB", "00000000:0F:00.0", "Disabled", "535.129.03"))
    w(root, "/_commands/nvidia-smi_topo_-m",
      "\t\x1b[4mGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
      "GPU0\t X \tNV12\tPXB\t0-63\t0\t\tN/A\nGPU1\tNV12\t X \tPXB\t0-63\t0\t\tN/A\n"
      "NIC0\tPXB\tPXB\t X \t\t\t\t\n\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n\n"
      "NIC Legend:\n\n  NIC0: mlx5_0\n\n")
    w(root, "/_commands/nvidia-smi_topo_-p2p_r",
      " \t\x1b[4mGPU0\tGPU1\t\x1b[0m\n GPU0\tX\tOK\t\n GPU1\tOK\tX\t\n\nLegend:\n\n  X    = Self\n")
    pci(root, ["0000:00:02.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"], gpu_attrs("16.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "16"))
    pci(root, ["0000:00:02.0", "0000:05:00.0", "0000:06:08.0", "0000:0f:00.0"], gpu_attrs("16.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "16"))
    rdma_dev(root, "mlx5_0", "20.35.1012", "MT4123", "MT_0000000223", ["0000:00:02.0", "0000:05:00.0", "0000:06:10.0", "0000:0a:00.0"])
    rdma_port(root, "mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)", "InfiniBand")
    w(root, "/_commands/ibv_devinfo", devinfo([("mlx5_0", "20.35.1012", [(1, "PORT_ACTIVE (4)", 4096, 4096, "InfiniBand")])]))
    w(root, "/sys/module/nvidia_peermem/version", "535.129.03\n")


def roce_ok(root):
    common(root, env="NCCL_SOCKET_IFNAME=eth2\nNCCL_IB_HCA=mlx5_0:1\nOMPI_MCA_btl_tcp_if_include=10.0.0.0/24\n",
           interfaces="lo up 127.0.0.1\neth0 up 192.168.1.10\neth2 up 10.0.0.5\n")
    rdma_dev(root, "mlx5_0", "20.35.1012", "MT4123", "MT_0000000222", ["0000:00:03.0", "0000:41:00.0"])
    rdma_port(root, "mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "100 Gb/sec (4X EDR)", "Ethernet",
              [ROCE_GID_LL, ROCE_GID_LL2, ROCE_GID_V1, ROCE_GID_V2], "eth2")
    w(root, "/sys/class/net/eth2/mtu", "9000\n")
    for side in ("roce_np", "roce_rp"):
        for prio in range(8):
            w(root, f"/sys/class/net/eth2/ecn/{side}/enable/{prio}", "1\n" if prio == 3 else "0\n")
    w(root, "/_commands/ibv_devinfo", devinfo([("mlx5_0", "20.35.1012", [(1, "PORT_ACTIVE (4)", 4096, 4096, "Ethernet")])]))


def roce_bad(root):
    common(root, memlock="65536", shm=(64 << 20, 60 << 20), uid=1000,
           cgroup="0::/slurm/uid_1000/job_42\n",
           env="NCCL_SOCKET_IFNAME=eth9\nNCCL_IB_HCA=mlx5_3\nNCCL_P2P_DISABLE=1\nNCCL_NET=Socket\n",
           interfaces="lo up 127.0.0.1\neth0 up 192.168.1.10\neth2 up -\n")
    w(root, "/sys/fs/cgroup/slurm/uid_1000/job_42/rdma.max", "mlx5_0 hca_handle=2 hca_object=100\n")
    w(root, "/sys/fs/cgroup/slurm/rdma.max", "")
    rdma_dev(root, "mlx5_0", "20.28.1002", "MT4123", "MT_0000000222", ["0000:00:03.0", "0000:41:00.0"])
    rdma_port(root, "mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "100 Gb/sec (4X EDR)", "Ethernet",
              [ROCE_GID_LL, ROCE_GID_LL2], "eth2")
    rdma_dev(root, "mlx5_1", "20.28.1002", "MT4123", "MT_0000000222", ["0000:00:03.0", "0000:41:00.1"])
    rdma_port(root, "mlx5_1", 1, "1: DOWN", "3: Disabled", "10 Gb/sec (4X SDR)", "Ethernet", [], "eth3")
    w(root, "/sys/class/net/eth2/mtu", "1500\n")
    for side in ("roce_np", "roce_rp"):
        for prio in range(8):
            w(root, f"/sys/class/net/eth2/ecn/{side}/enable/{prio}", "0\n")
    w(root, "/_commands/mlnx_qos_-i_eth2",
      "DCBX mode: OS controlled\nPriority trust state: pcp\nPFC configuration:\n"
      "\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   0   0   0   0   0\n"
      "\tbuffer      0   0   0   0   0   0   0   0\n")
    w(root, "/_commands/ibv_devinfo", devinfo([("mlx5_0", "20.28.1002", [(1, "PORT_ACTIVE (4)", 4096, 1024, "Ethernet")]),
                                              ("mlx5_1", "20.28.1002", [(1, "PORT_DOWN (1)", 4096, 1024, "Ethernet")])]))


def roce_v6(root):
    """roce_ok with IPv6 only: the RoCEv2 GID on a global IPv6 address is the usable one."""
    roce_ok(root)
    d = "sys/class/infiniband/mlx5_0/ports/1/"
    for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        for i in ("2", "3"):
            os.remove(os.path.join(root, d, sub, i))
    rdma_port(root, "mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "100 Gb/sec (4X EDR)", "Ethernet",
              [(4, "2001:0db8:0000:0000:0000:0000:0000:0005", "RoCE v2", "eth2")], "eth2")


def ib_down(root):
    common(root, shm=None)
    rdma_dev(root, "mlx5_0", "28.39.1002", "MT4129", "MT_0000000838", ["0000:00:03.0", "0000:41:00.0"])
    rdma_port(root, "mlx5_0", 1, "1: DOWN", "2: Polling", "10 Gb/sec (4X SDR)", "InfiniBand")


# ---- GPU-NIC placement against NCCL's own logs (lib/doctor/nic_placement). The GPU bus IDs and NIC
# names are those of the public logs in tests/data/nccl-info; the PCIe trees around them are made up
# here (the logs do not show them) to put each NIC near its GPU or across a root complex.
def pcie_node(root, gpus, nics, peermem=False):
    """gpus: [(bdf, host bridge, numa, [bridges])]; nics: [(dev, bdf, host bridge, numa, [bridges], ll)]"""
    common(root)
    for bdf, host, numa, bridges in gpus:
        a = gpu_attrs()
        a["numa_node"] = str(numa)
        pci(root, bridges + [bdf], a, host=host)
    for dev, bdf, host, numa, bridges, ll in nics:
        rdma_dev(root, dev, "20.35.1012", "MT4123", "MT_0000000223", bridges + [bdf], host=host, numa=numa)
        rdma_port(root, dev, 1, "4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)", ll)
    if peermem:
        w(root, "/sys/module/nvidia_peermem/version", "535.129.03\n")


# Snellius log (h100-snellius-ib-2x4-pxn-gdrdma-nccl2.22.3-allreduce.log): GPUs 06/26/a6/c6:00.0 used
# NET/IB/2,1,4,3 = mlx5_3, mlx5_2, mlx5_5, mlx5_4; mlx5_0 is the unused RoCE port.
SNELLIUS_GPUS = [("0000:06:00.0", "pci0000:00", 0, ["0000:00:01.1", "0000:03:00.0", "0000:04:00.0"]),
                 ("0000:26:00.0", "pci0000:20", 0, ["0000:20:01.1", "0000:23:00.0", "0000:24:00.0"]),
                 ("0000:a6:00.0", "pci0000:a0", 1, ["0000:a0:01.1", "0000:a3:00.0", "0000:a4:00.0"]),
                 ("0000:c6:00.0", "pci0000:c0", 1, ["0000:c0:01.1", "0000:c3:00.0", "0000:c4:00.0"])]


def nic_aligned(root):
    """each GPU's NIC below the same PCIe switch as the GPU (PXB): no warning"""
    pcie_node(root, SNELLIUS_GPUS, [
        ("mlx5_0", "0000:41:00.0", "pci0000:40", 0, ["0000:40:01.1"], "Ethernet"),
        ("mlx5_3", "0000:05:00.0", "pci0000:00", 0, ["0000:00:01.1", "0000:03:00.0", "0000:04:01.0"], "InfiniBand"),
        ("mlx5_2", "0000:25:00.0", "pci0000:20", 0, ["0000:20:01.1", "0000:23:00.0", "0000:24:01.0"], "InfiniBand"),
        ("mlx5_5", "0000:a5:00.0", "pci0000:a0", 1, ["0000:a0:01.1", "0000:a3:00.0", "0000:a4:01.0"], "InfiniBand"),
        ("mlx5_4", "0000:c5:00.0", "pci0000:c0", 1, ["0000:c0:01.1", "0000:c3:00.0", "0000:c4:01.0"], "InfiniBand")],
        peermem=True)


def nic_crossed(root):
    """as nic_aligned with mlx5_4 (GPU c6's NIC) and mlx5_5 (GPU a6's) swapped between the c0 and a0
    root complexes' switches: both GPUs reach their NIC across root complexes (NODE, same NUMA node),
    the NIC below their own switch left unused"""
    pcie_node(root, SNELLIUS_GPUS, [
        ("mlx5_0", "0000:41:00.0", "pci0000:40", 0, ["0000:40:01.1"], "Ethernet"),
        ("mlx5_3", "0000:05:00.0", "pci0000:00", 0, ["0000:00:01.1", "0000:03:00.0", "0000:04:01.0"], "InfiniBand"),
        ("mlx5_2", "0000:25:00.0", "pci0000:20", 0, ["0000:20:01.1", "0000:23:00.0", "0000:24:01.0"], "InfiniBand"),
        ("mlx5_4", "0000:a5:00.0", "pci0000:a0", 1, ["0000:a0:01.1", "0000:a3:00.0", "0000:a4:01.0"], "InfiniBand"),
        ("mlx5_5", "0000:c5:00.0", "pci0000:c0", 1, ["0000:c0:01.1", "0000:c3:00.0", "0000:c4:01.0"], "InfiniBand")],
        peermem=True)


# a100pcie-roce-2x2-nogdr-nccl2.30.4.log: GPUs 69:00.0 and b1:00.0, NET/IB/2 = a virtual NIC of the
# two ports mlx5_0/mlx5_1 of one dual-port card, no GDRDMA.
ROCE2_GPUS = [("0000:69:00.0", "pci0000:64", 0, ["0000:64:02.0", "0000:67:00.0", "0000:68:00.0"]),
              ("0000:b1:00.0", "pci0000:b0", 1, ["0000:b0:02.0"])]
ROCE2_NICS = [("mlx5_0", "0000:6a:00.0", "pci0000:64", 0, ["0000:64:02.0", "0000:67:00.0", "0000:68:08.0"], "Ethernet"),
              ("mlx5_1", "0000:6a:00.1", "pci0000:64", 0, ["0000:64:02.0", "0000:67:00.0", "0000:68:08.0"], "Ethernet")]


def gdr_possible(root):
    """nvidia_peermem loaded, the card below GPU 69's switch (PXB); GPU b1 on the other socket (SYS)"""
    pcie_node(root, ROCE2_GPUS, ROCE2_NICS, peermem=True)


def gdr_no_peermem(root):
    """gdr_possible without a peer-memory module: GPUDirect RDMA is not possible, no GDR warning"""
    pcie_node(root, ROCE2_GPUS, ROCE2_NICS, peermem=False)


for name, fn in [("h200x2", h200x2), ("rtx4090x2", rtx4090x2), ("a100_mig", a100_mig), ("roce_ok", roce_ok),
                 ("roce_bad", roce_bad), ("roce_v6", roce_v6), ("ib_down", ib_down),
                 ("nic_aligned", nic_aligned), ("nic_crossed", nic_crossed), ("gdr_possible", gdr_possible),
                 ("gdr_no_peermem", gdr_no_peermem)]:
    root = os.path.join(OUT, name)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    fn(root)
    print("wrote", root)

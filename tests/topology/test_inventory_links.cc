// The machine inventory's GPU links (topo -m matrix), P2P read matrix and NVLink speeds, from the
// fake NVML (inventory_fixtures.h) and from the fixtures' nvidia-smi texts, compared cell by cell;
// the topology built from them; one NVML session shared by every reader.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "inventory_fixtures.h"
#include "topology/inventory.h"
#include "topology/topology.h"

using namespace fb::topo;

TEST_CASE("inventory GPU links: NVML's matrix and the topo -m fallback agree cell by cell", "[inventory]") {
  // h200x2: the two H200s reach each other over 18 NVLinks (through the NVSwitch: each link's
  // remote is the switch, not the other GPU); its recorded topo -m says NV18.
  FakeNvml f = h200Nvml();
  f.links.assign(2, std::vector<std::string>(18, "00000000:c0:00.0"));  // an NVSwitch's bus id
  auto nv = readGpuLinks(fixture("h200x2"), fakeSession(f));
  REQUIRE(nv.source == "nvml");
  CHECK(nv.nvmlWhy.empty());
  CHECK(f.shutdowns == f.inits);
  auto smi = readGpuLinks(fixture("h200x2"));  // no NVML on a recorded machine: the text, saying so
  REQUIRE(smi.source == "nvidia-smi");
  CHECK(smi.nvmlWhy == "no NVML on a recorded machine");
  const std::vector<std::vector<std::string>> want = {{"X", "NV18"}, {"NV18", "X"}};
  int wrong = 0;
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 2; ++j) {
      if (nv.code.at(i).at(j) != want[i][j]) ++wrong, UNSCOPED_INFO("nvml " << i << j << ": " << nv.code[i][j]);
      if (smi.code.at(i).at(j) != want[i][j]) ++wrong, UNSCOPED_INFO("smi " << i << j << ": " << smi.code[i][j]);
    }
  CHECK(wrong == 0);
  CHECK(nv.activeNvlinks == std::vector<int>{18, 18});
  CHECK(smi.activeNvlinks == std::vector<int>{-1, -1});
  // Direct links: 4 from GPU0 to GPU1 (and back), 2 more to the switch on GPU0 only: NV4 (a switch
  // link joins two GPUs only when both have one).
  f.links = {{"00000000:00:07.0", "00000000:00:07.0", "00000000:00:07.0", "00000000:00:07.0", "00000000:c0:00.0",
              "00000000:c0:00.0"},
             {"00000000:00:06.0", "00000000:00:06.0", "00000000:00:06.0", "00000000:00:06.0"}};
  auto direct = readGpuLinks(fixture("h200x2"), fakeSession(f));
  CHECK(direct.code.at(0).at(1) == "NV4");
  CHECK(direct.code.at(1).at(0) == "NV4");
  CHECK(direct.activeNvlinks == std::vector<int>{6, 4});
  // No NVLink: the common PCI ancestor names the cell as topo -m does.
  f.links = {{}, {}};
  for (auto [level, code] : {std::pair<unsigned, const char*>{10, "PIX"}, {20, "PXB"}, {30, "PHB"}, {40, "NODE"}, {50, "SYS"}}) {
    f.ancestor = level;
    auto pcie = readGpuLinks(fixture("h200x2"), fakeSession(f));
    CHECK(pcie.code.at(0).at(1) == code);
  }
  // rtx4090x2's recorded topo -m: PHB between the GPUs, the NIC column left out.
  auto rtx = readGpuLinks(fixture("rtx4090x2"));
  REQUIRE(rtx.code.size() == 2);
  CHECK(rtx.code[0][1] == "PHB");
  CHECK(rtx.code[1][0] == "PHB");
  // kNvml alone does not fall back; an NVML without the link functions says which it lacks.
  f.missing = {"nvmlDeviceGetNvLinkRemotePciInfo_v2"};
  auto lacking = readGpuLinks(fixture("h200x2"), fakeSession(f), GpuSource::kNvml);
  CHECK(lacking.source.empty());
  CHECK(lacking.nvmlWhy == "libnvidia-ml.so.1 lacks nvmlDeviceGetNvLinkRemotePciInfo_v2");
  CHECK(lacking.code.empty());
  auto fellBack = readGpuLinks(fixture("h200x2"), fakeSession(f));
  CHECK(fellBack.source == "nvidia-smi");
  CHECK(fellBack.nvmlWhy == "libnvidia-ml.so.1 lacks nvmlDeviceGetNvLinkRemotePciInfo_v2");
}

TEST_CASE("inventory compare: link matrices cell by cell, one difference per wrong cell", "[inventory]") {
  FakeNvml f = h200Nvml();
  f.links.assign(2, std::vector<std::string>(18, "00000000:c0:00.0"));
  auto nv = readGpuLinks(fixture("h200x2"), fakeSession(f), GpuSource::kNvml);
  auto smi = readGpuLinks(fixture("h200x2"), GpuSource::kNvidiaSmi);
  auto same = compareGpuMatrices("links", nv, smi);
  CHECK(same.differ == 0);
  CHECK(same.compared == 4);
  CHECK(same.lines.empty());
  f.links = {std::vector<std::string>(12, "00000000:c0:00.0"), std::vector<std::string>(12, "00000000:c0:00.0")};
  auto nv12 = readGpuLinks(fixture("h200x2"), fakeSession(f), GpuSource::kNvml);
  auto two = compareGpuMatrices("links", nv12, smi);
  CHECK(two.differ == 2);
  CHECK(two.compared == 4);
  REQUIRE(two.lines.size() == 2);
  CHECK(two.lines[0] == "compare: links GPU0-GPU1: NVML 'NV12', nvidia-smi 'NV18'");
  auto none = compareGpuMatrices("links", readGpuLinks(fixture("h200x2"), GpuSource::kNvml), smi);
  CHECK(none.differ == 1);
  CHECK(none.compared == 0);
  REQUIRE(none.lines.size() == 1);
  CHECK(none.lines[0] == "compare: links: not both sources answered (NVML: no, nvidia-smi: yes)");
  // A GPU more on one side: counted once, the common cells still compared.
  GpuLinkMatrix three = nv;
  three.code = {{"X", "NV18", "SYS"}, {"NV18", "X", "SYS"}, {"SYS", "SYS", "X"}};
  auto extra = compareGpuMatrices("links", three, smi);
  CHECK(extra.compared == 4);
  CHECK(extra.differ == 3);  // the GPU count, and rows 0 and 1 one cell longer
}

TEST_CASE("inventory P2P read: NVML's statuses and the topo -p2p r fallback agree cell by cell", "[inventory]") {
  FakeNvml f = h200Nvml();
  f.links.assign(2, {});
  auto nv = readGpuP2p(fixture("h200x2"), fakeSession(f));
  REQUIRE(nv.source == "nvml");
  CHECK(nv.nvmlWhy.empty());
  CHECK(f.shutdowns == f.inits);
  CHECK(nv.activeNvlinks.empty());
  auto smi = readGpuP2p(fixture("h200x2"));
  REQUIRE(smi.source == "nvidia-smi");
  CHECK(smi.nvmlWhy == "no NVML on a recorded machine");
  const std::vector<std::vector<std::string>> ok = {{"X", "OK"}, {"OK", "X"}};
  CHECK(nv.code == ok);
  CHECK(smi.code == ok);
  auto c = compareGpuMatrices("p2p", nv, smi);
  CHECK(c.differ == 0);
  CHECK(c.compared == 4);
  // rtx4090x2: the GeForce driver says chipset not supported; NVML status 1 reads the same.
  f.p2p = {{0, 1}, {1, 0}};
  auto nvCns = readGpuP2p(fixture("rtx4090x2"), fakeSession(f));
  auto smiCns = readGpuP2p(fixture("rtx4090x2"));
  const std::vector<std::vector<std::string>> cns = {{"X", "CNS"}, {"CNS", "X"}};
  CHECK(nvCns.code == cns);
  CHECK(smiCns.code == cns);
  CHECK(compareGpuMatrices("p2p", nvCns, smiCns).differ == 0);
  CHECK(compareGpuMatrices("p2p", nvCns, smi).differ == 2);
  // Every nvmlGpuP2PStatus_t as topo -p2p's legend names it.
  const std::vector<std::string> codes = {"OK", "CNS", "GNS", "TNS", "NS", "NS", "U", "U"};
  int wrong = 0;
  for (int st = 0; st < 8; ++st)
    if (p2pStatusCode(st) != codes[static_cast<std::size_t>(st)]) ++wrong, UNSCOPED_INFO(st << ": " << p2pStatusCode(st));
  CHECK(wrong == 0);
  // An NVML without the function: kNvml says so, kAuto falls back to the text saying why.
  f.missing = {"nvmlDeviceGetP2PStatus"};
  auto lacking = readGpuP2p(fixture("h200x2"), fakeSession(f), GpuSource::kNvml);
  CHECK(lacking.source.empty());
  CHECK(lacking.nvmlWhy == "libnvidia-ml.so.1 lacks nvmlDeviceGetP2PStatus");
  auto fellBack = readGpuP2p(fixture("h200x2"), fakeSession(f));
  CHECK(fellBack.source == "nvidia-smi");
  CHECK(fellBack.nvmlWhy == "libnvidia-ml.so.1 lacks nvmlDeviceGetP2PStatus");
  CHECK(fellBack.code == ok);
}

TEST_CASE("inventory NVLink speeds: NVML's fields and the nvlink -s fallback agree link by link", "[inventory]") {
  FakeNvml f = h200Nvml();
  f.links.assign(2, std::vector<std::string>(18, "00000000:c0:00.0"));
  auto nv = readNvlinkSpeeds(fixture("h200x2"), fakeSession(f));
  REQUIRE(nv.source == "nvml");
  CHECK(nv.nvmlWhy.empty());
  CHECK(f.shutdowns == f.inits);
  auto smi = readNvlinkSpeeds(fixture("h200x2"));  // the recorded nvlink -s: 18 x 26.562 GB/s per GPU
  REQUIRE(smi.source == "nvidia-smi");
  CHECK(smi.nvmlWhy == "no NVML on a recorded machine");
  int wrong = 0;
  for (const auto* s : {&nv, &smi}) {
    REQUIRE(s->gbps.size() == 2);
    for (const auto& [gpu, v] : s->gbps) {
      if (v.size() != 18) ++wrong, UNSCOPED_INFO(s->source << " GPU" << gpu << " " << v.size() << " links");
      for (double x : v)
        if (nvlinkSpeedText(x) != "26.562") ++wrong, UNSCOPED_INFO(s->source << " GPU" << gpu << " " << x);
    }
  }
  CHECK(wrong == 0);
  CHECK(nv.version.at(0) == std::vector<unsigned>(18, 4));
  CHECK(smi.version.empty());
  auto same = compareNvlinkSpeeds(nv, smi);
  CHECK(same.differ == 0);
  CHECK(same.compared == 2 + 36);  // a link count per GPU, then each link
  // Only the device's common speed answers: the same speeds.
  f.perLinkSpeed = false;
  auto common = readNvlinkSpeeds(fixture("h200x2"), fakeSession(f), GpuSource::kNvml);
  REQUIRE(common.source == "nvml");
  CHECK(compareNvlinkSpeeds(common, smi).differ == 0);
  // Neither: the fallback names the link and both answers.
  f.commonSpeed = false;
  auto fellBack = readNvlinkSpeeds(fixture("h200x2"), fakeSession(f));
  CHECK(fellBack.source == "nvidia-smi");
  CHECK(fellBack.nvmlWhy == "NVLink speed of GPU0 link 0: nvmlDeviceGetFieldValues: Unknown Error (per link), "
                            "Unknown Error (common)");
  CHECK(fellBack.gbps.at(1).size() == 18);
  f.perLinkSpeed = f.commonSpeed = true;
  // A slower link rate: every link differs; one link fewer on GPU1: the count differs once.
  f.linkMbps = 25000;
  auto slow = compareNvlinkSpeeds(readNvlinkSpeeds(fixture("h200x2"), fakeSession(f)), smi);
  CHECK(slow.differ == 36);
  REQUIRE(!slow.lines.empty());
  CHECK(slow.lines[0] == "compare: NVLink GPU0 active link #0: NVML 25.000 GB/s, nvidia-smi 26.562 GB/s");
  f.linkMbps = 26562;
  f.links[1].pop_back();
  auto fewer = compareNvlinkSpeeds(readNvlinkSpeeds(fixture("h200x2"), fakeSession(f)), smi);
  CHECK(fewer.differ == 1);
  CHECK(fewer.compared == 2 + 35);
  REQUIRE(fewer.lines.size() == 1);
  CHECK(fewer.lines[0] == "compare: NVLink GPU1: NVML has 17 active link(s), nvidia-smi 18");
  // No NVLink at all (rtx4090x2 has no nvlink -s recording): an empty list per GPU from NVML.
  f.links = {{}, {}};
  auto none = readNvlinkSpeeds(fixture("rtx4090x2"), fakeSession(f));
  REQUIRE(none.source == "nvml");
  CHECK(none.gbps.size() == 2);
  CHECK(none.gbps.at(0).empty());
  auto noText = readNvlinkSpeeds(fixture("rtx4090x2"));
  CHECK(noText.source.empty());
  CHECK(!noText.smiError.empty());
  CHECK(compareNvlinkSpeeds(none, noText).differ == 1);
}

TEST_CASE("topology from the inventory: NVML's answers first, the texts with their reason", "[inventory]") {
  FakeNvml f = h200Nvml();
  f.links.assign(2, std::vector<std::string>(18, "00000000:c0:00.0"));
  auto m = fixture("h200x2");
  auto gpus = readGpus(m, fakeSession(f)).gpus;
  auto links = readGpuLinks(m, fakeSession(f));
  auto p2p = readGpuP2p(m, fakeSession(f));
  auto speeds = readNvlinkSpeeds(m, fakeSession(f));
  auto t = buildTopology(gpuTopoMatrix(m).out, links, p2p, speeds, gpus);
  REQUIRE(t.gpus.size() == 2);
  CHECK(t.link(0, 1) == "NV18");
  CHECK(t.link(0, 2).empty());
  CHECK(t.p2pOk(0, 1));
  CHECK(t.gpus[1].nvlinkGBps.size() == 18);
  CHECK(t.gpus[0].cpuAffinity == "0-31");  // affinity from the topo -m text
  auto nom = gpuPeerNominal(t, "0000:00:06.0", {"0000:00:07.0"});
  CHECK(nom.gbps == Approx(18 * 26.562));
  CHECK(nom.basis == "18 NVLink links x 26.562 GB/s (NVML)");
  auto text = describe(t);
  CHECK(text.find("GPU links from nvml; P2P from nvml; NVLink speeds from nvml\n") != std::string::npos);
  CHECK(text.find("per direction (NVML)") != std::string::npos);
  // A recorded machine: every link fact from its texts, saying why not NVML.
  auto rec = readTopology(m);
  REQUIRE(rec.gpus.size() == 2);
  CHECK(rec.link(1, 0) == "NV18");
  CHECK(rec.p2pOk(1, 0));
  CHECK(rec.gpus[0].nvlinkGBps.size() == 18);
  CHECK(gpuPeerNominal(rec, "00000000:00:07.0", {"00000000:00:06.0"}).basis ==
        "18 NVLink links x 26.562 GB/s (nvidia-smi nvlink -s)");
  CHECK(describe(rec).find("GPU links from nvidia-smi (NVML: no NVML on a recorded machine); P2P from nvidia-smi "
                           "(NVML: no NVML on a recorded machine); NVLink speeds from nvidia-smi (NVML: no NVML on a "
                           "recorded machine)") != std::string::npos);
  // rtx4090x2: PHB and CNS from the texts, no NVLink speeds (none recorded).
  auto rtx = readTopology(fixture("rtx4090x2"));
  REQUIRE(rtx.gpus.size() == 2);
  CHECK(rtx.link(0, 1) == "PHB");
  CHECK(!rtx.p2pOk(0, 1));
  CHECK(rtx.gpus[0].nvlinkGBps.empty());
  CHECK(rtx.nvlink.source.empty());
}

TEST_CASE("inventory NVML: one session serves every reader, none opens its own", "[inventory]") {
  // Counted on the fake library: a reader that opened a session of its own would initialise NVML
  // again (inits > 1); one that ignored the caller's for the system's would not answer from NVML.
  FakeNvml f = h200Nvml();
  f.links.assign(2, std::vector<std::string>(18, "00000000:c0:00.0"));
  auto m = fixture("h200x2");
  {
    NvmlSession session(fakeLoader(f));
    REQUIRE(session.ok());
    CHECK(session.devices().size() == 2);
    CHECK(f.inits == 1);
    CHECK(readGpus(m, session).source == "nvml");
    CHECK(readGpuLinks(m, session).source == "nvml");
    CHECK(readGpuP2p(m, session).source == "nvml");
    CHECK(readNvlinkSpeeds(m, session).source == "nvml");
    auto t = readTopology(m, session);  // all four readers again
    REQUIRE(t.gpus.size() == 2);
    CHECK(t.gpuLinks.source == "nvml");
    CHECK(t.p2pRead.source == "nvml");
    CHECK(t.nvlink.source == "nvml");
    CHECK(t.link(0, 1) == "NV18");
    CHECK(f.inits == 1);
    CHECK(f.shutdowns == 0);
  }
  CHECK(f.inits == 1);
  CHECK(f.shutdowns == 1);
  // A session that did not open: every reader says why and falls back; nothing to shut down.
  f.initRc = 9;
  {
    NvmlSession failed(fakeLoader(f));
    CHECK_FALSE(failed.ok());
    CHECK(failed.why() == "nvmlInit_v2: Driver Not Loaded");
    auto t = readTopology(m, failed);
    CHECK(t.gpuLinks.nvmlWhy == "nvmlInit_v2: Driver Not Loaded");
    CHECK(t.p2pRead.nvmlWhy == "nvmlInit_v2: Driver Not Loaded");
    CHECK(t.nvlink.nvmlWhy == "nvmlInit_v2: Driver Not Loaded");
    CHECK(t.gpuLinks.source == "nvidia-smi");
    CHECK(f.inits == 2);
  }
  CHECK(f.shutdowns == 1);
  // Given no session: a recorded machine's is one closed session, whatever the fixture.
  const NvmlSession& rec = nvmlSessionOf(m);
  CHECK(&rec == &nvmlSessionOf(fixture("rtx4090x2")));
  CHECK_FALSE(rec.ok());
  CHECK(rec.why() == "no NVML on a recorded machine");
  // On the real machine nvidia-smi alone opens no NVML (the system's session is not asked for).
  CHECK(nvmlSessionOf(Machine("/"), GpuSource::kNvidiaSmi).why() == "not asked (nvidia-smi only)");
}

// lib/report/import_nccl_tests: nccl-tests output as people publish it (every 2.x format, launcher
// prefixes, several runs a file, elided rank lists), over every real log in tests/data.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "core/text.h"
#include "report/import.h"
#include "report/nccl_tests_lines.h"

namespace fs = std::filesystem;

namespace {
const std::string kData = std::string(FB_TEST_DATA_ROOT) + "/";

std::string extra(const fb::Sample& s, const std::string& k) {
  for (auto& [key, v] : s.extra)
    if (key == k) return v;
  return "";
}
}  // namespace

TEST_CASE("dump every log (diagnostic)", "[.dump]") {
  for (const char* dir : {"public-nccl-tests", "nccl-info", "nccl-tests-formats"}) {
    if (!fs::exists(kData + dir)) continue;
    std::vector<std::string> files;
    for (auto& e : fs::directory_iterator(kData + dir))
      if (e.path().extension() == ".log") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      try {
        auto runs = fb::loadRunsAny(f);
        for (auto& r : runs) {
          auto& i = r.runJson["nccl_tests"];
          std::printf("%s | %s | %s | %dx? ranks %d nodes %d rpn %s | %s | nccl %s | tr %s | ch %s | env %s | rows %zu\n",
                      fs::path(f).filename().c_str(), r.label.c_str(), i["coll"].get<std::string>().c_str(),
                      0, i["ranks"].get<int>(), i["nodes"].get<int>(), i["ranks_per_node"].dump().c_str(),
                      i["gpu"].dump().c_str(), i["nccl_version"].dump().c_str(), i["transports"].dump().c_str(),
                      i["channels"].dump().c_str(), i["env"].dump().c_str(), r.rows.size());
        }
      } catch (const std::exception& e) {
        std::printf("%s | ERROR %s\n", fs::path(f).filename().c_str(), e.what());
      }
    }
  }
}

namespace {
struct Expect {
  const char* file;  // relative to tests/data, with :coll= where the log names no collective
  std::size_t runs;
  const char* colls;  // comma-joined, in run order
  int ranks, nodes;
  const char* gpu;  // nullptr: the log names none (no `#  Rank` lines)
};
const Expect kExpect[] = {
    {"public-nccl-tests/dgxh100-cnh-2x2.log", 1, "allreduce", 4, 2, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/dgxh100-cnh-2x4.log", 1, "allreduce", 8, 2, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/dgxh100-cnh-2x8.log", 1, "allreduce", 16, 2, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-ib400-gjaion-2x8-ring-minctas24.log", 1, "allreduce", 16, 2, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-ib400-gjaion-2x8.log:coll=allreduce", 1, "allreduce", 16, 2, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-ib400-gjaion-4x8.log", 1, "allreduce", 32, 4, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-ndr-shahizat-1x8.log:coll=allreduce", 1, "allreduce", 8, 1, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-ndr-shahizat-2x8-ring.log:coll=allreduce", 1, "allreduce", 16, 2, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-ndr-shahizat-2x8.log:coll=allreduce", 1, "allreduce", 16, 2, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-snellius-1n-g4-all_gather.log", 1, "allgather", 4, 1, "NVIDIA H100"},
    {"public-nccl-tests/h100-snellius-1n-g4-all_reduce.log", 1, "allreduce", 4, 1, "NVIDIA H100"},
    {"public-nccl-tests/h100-snellius-1n-g4-reduce_scatter.log", 1, "reducescatter", 4, 1, "NVIDIA H100"},
    {"public-nccl-tests/h100-snellius-2n-g4-all_gather.log", 1, "allgather", 8, 2, "NVIDIA H100"},
    {"public-nccl-tests/h100-snellius-2n-g4-all_reduce.log", 1, "allreduce", 8, 2, "NVIDIA H100"},
    {"public-nccl-tests/h100-snellius-2n-g4-reduce_scatter.log", 1, "reducescatter", 8, 2, "NVIDIA H100"},
    {"public-nccl-tests/h100-vm-qoofyk-4x8.log", 1, "allreduce", 32, 4, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xe9680-qoofyk-2x8.log", 1, "allreduce", 16, 2, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster00-N1-G4-cnode2-001.log", 5,
     "alltoall,p2pring,allreduce,allgather,reducescatter", 4, 1, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster00-N1-G8-cnode2-001.log", 5,
     "alltoall,p2pring,allreduce,allgather,reducescatter", 8, 1, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster00-N2-G1-cnode2-001_002.log", 2, "alltoall,p2pring", 2, 2,
     "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster00-N2-G4-cnode2-001_002.log", 2, "alltoall,p2pring", 8, 2,
     "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster00-N2-G8-cnode2-001_002.log", 2, "alltoall,p2pring", 16, 2,
     "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster01-N1-G4-cnode3-002.log", 5,
     "allreduce,allgather,reducescatter,alltoall,p2pring", 4, 1, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster01-N1-G8-cnode3-002.log", 5,
     "allreduce,allgather,reducescatter,alltoall,p2pring", 8, 1, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster01-N2-G1-cnode3-002_003.log", 2, "alltoall,p2pring", 2, 2,
     "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster01-N2-G2-cnode3-002_003.log", 2, "alltoall,p2pring", 4, 2,
     "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster01-N2-G4-cnode3-002_003.log", 2, "alltoall,p2pring", 8, 2,
     "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster01-N2-G8-cnode3-002_003.log", 2, "alltoall,p2pring", 16, 2,
     "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster01-smoke-N2-G1-cnode3-002_003.log", 2, "allreduce,p2pring", 2, 2,
     "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster01-N10-G1.log", 5, "allreduce,allgather,reducescatter,alltoall,p2pring",
     10, 10, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster01-N10-G2.log", 5, "allreduce,allgather,reducescatter,alltoall,p2pring",
     20, 10, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster01-N10-G4.log", 5, "allreduce,allgather,reducescatter,alltoall,p2pring",
     40, 10, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-xxrjun-cluster01-N10-G8.log", 5, "allreduce,allgather,reducescatter,alltoall,p2pring",
     80, 10, "NVIDIA H100 80GB HBM3"},
    // vendors' sample output (AWS: data rows only, from the column line; NVIDIA DGX Cloud), a student's 1 x 8 and
    // 4 x 8 (Voltage Park), a user's GCP A3 Mega: tests/data/public-nccl-tests/README.md sets I-L
    {"public-nccl-tests/h100-aws-p5-2x8-readme.log:coll=allreduce,ranks=16,nodes=2", 1, "allreduce", 16, 2, nullptr},
    {"public-nccl-tests/a100-aws-p4de-2x8-readme.log:coll=allreduce,ranks=16,nodes=2", 1, "allreduce", 16, 2, nullptr},
    {"public-nccl-tests/h100-aws-p5-batch-1x8-readme.log:coll=allreduce,ranks=8,nodes=1", 1, "allreduce", 8, 1, nullptr},
    {"public-nccl-tests/h100-nvidia-dgxc-1x8.log:coll=allreduce", 1, "allreduce", 8, 1, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-voltagepark-1x8-all_reduce.log", 1, "allreduce", 8, 1, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-voltagepark-1x8-all_gather.log", 1, "allgather", 8, 1, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-voltagepark-4x8-all_reduce.log", 1, "allreduce", 32, 4, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-voltagepark-4x8-all_gather.log", 1, "allgather", 32, 4, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-gcp-a3mega-tcpxo-2x8.log", 1, "allreduce", 16, 2, "NVIDIA H100 80GB HBM3"},
    {"nccl-info/a100-p4d-efa-2x8-nccl2.9.9.log:coll=allreduce", 1, "allreduce", 16, 2, "A100-SXM4-40GB"},
    {"nccl-info/a100pcie-roce+ib-2x1-gdr-forced-nccl2.16.5-gather.log", 1, "gather", 2, 2, "NVIDIA A100-PCIE-40GB"},
    {"nccl-info/h100-ib-ndr-2x8-gdrdma-nvls-nccl2.26.2-rank0.log", 1, "allreduce", 16, 2, "NVIDIA H100 80GB HBM3"},
    {"nccl-info/h100-snellius-ib-2x4-pxn-gdrdma-nccl2.22.3-allreduce.log", 1, "allreduce", 8, 2, "NVIDIA H100"},
    {"nccl-info/h20-vm-roce-bond-2x2-pxn-alltoall-nccl2.26.5-host40.log", 1, "alltoall", 4, 2, "NVIDIA H20-3e"},
    {"nccl-tests-formats/tag-output-dgxh100-cnh-2x2.log", 1, "allreduce", 4, 2, "NVIDIA H100 80GB HBM3"},
    {"nccl-tests-formats/timestamps-h100-ib400-gjaion-4x8.log", 1, "allreduce", 32, 4, "NVIDIA H100 80GB HBM3"},
    {"nccl-tests-formats/elided-ranks-h100-ib400-gjaion-4x8.log:ranks=32,nodes=4", 1, "allreduce", 32, 4,
     "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests-other/a100-oke-2x8-allreduce.log:coll=allreduce", 1, "allreduce", 16, 2, "NVIDIA A100-SXM4-40GB"},
    {"public-nccl-tests-other/a100-oke-slurm-elided.log:ranks=16,nodes=2", 1, "allreduce", 16, 2, "NVIDIA A100-SXM4-40GB"},
    {"public-nccl-tests-other/b200-gke-2x8-allgather.log:coll=allgather", 1, "allgather", 16, 2, "NVIDIA B200"},
    {"public-nccl-tests-other/mi300x-hisohara-2x8-allreduce.log:coll=allreduce", 1, "allreduce", 16, 2, "AMD Instinct MI300X"},
    {"public-nccl-tests-other/gb300-oci-2x4-allreduce.log:ranks=8,nodes=2", 1, "allreduce", 8, 2, "NVIDIA GB300"},
    {"public-nccl-tests-other/gb200-oci-1x4-allreduce.log:coll=allreduce", 1, "allreduce", 4, 1, "NVIDIA Graphics Device"},
    // older tables: the layout from the column header (a blank redop; no redop or root); an indented --tag-output paste
    {"public-nccl-tests-other/old-alltoall-blank-redop-a100-superbench.log:coll=alltoall", 1, "alltoall", 8, 1, "A100-SXM4-40GB"},
    {"public-nccl-tests-other/old-allgather-no-redop-a100-superbench.log:coll=allgather", 1, "allgather", 8, 1, "A100-SXM4-40GB"},
    {"public-nccl-tests-other/indented-tag-output-h100-eks.log:coll=allreduce,ranks=16,nodes=2", 1, "allreduce", 16, 2, nullptr},
    {"nccl-tests/h100x1-nccl-tests-allreduce-per-iter.log", 1, "allreduce", 1, 1, "NVIDIA H100 80GB HBM3"},
    // FILE:hints#k: run k alone (run 2's elided list needs the counts; run 1 reads without them)
    {"nccl-tests-formats/two-runs-second-elided.log:ranks=4,nodes=2#1", 1, "allreduce", 4, 2, "NVIDIA H100 80GB HBM3"},
    {"nccl-tests-formats/two-runs-second-elided.log:ranks=32,nodes=4#2", 1, "allreduce", 32, 4, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests-other/mi355x-hisohara-2x8-allreduce.log:coll=allreduce", 1, "allreduce", 16, 2, nullptr},
    // found in session 23: Ray's prefix before the Open MPI tag; rows without their header; NVL72 racks given as
    // hosts; a rank list cut short; the old layout with every rank's tagged output; -g 8 over sockets
    {"public-nccl-tests-other/h200-gke-skypilot-2x8-allgather-rayprefix.log:coll=allgather", 1, "allgather", 16, 2,
     "NVIDIA H200"},
    {"public-nccl-tests-other/h100-issue294-2x8-rowsonly.log:coll=allreduce,ranks=16,nodes=2", 1, "allreduce", 16, 2,
     nullptr},
    {"public-nccl-tests-other/gb300-oci-32x4-2racks-allreduce-elided.log:ranks=128,nodes=32", 1, "allreduce", 128, 32,
     "NVIDIA GB300"},
    {"public-nccl-tests-other/h100-issue322-128x8-truncated-ranklist.log:ranks=1024,nodes=128", 1, "allreduce", 1024,
     128, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests-other/a100-p4d-efa-eks-2x8-tagoutput-old.log:coll=allreduce", 1, "allreduce", 16, 2,
     "A100-SXM4-40GB"},
    {"public-nccl-tests-other/h200-openshift-sockets-2x8-g8.log", 1, "allreduce", 16, 2, "NVIDIA H200"},
    // sets A, K and M's runs added in session 23 (8 x 8; Broadcast and Reduce; ALCF Polaris at 2-540 nodes)
    {"public-nccl-tests/h100-ib400-gjaion-8x8.log:coll=allreduce", 1, "allreduce", 64, 8, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-voltagepark-1x8-broadcast.log", 1, "broadcast", 8, 1, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-voltagepark-4x8-broadcast.log", 1, "broadcast", 32, 4, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/h100-voltagepark-4x8-reduce.log", 1, "reduce", 32, 4, "NVIDIA H100 80GB HBM3"},
    {"public-nccl-tests/a100-polaris-n2x4-all_reduce.log:coll=allreduce", 1, "allreduce", 8, 2, "NVIDIA A100-SXM4-40GB"},
    {"public-nccl-tests/a100-polaris-n2x4-all_gather.log:coll=allgather", 1, "allgather", 8, 2, "NVIDIA A100-SXM4-40GB"},
    {"public-nccl-tests/a100-polaris-n8x4-all_reduce.log:coll=allreduce", 1, "allreduce", 32, 8, "NVIDIA A100-SXM4-40GB"},
    {"public-nccl-tests/a100-polaris-n8x4-all_gather.log:coll=allgather", 1, "allgather", 32, 8, "NVIDIA A100-SXM4-40GB"},
    {"public-nccl-tests/a100-polaris-n256x4-all_reduce.log:coll=allreduce", 1, "allreduce", 1024, 256,
     "NVIDIA A100-SXM4-40GB"},
    {"public-nccl-tests/a100-polaris-n256x4-all_gather.log:coll=allgather", 1, "allgather", 1024, 256,
     "NVIDIA A100-SXM4-40GB"},
    {"public-nccl-tests/a100-polaris-n540x4-all_reduce.log:coll=allreduce", 1, "allreduce", 2160, 540,
     "NVIDIA A100-SXM4-40GB"},
    {"public-nccl-tests/a100-polaris-n540x4-all_gather.log:coll=allgather", 1, "allgather", 2160, 540,
     "NVIDIA A100-SXM4-40GB"},
    // rows with wrong elements (read; the model leaves them out and says so); two SendRecv runs of one file
    {"public-nccl-tests-other/gh200-olivia-4x4-int8-corrupt.log", 1, "allreduce", 16, 4, "NVIDIA GH200 120GB"},
    {"public-nccl-tests-other/b200-together-sendrecv-2x8-2runs.log:coll=sendrecv", 2, "p2pring,p2pring", 16, 2,
     "NVIDIA B200"},
};

double busFactor(const std::string& coll, int n) {
  if (coll == "allreduce") return 2.0 * (n - 1) / n;
  if (coll == "allgather" || coll == "reducescatter" || coll == "alltoall" || coll == "gather" || coll == "scatter")
    return double(n - 1) / n;
  return 1.0;  // broadcast, reduce, p2pring (sendrecv)
}

// The out-of-place (or in-place) row of `bytes` in run k.
const fb::Sample* row(const fb::RunData& r, std::size_t bytes, bool inPlace) {
  for (auto& s : r.rows)
    if (s.bytes == bytes && s.inPlace == inPlace) return &s;
  return nullptr;
}
}  // namespace

TEST_CASE("every real log in tests/data reads with the expected runs, collectives, ranks, nodes, GPU") {
  int wrongFiles = 0, wrongRows = 0, rowsChecked = 0;
  std::set<std::string> covered;
  for (auto& e : kExpect) {
    std::string arg = kData + e.file;
    covered.insert(fs::path(arg.substr(0, arg.find(':', kData.size()))).filename().string());
    std::vector<fb::RunData> runs;
    try {
      runs = fb::loadRunsAny(arg);
    } catch (const std::exception& ex) {
      FAIL_CHECK(e.file << ": " << ex.what());
      ++wrongFiles;
      continue;
    }
    std::string colls;
    bool ok = runs.size() == e.runs;
    for (auto& r : runs) {
      auto& i = r.runJson["nccl_tests"];
      colls += (colls.empty() ? "" : ",") + i["coll"].get<std::string>();
      ok = ok && i["ranks"] == e.ranks && i["nodes"] == e.nodes &&
           (e.gpu ? i["gpu"] == e.gpu : i["gpu"].is_null()) && r.runJson["ranks"] == e.ranks;
      for (auto& s : r.rows) {
        ok = ok && s.nRanks == e.ranks && s.nNodes == e.nodes && s.coll == i["coll"].get<std::string>();
        double alg = std::stod(extra(s, "printed_algbw")), bus = std::stod(extra(s, "printed_busbw"));
        double f = busFactor(s.coll, e.ranks);
        ++rowsChecked;
        // printed with 2 decimals: |alg*f - bus| <= 0.005*f + 0.005 (+ float slack)
        if (std::fabs(alg * f - bus) > 0.005 * f + 0.005 + 1e-9) {
          ++wrongRows;
          WARN(e.file << " " << s.bytes << (s.inPlace ? " in" : " out") << ": algbw " << alg << " x " << f
                      << " != busbw " << bus);
        }
      }
    }
    ok = ok && colls == e.colls;
    if (!ok) {
      ++wrongFiles;
      FAIL_CHECK(e.file << ": runs " << runs.size() << " colls " << colls);
    }
  }
  CHECK(wrongFiles == 0);
  CHECK(wrongRows == 0);
  CHECK(rowsChecked == 4388);  // 1998 + 560 from sets I-L (280 data lines, grep of the logs) + 126 rccl-tests (32 + 31
                               // lines) + 36 of our -I 1 log (18 lines) + 90 of the two-run file (31 + 14 lines) + 4 GB300
                               // + 4 GB200 + 200 of the two superbench logs and the EKS one (34 + 34 + 32 lines) + 400
                               // of set F's four 10-node logs (4 x 50 lines) + 196 of the six found in session 23 (24 + 5 +
                               // 2 + 5 + 30 + 32 lines) + 774 of 14 more (387 lines: Olivia 28, B200 SendRecv 20, set A's
                               // 8 x 8 14, set K's three 31 each, Polaris' eight 29 each)
  // every .log in these folders is either listed above or refused on purpose (INFO only)
  for (const char* dir : {"public-nccl-tests", "nccl-info", "nccl-tests-formats", "public-nccl-tests-other"})
    for (auto& de : fs::directory_iterator(kData + dir))
      if (de.path().extension() == ".log" && !covered.count(de.path().filename().string())) {
        std::string n = de.path().filename().string();
        if (n == "h100-together-2pods-1x8-g8-interleaved-ring.log") {  // two 1 x 8 runs' lines interleaved
          CHECK_THROWS_WITH(fb::loadRunsAny(de.path().string()),
                            Catch::Contains("rank 0 listed twice (line 19, host gpu-dp-2jvzl-ddjjs and "
                                            "gpu-dp-2jvzl-pqq7p): the lines of two runs interleaved"));
          continue;
        }
        if (n == "h100-issue294-16x-nompi-interleaved.log") {  // 16 one-rank tables interleaved row by row
          CHECK_THROWS_WITH(fb::loadRunsAny(de.path().string() + ":coll=allreduce"),
                            Catch::Contains("line 6: size 268435456 after 536870912 (line 5): the rows of several "
                                            "tables interleaved"));
          continue;
        }
        CHECK((n == "2x4gpu-socket-nolibibverbs-nccl2.7.8-node0.log" || n == "a100pcie-roce-2x2-nogdr-nccl2.30.4.log"));
        CHECK_THROWS_WITH(fb::loadRunsAny(de.path().string()), Catch::Contains("no nccl-tests result table"));
      }
}

TEST_CASE("rows by hand from the log text (size, time, busbw, in and out of place)") {
  struct H {
    const char* file;
    std::size_t run;  // 0-based
    std::size_t bytes;
    bool inPlace;
    double time, busbw;
  };
  const H hs[] = {
      {"public-nccl-tests/h100-ib400-gjaion-4x8.log", 0, 1048576, false, 317.0, 6.41},
      {"public-nccl-tests/h100-ib400-gjaion-4x8.log", 0, 1048576, true, 93.26, 21.78},
      {"public-nccl-tests/h100-ib400-gjaion-4x8.log", 0, 8589934592, false, 51285, 324.52},
      {"public-nccl-tests/h100-ndr-shahizat-2x8.log:coll=allreduce", 0, 8589934592, true, 103538, 155.56},
      {"public-nccl-tests/dgxh100-cnh-2x8.log", 0, 8589934592, false, 34409, 468.09},
      {"public-nccl-tests/h100-xe9680-qoofyk-2x8.log", 0, 8589934592, true, 34365, 468.67},
      {"public-nccl-tests/h100-snellius-2n-g4-all_gather.log", 0, 8589934592, false, 76968, 97.65},
      {"nccl-info/a100-p4d-efa-2x8-nccl2.9.9.log:coll=allreduce", 0, 1048576, false, 485.3, 4.05},
      {"nccl-info/a100-p4d-efa-2x8-nccl2.9.9.log:coll=allreduce", 0, 4194304, true, 794.3, 9.90},
      {"nccl-tests-formats/timestamps-h100-ib400-gjaion-4x8.log", 0, 8589934592, false, 51285, 324.52},
      // -I 1: i_min i_max i_p99 i_cv% after each placement's time algbw busbw #wrong (21 words a row)
      {"nccl-tests/h100x1-nccl-tests-allreduce-per-iter.log", 0, 8, false, 8.12, 0.00},
      {"nccl-tests/h100x1-nccl-tests-allreduce-per-iter.log", 0, 1048576, false, 9.28, 0.00},
      {"nccl-tests/h100x1-nccl-tests-allreduce-per-iter.log", 0, 1048576, true, 2.38, 0.00},
  };
  int wrong = 0;
  for (auto& h : hs) {
    auto runs = fb::loadRunsAny(kData + h.file);
    REQUIRE(runs.size() > h.run);
    auto* s = row(runs[h.run], h.bytes, h.inPlace);
    if (!s || std::fabs(s->timeUs - h.time) > 1e-9 || std::fabs(std::stod(extra(*s, "printed_busbw")) - h.busbw) > 1e-9 ||
        std::fabs(s->busBwGBps - h.busbw) > 0.01 * h.busbw + 0.01) {
      ++wrong;
      FAIL_CHECK(h.file << " " << h.bytes << ": " << (s ? s->timeUs : -1) << " " << (s ? s->busBwGBps : -1));
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("formats: collective sources, prefixes, NAME_SUFFIX, several runs, elided ranks") {
  // plain >= 2.16.7: coll from "# Collective test starting:"
  auto f = fb::loadRunsAny(kData + "public-nccl-tests/h100-xxrjun-cluster01-N1-G8-cnode3-002.log");
  REQUIRE(f.size() == 5);
  CHECK(f[3].runJson["nccl_tests"]["binary"] == "alltoall_perf");
  CHECK(f[0].runJson["nccl_tests"]["nccl_version"] == "2.29.2");  // from nccl-library=22902
  CHECK(f[0].runJson["nccl_tests"]["version"] == "2.17.8");
  CHECK(f[1].label == "h100-xxrjun-cluster01-N1-G8-cnode3-002-2");
  // several runs: loadRunAny needs #k
  CHECK_THROWS_WITH(fb::loadRunAny(kData + "public-nccl-tests/h100-xxrjun-cluster01-N1-G8-cnode3-002.log"),
                    Catch::Contains("#k"));
  CHECK(fb::loadRunAny(kData + "public-nccl-tests/h100-xxrjun-cluster01-N1-G8-cnode3-002.log#4").rows.front().coll ==
        "alltoall");
  // pre-2.16.7 with ./build/all_reduce_perf on the command line, fences (set D)
  auto d = fb::loadRunAny(kData + "public-nccl-tests/dgxh100-cnh-2x2.log");
  CHECK(d.runJson["nccl_tests"]["binary"] == "all_reduce_perf");
  CHECK(d.runJson["nccl_tests"]["ranks_per_node"] == 2);
  CHECK(d.runJson["nccl_tests"]["hosts"] == nlohmann::json({"dgx-06", "dgx-07"}));
  // NAME_SUFFIX from a command line (xe9680) and from "Collective test starting" (snellius)
  CHECK(fb::loadRunAny(kData + "public-nccl-tests/h100-xe9680-qoofyk-2x8.log").runJson["nccl_tests"]["binary"] ==
        "all_reduce_perf_mpi");
  auto sn = fb::loadRunAny(kData + "public-nccl-tests/h100-snellius-2n-g4-all_reduce.log");
  CHECK(sn.runJson["nccl_tests"]["binary"] == "all_reduce_perf_mpi");
  CHECK(sn.runJson["nccl_tests"]["transports"] == nlohmann::json({"P2P/CUMEM", "NET/IB"}));
  CHECK(sn.runJson["nccl_tests"]["channels"] == 8);
  // env from the command line and from "set by environment"
  auto ring = fb::loadRunAny(kData + "public-nccl-tests/h100-ib400-gjaion-2x8-ring-minctas24.log");
  CHECK(ring.runJson["nccl_tests"]["env"]["NCCL_MIN_CTAS"] == "24");
  CHECK(ring.runJson["nccl_tests"]["algo_forced"] == "Ring");
  auto ndr = fb::loadRunAny(kData + "nccl-info/h100-ib-ndr-2x8-gdrdma-nvls-nccl2.26.2-rank0.log");
  CHECK(ndr.runJson["nccl_tests"]["env"]["NCCL_ALGO"] == "RING");
  CHECK(ndr.runJson["nccl_tests"]["gdrdma"] == true);
  CHECK(ndr.runJson["nccl_tests"]["nccl_version"] == "2.26.2+cuda12.8");
  // srun -l (" 0: ") and no collective anywhere: refused with the :coll= hint, read with it
  CHECK_THROWS_WITH(fb::loadRunsAny(kData + "public-nccl-tests/h100-ndr-shahizat-2x8.log"),
                    Catch::Contains(":coll=allreduce"));
  CHECK(fb::loadRunsAny(kData + "public-nccl-tests/h100-ndr-shahizat-2x8.log:coll=allreduce").front().rows.size() ==
        22);
  // algo=/proto= say what a pasted log's run forced when its env lines are not in the paste
  {
    auto ring = fb::loadRunsAny(kData + "public-nccl-tests/h100-ndr-shahizat-2x8-ring.log:coll=allreduce,algo=Ring,proto=Simple");
    REQUIRE(ring.size() == 1);
    CHECK(ring.front().runJson["nccl_tests"]["algo_forced"] == "Ring");
    CHECK(ring.front().runJson["nccl_tests"]["proto_forced"] == "Simple");
    auto plain = fb::loadRunsAny(kData + "public-nccl-tests/h100-ndr-shahizat-2x8-ring.log:coll=allreduce");
    CHECK_FALSE(plain.front().runJson["nccl_tests"].contains("algo_forced"));
    CHECK_THROWS_WITH(fb::loadRunsAny(kData + "public-nccl-tests/h100-ndr-shahizat-2x8-ring.log:coll=allreduce,algo="),
                      Catch::Contains("algo=NAME"));
  }
  // tag-output: same rows as the plain log
  auto tag = fb::loadRunAny(kData + "nccl-tests-formats/tag-output-dgxh100-cnh-2x2.log");
  REQUIRE(tag.rows.size() == d.rows.size());
  int diff = 0;
  for (std::size_t k = 0; k < tag.rows.size(); ++k)
    diff += tag.rows[k].bytes != d.rows[k].bytes || tag.rows[k].timeUs != d.rows[k].timeUs;
  CHECK(diff == 0);
  // timestamps: same rows as the log it came from
  auto ts = fb::loadRunAny(kData + "nccl-tests-formats/timestamps-h100-ib400-gjaion-4x8.log");
  auto g4 = fb::loadRunAny(kData + "public-nccl-tests/h100-ib400-gjaion-4x8.log");
  REQUIRE(ts.rows.size() == g4.rows.size());
  diff = 0;
  for (std::size_t k = 0; k < ts.rows.size(); ++k)
    diff += ts.rows[k].bytes != g4.rows[k].bytes || ts.rows[k].timeUs != g4.rows[k].timeUs;
  CHECK(diff == 0);
  // elided ranks: refused with how to give the counts, accepted with them
  CHECK_THROWS_WITH(fb::loadRunsAny(kData + "nccl-tests-formats/elided-ranks-h100-ib400-gjaion-4x8.log"),
                    Catch::Contains("ranks=N,nodes=M"));
  auto el = fb::loadRunAny(kData + "nccl-tests-formats/elided-ranks-h100-ib400-gjaion-4x8.log:ranks=32,nodes=4");
  CHECK(el.rows.front().nRanks == 32);
  CHECK(el.rows.front().nNodes == 4);
  CHECK(el.runJson["nccl_tests"]["counts_from"] == "user");
  // An elided list's hosts: those listed, each with the counts' GPUs per node (8 = 32 / 4).
  const auto& efp = el.runJson["fingerprint"];
  CHECK(efp["nhosts"] == 4);
  CHECK(efp["nranks"] == 32);
  REQUIRE(efp["hosts"].size() >= 1);
  CHECK(efp["hosts"][0]["fingerprint"]["gpus"].size() == 8);
  // Hints never contradict a complete '#  Rank' list (16 ranks on 2 hosts), and ranks divide into nodes.
  const std::string two = kData + "public-nccl-tests/dgxh100-cnh-2x8.log";
  CHECK_THROWS_WITH(fb::loadRunsAny(two + ":ranks=64,nodes=8"), Catch::Contains(":ranks=64 contradicts") &&
                                                                   Catch::Contains("list of 16 ranks"));
  CHECK_THROWS_WITH(fb::loadRunsAny(two + ":nodes=3"), Catch::Contains(":nodes=3 contradicts") &&
                                                        Catch::Contains("on 2 hosts"));
  // Fewer nodes than hosts: whole hosts grouped into NVLink domains (one node to NCCL, as MNNVL makes them).
  CHECK(fb::loadRunAny(two + ":nodes=1").rows.front().nNodes == 1);
  CHECK_THROWS_WITH(fb::loadRunsAny(two + ":ranks=15"), Catch::Contains(":ranks=15 contradicts"));
  CHECK(fb::loadRunAny(two + ":ranks=16,nodes=2").rows.front().nNodes == 2);  // agreeing hints are fine
  // No '#  Rank' lines: 8 ranks from the header (nThread 1 x nGpus 8) on 3 nodes given is no whole number per node.
  const std::string noRanks = "# nccl-tests version 2.19.6\n# Collective test starting: all_reduce_perf\n"
                              "# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor)\n"
                              "#  size  count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
                              "     8     2 float sum -1 10.0 0.00 0.00 0 10.0 0.00 0.00 0\n";
  CHECK(fb::parseNcclTestsRuns(noRanks, "x.log").front().info["ranks"] == 8);
  fb::NcclTestsHints three;
  three.nodes = 3;
  CHECK_THROWS_WITH(fb::parseNcclTestsRuns(noRanks, "x.log", three),
                    Catch::Contains("8 ranks (from the log) on 3 nodes (given)"));
  three.nodes = 2;
  CHECK(fb::parseNcclTestsRuns(noRanks, "x.log", three).front().info["ranks_per_node"] == 4);
  // busbw / algbw holds the rank count (AllReduce: 2 (n - 1) / n). A log without '#  Rank' lines is refused with
  // the count its figures give, and a count that contradicts them is refused (it would describe another machine).
  const std::string p4de = kData + "public-nccl-tests/a100-aws-p4de-2x8-readme.log";
  CHECK_THROWS_WITH(fb::loadRunsAny(p4de + ":coll=allreduce"),
                    Catch::Contains("the rank count is unknown (busbw/algbw 1.8748 at 2147483648 B says 16 ranks for allreduce)"));
  CHECK_THROWS_WITH(fb::loadRunsAny(p4de + ":coll=allreduce,ranks=8,nodes=2"),
                    Catch::Contains("8 ranks (given) contradict the log's figures") && Catch::Contains("says 16 ranks"));
  CHECK(fb::loadRunAny(p4de + ":coll=allreduce,ranks=16,nodes=2").rows.front().nRanks == 16);
  {
    // By hand. 175.00 / 100.00 = 1.75 = 2 (n - 1) / n at n = 8 exactly (printed to 2 decimals: [174.995 / 100.005,
    // 175.005 / 99.995] gives n in [7.9985, 8.0015]). 1.97 / 1.00 allows [1.965 / 1.005, 1.975 / 0.995] =
    // [1.95522, 1.98492], n = 2 / (2 - r) in [44.7, 132.7]: 45-132 ranks. AllGather 87.50 / 100.00 = (n - 1) / n at 8.
    auto table = [](const std::string& coll, const std::string& row) {
      return "# Collective test starting: " + coll + "_perf\n# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor)\n"
             "#  size  count type redop root time algbw busbw #wrong time algbw busbw #wrong\n" + row + "\n";
    };
    fb::NcclTestsHints h;
    h.ranks = 16;
    const std::string exact = table("all_reduce", "1048576 262144 float sum -1 10.49 100.00 175.00 0 10.49 100.00 175.00 0");
    CHECK_THROWS_WITH(fb::parseNcclTestsRuns(exact, "x.log", h),
                      Catch::Contains("16 ranks (given) contradict") && Catch::Contains("says 8 ranks for allreduce"));
    h.ranks = 8;
    CHECK(fb::parseNcclTestsRuns(exact, "x.log", h).front().info["ranks"] == 8);
    const std::string loose = table("all_reduce", "1048576 262144 float sum -1 1048.6 1.00 1.97 0 1048.6 1.00 1.97 0");
    for (int n : {45, 64, 132}) {
      h.ranks = n;
      CHECK(fb::parseNcclTestsRuns(loose, "x.log", h).front().info["ranks"] == n);
    }
    for (int n : {44, 133}) {
      h.ranks = n;
      CHECK_THROWS_WITH(fb::parseNcclTestsRuns(loose, "x.log", h), Catch::Contains("says 45-132 ranks"));
    }
    const std::string ag = table("all_gather", "1048576 32768 float none -1 10.49 100.00 87.50 0 10.49 100.00 87.50 0");
    h.ranks = 4;
    CHECK_THROWS_WITH(fb::parseNcclTestsRuns(ag, "x.log", h), Catch::Contains("says 8 ranks for allgather"));
    // 1.90 / 1.00 exactly (printed to 4 decimals): 2 (n - 1) / n = 1.9 at n = 20; 1.9011 / 1.0000 allows n in
    // [20.2, 20.3], no whole count: the collective is the likelier mistake.
    const std::string none = table("all_reduce", "1048576 262144 float sum -1 10.49 1.0000 1.9011 0 10.49 1.0000 1.9011 0");
    CHECK_THROWS_WITH(fb::parseNcclTestsRuns(none, "x.log", h),
                      Catch::Contains("says no whole rank count") && Catch::Contains("is allreduce the collective the log ran?"));
    // Broadcast's factor is 1 whatever n: no check.
    const std::string bc = table("broadcast", "1048576 262144 float none 0 10.49 100.00 100.00 0 10.49 100.00 100.00 0");
    CHECK(fb::parseNcclTestsRuns(bc, "x.log", h).front().info["ranks"] == 4);
    // The header's 1 rank (nThread 1 x nGpus 1, no launcher line) contradicts 1.75 too: an MPI run's log cut below
    // its mpirun line would otherwise read as one rank.
    CHECK_THROWS_WITH(fb::parseNcclTestsRuns(exact, "x.log"),
                      Catch::Contains("1 rank (from its header) contradicts") && Catch::Contains("x.log:ranks=N,nodes=M"));
    // -S 1 (report_timestamps) ends a row with its timestamp (after the -I columns too); -C 1's cputime is no
    // operation time.
    h.ranks = 8;
    const std::string stamped = table("all_reduce", "1048576 262144 float sum -1 10.49 100.00 175.00 0 10.49 100.00 175.00 0 "
                                                    "2026-12-07 05:00:00");
    CHECK(fb::parseNcclTestsRuns(stamped, "x.log", h).front().rows.at(1).timeUs == Approx(10.49));
    const std::string perIterStamped =
        table("all_reduce", "1048576 262144 float sum -1 10.49 100.00 175.00 0 9.1 12.0 12.0 5.0 10.51 99.77 174.60 0 "
                            "9.2 12.1 12.1 5.1 2026-12-07 05:00:00");
    auto pis = fb::parseNcclTestsRuns(perIterStamped, "x.log", h).front().rows;
    REQUIRE(pis.size() == 2);
    CHECK(pis[0].timeUs == Approx(10.49));
    CHECK(pis[1].timeUs == Approx(10.51));
    std::string cpu = exact;
    cpu.replace(cpu.find(" time "), 6, " cputime ");
    CHECK_THROWS_WITH(fb::parseNcclTestsRuns(cpu, "x.log", h), Catch::Contains("the table reports cputime (nccl-tests -C 1"));
    // Two ranks on one GPU (the same host and bus id): kept with the run, and the import warns.
    const std::string twoOnOne =
        "# Collective test starting: broadcast_perf\n# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor)\n"
        "#  Rank  0 Group  0 Pid  11 on lab device  0 [0000:02:00] NVIDIA GeForce RTX 5090\n"
        "#  Rank  1 Group  0 Pid  12 on lab device  0 [0000:02:00] NVIDIA GeForce RTX 5090\n"
        "#  size  count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
        "1048576 262144 float none 0 10.49 100.00 100.00 0 10.49 100.00 100.00 0\n";
    CHECK(fb::parseNcclTestsRuns(twoOnOne, "x.log").front().info["shared_gpu"] == "ranks 0, 1 share one GPU (lab [0000:02:00])");
    CHECK_FALSE(fb::parseNcclTestsRuns(exact, "x.log", h).front().info.contains("shared_gpu"));
    // A bus number without its PCI domain names no one GPU: OCI's GB200 node prints [0x01] for all four (each GPU
    // in its own domain), AWS's p4d [0x10] for two A100s; neither is a shared GPU. The GB200 log's 4 GiB row has a
    // count with a digit lost (107374124 for 1073741824): kept, by its size, with a warning.
    auto gb200 = fb::loadRunsAny(kData + "public-nccl-tests-other/gb200-oci-1x4-allreduce.log:coll=allreduce");
    REQUIRE(gb200.size() == 1);
    const auto& gi = gb200.front().runJson["nccl_tests"];
    CHECK_FALSE(gi.contains("shared_gpu"));
    CHECK(gi["count_mismatch"] == "line 13: count 107374124 is not what nccl-tests prints for that size of float "
                                  "allreduce on 4 ranks (1073741824)");
    CHECK(gb200.front().rows.front().bytes == 4294967296ull);
    // The old AllToAll's blank redop: asked which collective, alltoall (the time had been read as the redop, and
    // reducescatter suggested).
    CHECK_THROWS_WITH(fb::loadRunsAny(kData + "public-nccl-tests-other/old-alltoall-blank-redop-a100-superbench.log"),
                      Catch::Contains("its rows (a blank redop, count = size / 4 / 8) fit alltoall (nccl-tests' older "
                                      "AllToAll left its redop blank); add it to the file name: ") &&
                          Catch::EndsWith("old-alltoall-blank-redop-a100-superbench.log:coll=alltoall"));
    for (auto& run : fb::loadRunsAny(kData + "nccl-info/a100-p4d-efa-2x8-nccl2.9.9.log:coll=allreduce")) {
      CHECK_FALSE(run.runJson["nccl_tests"].contains("shared_gpu"));
      CHECK_FALSE(run.runJson["nccl_tests"].contains("count_mismatch"));
    }
    // The count of AllGather is per rank: size / 4 / 8 on 8 ranks; size / 4 there is an edited row.
    const std::string agPerRank = table("all_gather", "1048576 32768 float none -1 10.49 100.00 87.50 0 10.49 100.00 87.50 0");
    CHECK_FALSE(fb::parseNcclTestsRuns(agPerRank, "x.log", h).front().info.contains("count_mismatch"));
    const std::string agTotal = table("all_gather", "1048576 262144 float none -1 10.49 100.00 87.50 0 10.49 100.00 87.50 0");
    CHECK(fb::parseNcclTestsRuns(agTotal, "x.log", h).front().info["count_mismatch"] ==
          "line 4: count 262144 is not what nccl-tests prints for that size of float allgather on 8 ranks (32768)");
    // rccl-tests' version line marks the run as RCCL's.
    CHECK(fb::parseNcclTestsRuns(exact, "x.log", h).front().info["library"] == "nccl");
    CHECK(fb::parseNcclTestsRuns("rccl-tests: Version develop:5272cd1\n" + exact, "x.log", h).front().info["library"] ==
          "rccl");
    // The layout comes from the column header: a 2.0-era Broadcast (a root, no redop, 'error' columns) reads, and
    // names broadcast when asked which collective; a row that the header does not describe is refused saying so.
    {
      const std::string oldHead = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor)\n"
                                  "#       size         count    type    root     time   algbw   busbw  error     time   "
                                  "algbw   busbw  error\n";
      const std::string bc = oldHead + "1048576 262144 float 0 10.49 100.00 100.00 0e+00 10.49 100.00 100.00 0e+00\n";
      fb::NcclTestsHints bh;
      bh.ranks = 8;
      CHECK_THROWS_WITH(fb::parseNcclTestsRuns(bc, "x.log", bh), Catch::Contains("(no redop, count = size / 4, root 0) fit "
                                                                                 "broadcast") &&
                                                                 Catch::Contains("x.log:coll=broadcast"));
      bh.coll = "broadcast";
      auto b = fb::parseNcclTestsRuns(bc, "x.log", bh);
      REQUIRE(b.front().rows.size() == 2);
      CHECK(b.front().rows[0].timeUs == Approx(10.49));
      CHECK(b.front().rows[0].wrong == -1);  // a max error, not a count
      const std::string shortRow = oldHead + "1048576 262144 float 10.49 100.00 100.00 0e+00 10.49 100.00 100.00 0e+00\n";
      CHECK_THROWS_WITH(fb::parseNcclTestsRuns(shortRow, "x.log", bh),
                        Catch::Contains("x.log: line 3: expected 12 columns as the column header names them (size count "
                                        "type root, then 4 for each of out-of-place and in-place), got 11"));
    }
    // nccl-tests before June 2020 printed AllGather's algbw and busbw both as size (n - 1) / n / time (ec1b5e2 changed
    // it): 1048576 B in 40 us on 8 ranks, 22.94 and 22.94. Read by its times, with today's busbw (26.21 x 7/8).
    {
      const std::string old2020 = "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 1048576 step: 2(factor)\n"
                                  "#  size  count type time algbw busbw error time algbw busbw error\n"
                                  "1048576 32768 float 40.00 22.94 22.94 0e+00 40.00 22.94 22.94 0e+00\n";
      fb::NcclTestsHints oh;
      oh.ranks = 8;
      oh.coll = "allgather";
      auto o = fb::parseNcclTestsRuns(old2020, "x.log", oh);
      REQUIRE(o.front().rows.size() == 2);
      CHECK(o.front().rows[0].timeUs == Approx(40.0));
      CHECK(o.front().rows[0].busBwGBps == Approx(1048576.0 / 40e3 * 7 / 8));
      CHECK(o.front().info["algbw_convention"] == "nccl-tests before 2020-06: algbw = busbw = size (n - 1) / n / time");
      // today's AllGather on 8 ranks: 26.21 / 22.94, no such note
      auto n = fb::parseNcclTestsRuns(table("all_gather", "1048576 32768 float none -1 40.00 26.21 22.94 0 40.00 26.21 22.94 0"),
                                      "x.log", h);
      CHECK_FALSE(n.front().info.contains("algbw_convention"));
      // an AllReduce given as allgather is still refused (busbw / algbw above 1)
      CHECK_THROWS_WITH(fb::loadRunsAny(kData + "public-nccl-tests/h100-ndr-shahizat-2x8.log:coll=allgather"),
                        Catch::Contains("is allgather the collective the log ran?"));
    }
    // HyperCube's algbw is size (n - 1) / n / time (nccl-tests' HyperCubeGetBw): 1048576 B in 40 us on 8 ranks is
    // 22.94 GB/s, not 26.21.
    {
      fb::NcclTestsHints hc;
      hc.ranks = 8;
      auto hy = fb::parseNcclTestsRuns(table("hypercube", "1048576 32768 float none -1 40.00 22.94 22.94 0 40.00 22.94 22.94 0"),
                                       "x.log", hc);
      CHECK(hy.front().rows.at(0).timeUs == Approx(40.0));
      CHECK_THROWS_WITH(fb::parseNcclTestsRuns(table("hypercube", "1048576 32768 float none -1 40.00 26.21 26.21 0 40.00 26.21 "
                                                                  "26.21 0"),
                                               "x.log", hc),
                        Catch::Contains("algbw 26.21 is not size / time"));
    }
    // Open MPI tags inside a row (ranks' output interleaved) are dropped wherever they sit.
    {
      std::string tagged = exact;
      tagged.replace(tagged.find(" -1 10.49"), 9, " -1[1,0]<stdout>: 10.49");
      tagged.replace(tagged.find(" 0 10.49"), 8, " 0[1,0]<stdout>:    10.49");
      CHECK(fb::parseNcclTestsRuns(tagged, "x.log", h).front().rows.at(1).timeUs == Approx(10.49));
    }
    // A table of one placement (rccl-tests -O 0, say) is refused saying so.
    {
      const std::string one = "# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 1 minBytes 8 maxBytes 8\n"
                              "#  size  count type redop root time algbw busbw #wrong\n"
                              "1048576 262144 float sum -1 10.49 100.00 175.00 0\n";
      CHECK_THROWS_WITH(fb::parseNcclTestsRuns(one, "x.log", h),
                        Catch::Contains("x.log: line 4: the column header names one placement"));
    }
    // A paste indented by a Markdown list reads as the plain one.
    {
      std::string indented;
      for (const auto& line : fb::text::lines(exact)) indented += "    " + line + "\n";
      auto ind = fb::parseNcclTestsRuns(indented, "x.log", h);
      REQUIRE(ind.size() == 1);
      CHECK(ind.front().rows.at(0).timeUs == Approx(10.49));
    }
    // A row whose algbw is not its size / time (each exact to half its last digit) contradicts itself: refused.
    std::string slow = exact;
    slow.replace(slow.find(" 10.49 100.00"), 13, " 12.49 100.00");
    CHECK_THROWS_WITH(fb::parseNcclTestsRuns(slow, "x.log", h),
                      Catch::Contains("x.log: line 4: algbw 100.00 is not size / time (1048576 B / 12.49 us = 83.95 GB/s)"));
    std::string edge = exact;  // 10.49 us is 10.485-10.495: at most 1048576 B / 10.485 us = 100.0072 GB/s
    edge.replace(edge.find(" 10.49 100.00 175.00"), 20, " 10.49 100.01 175.02");  // 100.005-100.015 meets it
    CHECK_NOTHROW(fb::parseNcclTestsRuns(edge, "x.log", h));
    edge.replace(edge.find(" 10.49 100.01 175.02"), 20, " 10.49 100.02 175.03");  // 100.015 and up does not
    CHECK_THROWS_WITH(fb::parseNcclTestsRuns(edge, "x.log", h), Catch::Contains("algbw 100.02 is not size / time"));
    // Per run: a file of an nccl-tests run on NVIDIA GPUs and then an rccl-tests one (a comparison document) keeps
    // each tool's; the rccl-tests line after the first run's rows belongs to the second run, whichever line starts it.
    // A run that names no GPU and has no marker of its own joins the file's rccl-tests runs when no run names an
    // NVIDIA GPU (a second table of one rccl-tests paste); a run on an AMD GPU is RCCL's with no marker at all.
    auto named = [&](const std::string& gpu) {
      std::string t = exact, ranks;
      for (int k = 0; k < 8; ++k)
        ranks += fmt::format("#  Rank {:2} Group  0 Pid {} on host device {:2} [0000:{:02x}:00] {}\n", k, 100 + k, k, k + 1, gpu);
      t.insert(t.find("#  size"), ranks);
      return t;
    };
    h.ranks = 8;
    for (const std::string marker : {"rccl-tests: Version develop:5272cd1\n", "RCCL version : 2.22.3-HEAD:7d8d67c\n",
                                     "mpirun -np 8 /opt/rccl-tests/build/all_reduce_perf -b 8 -e 1M\n"}) {
      auto both = fb::parseNcclTestsRuns(named("NVIDIA H100 80GB HBM3") + marker + exact, "x.log", h);
      REQUIRE(both.size() == 2);
      CHECK(both[0].info["library"] == "nccl");
      CHECK(both[1].info["library"] == "rccl");
      auto rcclFirst = fb::parseNcclTestsRuns(marker + exact + named("NVIDIA H100 80GB HBM3"), "x.log", h);
      REQUIRE(rcclFirst.size() == 2);
      CHECK(rcclFirst[0].info["library"] == "rccl");
      CHECK(rcclFirst[1].info["library"] == "nccl");
      auto oneTool = fb::parseNcclTestsRuns(marker + exact + exact, "x.log", h);
      REQUIRE(oneTool.size() == 2);
      CHECK(oneTool[1].info["library"] == "rccl");
    }
    CHECK(fb::parseNcclTestsRuns(named("AMD Instinct MI300X"), "x.log", h).front().info["library"] == "rccl");
    CHECK(fb::parseNcclTestsRuns(named("MI250X"), "x.log", h).front().info["library"] == "rccl");  // no "AMD" in it
    CHECK(fb::parseNcclTestsRuns(exact + exact, "x.log", h).front().info["library"] == "nccl");
  }
  // Several runs, one elided: refused naming the run and how to read each alone; FILE#k checks run k only.
  {
    const std::string two = kData + "nccl-tests-formats/two-runs-second-elided.log";
    CHECK_THROWS_WITH(fb::loadRunsAny(two), Catch::Contains("two-runs-second-elided.log: run 2 of 2 (from line 60): the rank list "
                                                             "is elided") &&
                                             Catch::Contains("FILE#k reads run k alone") && Catch::Contains(":ranks=N,nodes=M#2"));
    auto first = fb::loadRunsAny(two + "#1");
    REQUIRE(first.size() == 1);
    CHECK(first.front().label == "two-runs-second-elided-1");
    CHECK(first.front().rows.size() == 62);
    auto second = fb::loadRunsAny(two + "#2:ranks=32,nodes=4");  // the hints after #k too
    REQUIRE(second.size() == 1);
    CHECK(second.front().label == "two-runs-second-elided-2");
    CHECK(second.front().rows.front().nRanks == 32);
    CHECK_THROWS_WITH(fb::loadRunsAny(two + "#3"), Catch::Contains("#3 asked for, the file holds 2 runs"));
    CHECK_THROWS_WITH(fb::loadRunAny(two + "#2"), Catch::Contains("run 2 of 2") && Catch::Contains("elided") &&
                                                     Catch::Contains(":ranks=N,nodes=M#2"));  // the advice keeps #k
    // #k past an int (atoi wrapped 4294967297 to 1) and #0 are refused
    CHECK_THROWS_WITH(fb::loadRunsAny(two + "#4294967297"), Catch::Contains("#k counts runs from 1"));
    CHECK_THROWS_WITH(fb::loadRunsAny(two + "#0"), Catch::Contains("#k counts runs from 1"));
  }
  // a collective named beside the file: the descriptors' names and aliases, any case
  for (const char* name : {"allreduce", "all_reduce", "ALL_REDUCE", "AllReduce"}) {
    auto r = fb::loadRunsAny(kData + "public-nccl-tests/h100-ib400-gjaion-2x8.log:coll=" + name);
    REQUIRE(r.size() == 1);
    CHECK(r.front().runJson["nccl_tests"]["coll"] == "allreduce");
  }
  // bad suffixes
  CHECK_THROWS_AS(fb::loadRunsAny(kData + "public-nccl-tests/dgxh100-cnh-2x2.log:coll=frobnicate"), fb::InputError);
  CHECK_THROWS_AS(fb::loadRunsAny(kData + "public-nccl-tests/dgxh100-cnh-2x2.log:ranks=0"), fb::InputError);
  CHECK_THROWS_AS(fb::loadRunsAny(kData + "public-nccl-tests/dgxh100-cnh-2x2.log#2"), fb::InputError);
}

TEST_CASE("nccl_tests_lines: one NCCL INFO line at a time, and the launchers' prefixes", "[report][nccl-tests]") {
  using namespace fb::nccltests;
  // Lines copied from nccl-info/h100-ib-ndr-2x8-gdrdma-nvls-nccl2.26.2-rank0.log and (Pattern) the 2.16.5 RoCE+IB
  // gather log; the last is written here in the form the reader's comment gives (no fixture logs an op line).
  InfoFacts f;
  for (const char* l : {
           "lccn09:2520136:2520136 [0] NCCL INFO NCCL version 2.26.2+cuda12.8",
           "lccn09:2520136:2520234 [0] NCCL INFO NCCL_ALGO set by environment to RING",
           "lccn09:2520136:2520234 [0] NCCL INFO 16 coll channels, 16 collnet channels, 16 nvls channels, 16 p2p "
           "channels, 2 p2p channels per peer",
           "lccn09:2520136:2520332 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[1] via P2P/CUMEM",
           "lccn09:2520136:2520332 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/NCCL RDMA Plugin "
           "v8/0/GDRDMA",
           "n013:101855:101885 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 1, bw 24.000000/24.000000, type "
           "LOC/PHB, sameChannels 1",
           "n013:101855:101885 [0] NCCL INFO AllReduce: opCount 0 ... algorithm Ring protocol Simple"})
    readInfoLine(l, f);
  int wrong = 0;
  // One AMD matcher for the reader and the model's GPU families; case-blind, whole words.
  for (const char* amd : {"AMD Instinct MI300X", "MI250X", "Radeon RX 7900 XTX", "AMD Radeon PRO W7900", "instinct mi100"})
    wrong += !isAmdGpuName(amd);
  for (const char* other : {"NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-32GB", "NVIDIA A100-SXM4-80GB", "", "MIG 1g.10gb"})
    wrong += isAmdGpuName(other);
  // The column header's shape: 2.x with -I 1's per-iteration columns, 2.0-era AllGather (no redop, a max error).
  const HeaderShape i1 = headerShape("#       size         count      type   redop    root     time   algbw   busbw "
                                     "#wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong");
  wrong += !i1.known || !i1.redop || !i1.root || i1.maxError || i1.stride != 8 || i1.placements != 2;
  const HeaderShape old = headerShape("#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error");
  wrong += !old.known || old.redop || old.root || !old.maxError || old.stride != 4 || old.placements != 2;
  wrong += headerShape("#  Rank  0 Group  0 Pid 100 on host device  0 [0x01] NVIDIA H100").known;
  wrong += f.ncclVersions != std::vector<std::string>{"2.26.2+cuda12.8"};
  wrong += f.env.size() != 1 || f.env["NCCL_ALGO"] != "RING";
  wrong += f.channels != 16;  // the coll channels line; a later "nChannels 1" does not replace it
  wrong += f.nvlsChannels != 16;
  wrong += f.transports != std::vector<std::string>{"P2P/CUMEM", "NET/NCCL RDMA Plugin v8"};
  wrong += !f.gdr;
  wrong += f.graphType != "LOC/PHB";
  wrong += f.algos != std::vector<std::string>{"Ring"};
  wrong += f.protos != std::vector<std::string>{"Simple"};
  CHECK(wrong == 0);
  // "nChannels N" gives the count where no "coll channels" line came first
  InfoFacts g;
  readInfoLine("n013:101855:101885 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 1, bw 24.000000/24.000000, type "
               "LOC/PHB, sameChannels 1",
               g);
  CHECK(g.channels == 1);
  CHECK_FALSE(g.gdr);
  // srun -l, Open MPI --tag-output and timestamps, alone and stacked; a data row and a time are left alone
  CHECK(stripPrefixes(" 0: # nThread 1") == "# nThread 1");
  CHECK(stripPrefixes("[1,0]<stdout>:#  Rank  0") == "#  Rank  0");
  // Ray's log prefix (SkyPilot) before the Open MPI tag, on the head and on a worker
  CHECK(stripPrefixes("(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  0") == "#  Rank  0");
  CHECK(stripPrefixes("(worker1, rank=1, pid=2769, ip=10.100.10.12) [1,9]<stdout>:  1024  16") == "  1024  16");
  CHECK(stripPrefixes("(see below) 1024") == "(see below) 1024");  // no pid=: not Ray's
  // today's 13 columns without the header above them; a 12-column row (no root) is not taken for them
  CHECK(isHeaderlessRow(fb::text::words("134217728 33554432 float sum -1 738.7 181.69 340.67 0 739.9 181.40 340.12 0")));
  CHECK(isHeaderlessRow(fb::text::words("1024 16 bfloat16 none -1 20.1 0.05 0.05 0 19.8 0.05 0.05 N/A")));
  CHECK_FALSE(isHeaderlessRow(fb::text::words("134217728 33554432 float sum 738.7 181.69 340.67 0 739.9 181.40 340.12 0")));
  CHECK_FALSE(isHeaderlessRow(fb::text::words("134217728 33554432 words sum -1 738.7 181.69 340.67 0 739.9 181.40 340.12 0")));
  CHECK(stripPrefixes("2025-06-18T10:21:33.123Z  0: 8388608 2097152 float") == "8388608 2097152 float");
  CHECK(stripPrefixes("[10:21:33] [1,3]<stderr>:NCCL version 2.18.3") == "NCCL version 2.18.3");
  CHECK(stripPrefixes("     8388608       2097152     float     sum") == "     8388608       2097152     float     sum");
  CHECK(stripPrefixes("10:21:33 # nThread 1") == "# nThread 1");  // a time without a date, not an srun rank
}

// Error bands and coverage of projected rows (issue 30 item 4), forced projections (item 3) and the
// generic path's pointers to --intra and `nccl fit` for N x G runs (item 2): fabricbench-model nccl
// project / project, run as a user runs them, on the public logs and the lab runs in the repository.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/process.h"
#include "report/csv.h"
#include "model_tool_run.h"

#ifdef FB_MODEL_TOOL
namespace {

namespace fs = std::filesystem;

using fbtest::Out;
using fbtest::slurp;
using fbtest::tool;
// A run that must succeed (exit 0); its output is the failure's message otherwise.
Out ran(const std::string& args) {
  Out o = tool(args);
  if (o.rc != 0) FAIL("exit " << o.rc << ": fabricbench-model " << args << "\n" << o.text);
  return o;
}
std::string tmpDir(const std::string& what) {
  return (fs::temp_directory_path() / ("fb_bands_" + what + "_" + std::to_string(::getpid()))).string();
}
// The table rows of a markdown page ("| 2 | 16 MiB | ..."), split into cells.
std::vector<std::vector<std::string>> rows(const std::string& md) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(md);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) != 0 || line.size() < 3 || !std::isdigit(static_cast<unsigned char>(line[2]))) continue;
    std::vector<std::string> cells;
    std::size_t p = 1;
    while (p < line.size()) {
      auto q = line.find(" |", p);
      if (q == std::string::npos) break;
      std::string c = line.substr(p, q - p);
      cells.push_back(c.substr(c.find_first_not_of(' ')));
      p = q + 2;
    }
    out.push_back(cells);
  }
  return out;
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const std::string kData = FB_MODEL_TEST_DATA;
const std::string kGj = kData + "/public-nccl-tests/h100-ib400-gjaion-2x8.log:coll=allreduce";

}  // namespace

// Item 4 / audit 1: without --evidence every row carries the band of the public validation built into the tool,
// and the built-in file is what `nccl validate --sets` gives today; --evidence none marks every row unvalidated.
TEST_CASE("nccl project: every row has a band or an unvalidated mark, built in from the public validation", "[tool][bands]") {
  const std::string out = tmpDir("builtin");
  auto p = ran("nccl project --fit " + kGj + " --nodes 2,4,16 --gpus 8 --coll allreduce,allgather --sizes 16M,1G -o " + out);
  INFO(p.text);
  CHECK(has(p.text, "the repository's public validation built into this binary, results/model-nccl-validation-public/"));
  auto r = rows(p.text);
  REQUIRE(r.size() == 12);
  for (auto& c : r) {
    REQUIRE(c.size() == 7);
    CHECK(c[4].rfind("±", 0) == 0);  // 2 x 8 AllReduce and AllGather: every pick was validated at this regime
  }
  // 2 x 8 16 MiB: Tree/LL128 at the public sets' 1-64 MiB Tree band (93.5 %: set M's Polaris 256 x 4 AllReduce at 1 MiB,
  // added in session 23; 81.3 % before, set D's 2 x 8 at 1 MiB), inside its coverage.
  CHECK(r[0][1] == "16 MiB");
  CHECK(r[0][4] == "±94 %");  // Tree 1-64 MiB: 93.5 % rounded up
  CHECK(r[0][6] == "-");
  auto csv = fb::readCsvTable(out + "/nccl-projected.csv");
  REQUIRE(csv.size() == 13);
  for (std::size_t i = 1; i < csv.size(); ++i) CHECK(!csv[i][9].empty());  // band_pct

  auto n = ran("nccl project --fit " + kGj + " --nodes 2 --sizes 16M,1G --evidence none -o " + out);
  INFO(n.text);
  CHECK(has(n.text, "No validation evidence (--evidence none): no row carries an error band, every row is marked unvalidated"));
  for (auto& c : rows(n.text)) {
    CHECK(c[4] == "unvalidated");
    CHECK(c[6] == "no validation evidence");
  }

  // The built-in file is today's validation: regenerate it (results/model-nccl-validation-public/README.md) when
  // the model or the sets change.
  const std::string nv = tmpDir("nv");
  auto v = tool("nccl validate --sets " + kData + "/public-nccl-tests/sets.json -o " + nv);
  REQUIRE(v.rc == 0);
  auto fresh = nlohmann::json::parse(slurp(nv + "/nccl-evidence.json"));
  auto kept = nlohmann::json::parse(slurp(std::string(FB_SOURCE_DIR) + "/results/model-nccl-validation-public/nccl-evidence.json"));
  REQUIRE(fresh["cells"].size() == kept["cells"].size());
  REQUIRE(!fresh["cells"].empty());
  for (std::size_t i = 0; i < fresh["cells"].size(); ++i) {
    const auto &a = fresh["cells"][i], &b = kept["cells"][i];
    INFO(a.dump() << "\n  vs the built-in\n" << b.dump());
    CHECK(a == b);  // every figure: sizes, medians, per-collective errors, coverage
  }
  fresh.erase("origin");
  kept.erase("origin");
  CHECK(fresh == kept);
  fs::remove_all(out);
  fs::remove_all(nv);
}

// Audit 2: the evidence records GPUs per node and collectives per (algorithm, regime); projections outside them
// say so; older files (without those keys) are still read.
TEST_CASE("nccl project: GPUs per node and collectives outside the evidence are beyond validation", "[tool][bands]") {
  const std::string out = tmpDir("cov");
  // Built in: Tree was validated on 4 and 8 GPUs a node, NVLSTree on 2, 4 and 8 (set F's 10 x 2), never 16 or 3.
  for (int G : {16, 3}) {
    auto p = ran("nccl project --fit " + kGj + " --nodes 2 --gpus " + std::to_string(G) + " --sizes 16M,1G -o " + out);
    INFO(p.text);
    auto r = rows(p.text);
    REQUIRE(r.size() == 2);
    for (auto& c : r) {
      CHECK(has(c[6], std::to_string(G) + " GPUs per node: "));
      CHECK((has(c[6], "Tree validated with 4, 8 only") || has(c[6], "NVLSTree validated with 2, 4, 8 only")));
    }
  }
  // A hand-made file: Ring validated only on AllGather, 2 nodes x 8 GPUs, 1-64 MiB, max 7 %.
  const std::string ev = out + "-ev.json";
  {
    std::ofstream f(ev);
    f << R"({"format": 2, "kind": "nccl", "origin": "hand", "cells": [{"algo": "Ring", "regime": "1-64MiB", "points": 3,
      "median_abs_err_pct": 5, "max_abs_err_pct": 7, "max_nodes": 2, "min_nodes": 2, "nodes": [2], "gpus_per_node": [8],
      "colls": {"allgather": {"points": 3, "median_abs_err_pct": 5, "max_abs_err_pct": 7}},
      "min_bytes": 1048576, "max_bytes": 33554432}]})";
  }
  auto p = ran("nccl project --fit " + kGj + " --nodes 2 --coll allreduce,allgather --sizes 16M --force algo=ring --evidence " + ev +
                " -o " + out);
  INFO(p.text);
  auto r = rows(p.text);
  REQUIRE(r.size() == 2);
  CHECK(r[0][4] == "±7 %");  // AllReduce: the cell's band, marked as that of another collective
  CHECK(r[0][6] == "Ring validated on allgather, not allreduce (band of those)");
  CHECK(r[1][4] == "±7 %");  // AllGather: inside
  CHECK(r[1][6] == "-");
  // The same file without the coverage keys (as nccl validate wrote it before): read, bands kept, not checked.
  {
    std::ofstream f(ev);
    f << R"({"origin": "old", "cells": [{"algo": "Ring", "regime": "1-64MiB", "points": 3, "median_abs_err_pct": 5,
      "max_abs_err_pct": 7, "max_nodes": 2, "min_bytes": 1048576, "max_bytes": 33554432}]})";
  }
  auto o = ran("nccl project --fit " + kGj + " --nodes 2 --gpus 16 --sizes 16M --force algo=ring --evidence " + ev + " -o " + out);
  INFO(o.text);
  CHECK(has(o.text, "This evidence file predates GPUs-per-node and collective coverage: those are not checked."));
  auto ro = rows(o.text);
  REQUIRE(ro.size() == 1);
  CHECK(ro[0][4] == "±7 %");
  CHECK(ro[0][6] == "-");
  // nccl validate writes the coverage.
  auto v = tool("nccl validate --fit " + kData + "/public-nccl-tests/h100-snellius-1n-g4-all_reduce.log --fit " + kData +
                "/public-nccl-tests/h100-snellius-2n-g4-all_reduce.log --predict " + kData +
                "/public-nccl-tests/h100-snellius-2n-g4-all_gather.log -o " + out + "-v");
  REQUIRE(v.rc == 0);
  auto j = nlohmann::json::parse(slurp(out + "-v/nccl-evidence.json"));
  CHECK(j["format"] == 2);
  REQUIRE(!j["cells"].empty());
  for (auto& c : j["cells"]) {
    CHECK(c["gpus_per_node"] == nlohmann::json::array({4}));
    CHECK(c["nodes"] == nlohmann::json::array({2}));
    CHECK(c["colls"].contains("allgather"));
    CHECK(c["colls"].size() == 1);
  }
  fs::remove_all(out);
  fs::remove_all(out + "-v");
  fs::remove(ev);
}

// Review fixes: an evidence file whose "kind" is not a string, or with two cells for one (algorithm, regime), is
// refused (one line, exit 2); no --sizes; a size inside an algorithm's validated sizes but outside its regime
// cell's is beyond validation.
TEST_CASE("nccl project: malformed evidence, empty sizes and a cell's own size range", "[tool][bands]") {
  const std::string out = tmpDir("evbad"), ev = out + "-ev.json";
  const std::string cell = R"({"algo": "Ring", "regime": "1-64MiB", "points": 3, "median_abs_err_pct": 5, "max_abs_err_pct": 7,
    "max_nodes": 2, "min_nodes": 2, "nodes": [2], "gpus_per_node": [8], "colls": {"allreduce": {"points": 3,
    "median_abs_err_pct": 5, "max_abs_err_pct": 7}}, "min_bytes": 4194304, "max_bytes": 33554432})";
  auto refused = [&](const std::string& json, const std::string& why) {
    {
      std::ofstream f(ev);
      f << json;
    }
    auto p = tool("nccl project --fit " + kGj + " --nodes 2 --sizes 16M --evidence " + ev + " -o " + out);
    INFO(p.text);
    CHECK(p.rc == 2);
    CHECK(p.text.rfind("fabricbench-model: error: --evidence " + ev, 0) == 0);
    CHECK(has(p.text, why));
    CHECK(std::count(p.text.begin(), p.text.end(), '\n') == 1);
  };
  refused(R"({"kind": 3, "cells": [)" + cell + "]}", "\"kind\" is not a string");
  refused(R"({"kind": "nccl", "cells": [)" + cell + "," + cell + "]}", "two cells for Ring at 1-64MiB");
  auto e = tool("nccl project --fit " + kGj + " --nodes 2 --sizes '' -o " + out);
  CHECK(e.rc == 2);
  CHECK(has(e.text, "--sizes: no size given"));
  // Ring saw 4-32 MiB (1-64 MiB cell) and 64 MiB-1 GiB: 2 MiB lies outside Ring's sizes; 48 MiB inside them
  // but outside what its 1-64 MiB cell saw.
  const std::string big = R"({"algo": "Ring", "regime": ">=64MiB", "points": 3, "median_abs_err_pct": 2, "max_abs_err_pct": 3,
    "max_nodes": 2, "min_nodes": 2, "nodes": [2], "gpus_per_node": [8], "colls": {"allreduce": {"points": 3,
    "median_abs_err_pct": 2, "max_abs_err_pct": 3}}, "min_bytes": 67108864, "max_bytes": 1073741824})";
  {
    std::ofstream f(ev);
    f << R"({"format": 2, "kind": "nccl", "cells": [)" + cell + "," + big + "]}";
  }
  auto p = ran("nccl project --fit " + kGj + " --nodes 2 --sizes 2M,16M,48M --force algo=ring --evidence " + ev + " -o " + out);
  INFO(p.text);
  auto r = rows(p.text);
  REQUIRE(r.size() == 3);
  CHECK(r[0][6] == "size outside Ring's validated 4 MiB..1 GiB");
  CHECK(r[1][6] == "-");
  CHECK(has(r[2][6], "size outside Ring's validated 4 MiB..32 MiB at 1-64MiB"));
  for (auto& c : r) CHECK(c[4] == "±7 %");
  fs::remove_all(out);
  fs::remove(ev);
}

// Audit 3: --given forces the fitted runs; --force given (or --force KEY=VALUE) forces the projected rows too.
TEST_CASE("nccl project: --force projects the rows forced, and says so", "[tool][bands]") {
  const std::string out = tmpDir("force");
  auto d = ran("nccl project --fit " + kGj + " --given algo=ring --nodes 2 --sizes 1G -o " + out);
  INFO(d.text);
  CHECK(has(d.text, "Forced runs: the fitted runs had NCCL_ALGO=Ring; the projected rows are NCCL's own choice"));
  auto rd = rows(d.text);
  REQUIRE(rd.size() == 1);
  CHECK(rd[0][5] == "NVLSTree/Simple");  // NCCL's own pick on 2 x 8 at 1 GiB
  auto f = ran("nccl project --fit " + kGj + " --given algo=ring --force given --nodes 2 --sizes 1M,1G -o " + out);
  INFO(f.text);
  CHECK(has(f.text, "Forced: every projected row runs NCCL_ALGO=Ring (--force given)"));
  auto rf = rows(f.text);
  REQUIRE(rf.size() == 2);
  for (auto& c : rf) CHECK(c[5].rfind("Ring/", 0) == 0);
  CHECK(has(rf[1][5], "(forced)"));
  auto csv = fb::readCsvTable(out + "/nccl-projected.csv");
  REQUIRE(csv.size() == 3);
  CHECK(csv[0].back() == "forced");
  CHECK(csv[2][7] == "Ring");
  CHECK(csv[2].back() == "NCCL_ALGO=Ring");
  // Protocol and channels: on 200G NICs (24 GB/s with 2 channels, the line 25) 2 x 8 Ring/Simple with 24 channels (3 a
  // NIC: the line rate, 8 x 25 = 200 GB/s busbw) is faster than with 16 (2 a NIC: 8 x 24 = 192).
  auto c24 = tool("nccl project --fit " + kGj + " --nodes 2 --sizes 8G --fabric hdr=nic=24 --force algo=ring,proto=simple,channels=24 -o " + out);
  REQUIRE(c24.rc == 0);
  auto c16 = tool("nccl project --fit " + kGj + " --nodes 2 --sizes 8G --fabric hdr=nic=24 --force algo=ring,proto=simple,channels=16 -o " + out);
  REQUIRE(c16.rc == 0);
  auto r24 = rows(c24.text), r16 = rows(c16.text);
  REQUIRE(r24.size() == 1);
  REQUIRE(r16.size() == 1);
  CHECK(r24[0][5] == "Ring/Simple (forced)");
  CHECK(std::stod(r24[0][3]) == Approx(200).epsilon(0.01));  // busbw GB/s
  CHECK(std::stod(r16[0][3]) == Approx(192).epsilon(0.01));
  // An algorithm the shape does not offer: the row says so, the rest are projected.
  auto t = ran("nccl project --fit " + kGj + " --nodes 1,2 --sizes 1G --force algo=tree -o " + out);
  INFO(t.text);
  auto rt = rows(t.text);
  REQUIRE(rt.size() == 2);
  CHECK(has(rt[0][6], "not projected: no NCCL algorithm Tree applies to allreduce on 1 node(s)"));
  CHECK(rt[1][5] == "Tree/Simple (forced)");
  // --force given takes what the fitted runs ran with, from their own logs too: gj-aion's tuned run has
  // NCCL_ALGO=Ring and NCCL_MIN_CTAS=24 on its mpirun line.
  auto own = ran("nccl project --fit " + kData + "/public-nccl-tests/h100-ib400-gjaion-2x8-ring-minctas24.log --force given "
                  "--nodes 2 --sizes 1G -o " + out);
  INFO(own.text);
  CHECK(has(own.text, "Forced: every projected row runs NCCL_ALGO=Ring, NCCL_MIN_CTAS=24 (24 channels) (--force given)"));
  auto ro = rows(own.text);
  REQUIRE(ro.size() == 1);
  CHECK(ro[0][5] == "Ring/Simple (forced)");
  // Without --force the same run's settings are named in the same words (forcedOf's), not projected.
  auto note = ran("nccl project --fit " + kData + "/public-nccl-tests/h100-ib400-gjaion-2x8-ring-minctas24.log "
                  "--nodes 2 --sizes 1G -o " + out);
  CHECK(has(note.text, "Forced runs: the fitted runs had NCCL_ALGO=Ring, NCCL_MIN_CTAS=24 (24 channels); the projected "
                       "rows are NCCL's own choice"));
  // A channel count only seen in a log's INFO lines was not forced: our 2 x H200 log (24 coll channels, no
  // NCCL_MIN_CTAS) says nothing of forced runs, and --force given finds nothing forced but NVLS off (0 nvls channels).
  const std::string h200 = kData + "/nccl-tests/h200x2-nccl-tests-allreduce-nvlink.log";
  auto seen = ran("nccl project --fit " + h200 + " --nodes 2 --sizes 1G -o " + out);
  INFO(seen.text);
  CHECK_FALSE(has(seen.text, "Forced runs:"));
  // Bad values: one line naming the option, exit 2.
  for (const char* bad : {"algo=bogus", "channels=24x", "bogus=1", "nvls=3"}) {
    auto b = tool("nccl project --fit " + kGj + " --nodes 2 --force " + bad + " -o " + out);
    INFO(bad << ": " << b.text);
    CHECK(b.rc == 2);
    CHECK(b.text.rfind("fabricbench-model: error: --force ", 0) == 0);
    CHECK(std::count(b.text.begin(), b.text.end(), '\n') == 1);
  }
  // --fabric NAME=nic=GBPS[,nics=R]: each value finite and > 0, each key known (the parser --inter spec: uses).
  for (auto [bad, why] : {std::pair{"hdr=nic=inf", "'nic=inf' needs a number"},
                          {"hdr=nic=0", "'nic=0' must be a number > 0"},
                          {"hdr=nic=24,nics=-1", "'nics=-1' must be a number > 0"},
                          {"hdr=nic=24x", "'nic=24x' needs a number"},
                          {"hdr=nic=24,port=2", "unknown setting 'port' (nic=, nics=)"},
                          {"hdr=nic=24,nic=48", "'nic' given twice"},
                          {"hdr=nic=24,", "an empty setting"},
                          {"hdr=", "an empty setting"},
                          {"hdr=nic=0x18", "'nic=0x18' needs a number"},
                          {"hdr=nic=1e309", "'nic=1e309' is out of range"},
                          {"hdr=nics=4", "needs nic=GBPS"},
                          {"hdr", "expected NAME=nic=GBPS[,nics=R]"}}) {
    auto b = tool("nccl project --fit " + kGj + " --nodes 2 --fabric " + bad + " -o " + out);
    INFO(bad << ": " << b.text);
    CHECK(b.rc == 2);
    CHECK(b.text.rfind(std::string("fabricbench-model: error: --fabric ") + bad + ": " + why, 0) == 0);
    CHECK(std::count(b.text.begin(), b.text.end(), '\n') == 1);
  }
  auto b2 = tool("nccl project --fit " + kGj + " --nodes 2 --force given -o " + out);
  CHECK(b2.rc == 2);
  CHECK(has(b2.text, "--force given: the fitted runs force nothing"));
  auto b3 = tool("nccl fit " + kGj + " --given channels=24x -o " + out);
  CHECK(b3.rc == 2);
  CHECK(has(b3.text, "--given channels=24x: needs a channel count >= 1"));
  fs::remove_all(out);
}

// Audit 4: the generic validate writes evidence.json; project --evidence gives each row and the training step
// their band; without it every row is marked unvalidated.
TEST_CASE("project: bands from validate's evidence.json, unvalidated rows marked", "[tool][bands]") {
  const std::string src = FB_SOURCE_DIR, out = tmpDir("generic");
  auto v = ran("validate --inter " + src + "/results/20261202-labt-1gbit-2x1 --intra " + src +
                "/results/20261202-labt-1gbit-1x2 --check " + src + "/results/20261202-labt-1gbit-3x1 --series tcp --no-plots -o " +
                out + "-v");
  INFO(v.text);
  auto j = nlohmann::json::parse(slurp(out + "-v/evidence.json"));
  CHECK(j["kind"] == "generic");
  std::map<std::string, nlohmann::json> cell;
  for (auto& c : j["cells"]) cell[c["algo"].get<std::string>() + " " + c["regime"].get<std::string>()] = c;
  REQUIRE(cell.count("ring 1-64MiB"));
  CHECK(cell["ring 1-64MiB"]["nodes"] == nlohmann::json::array({3}));
  CHECK(cell["ring 1-64MiB"]["gpus_per_node"] == nlohmann::json::array({1}));
  CHECK(cell["ring 1-64MiB"]["colls"].contains("allreduce"));
  // The max |error| of the cell is the validation's own: recomputed from validation.csv's ring rows at 1-64 MiB.
  double mx = 0;
  auto vc = fb::readCsvTable(out + "-v/validation.csv");
  for (std::size_t i = 1; i < vc.size(); ++i) {
    double b = std::stod(vc[i][8]);
    if (vc[i][9] == "ring" && vc[i][2] == "allreduce" && b >= (1 << 20) && b < (64 << 20))
      mx = std::max(mx, std::fabs(std::stod(vc[i][12])));
  }
  CHECK(mx > 0);
  CHECK(cell["ring 1-64MiB"]["colls"]["allreduce"]["max_abs_err_pct"].get<double>() == Approx(mx).margin(0.001));

  const std::string P = "project --inter lab=" + src + "/results/20261202-labt-1gbit-2x1:tcp --nodes 3,8 --coll allreduce "
                        "--sizes 16M --algo ring --params 1e9 --compute-ms 100 --bucket 16M --no-plots -o " + out;
  auto with = ran(P + " --evidence " + out + "-v/evidence.json");
  INFO(with.text);
  CHECK(has(with.text, "Error bands: the largest |error| that validation (" + out + "-v/evidence.json: fabricbench-model validate"));
  auto csv = fb::readCsvTable(out + "/projected.csv");
  REQUIRE(csv.size() == 3);
  REQUIRE(csv[0][csv[0].size() - 2] == "band_pct");
  // 3 x 1 ring AllReduce at 16 MiB: inside; its band is the cell's (every collective's largest |error|), not
  // AllReduce's own, which can only be narrower.
  const double cellMax = cell["ring 1-64MiB"]["max_abs_err_pct"].get<double>();
  CHECK(cellMax > mx + 0.1);  // here the cell (3.2 %) is wider than AllReduce's own (1.4 %): the band is the cell's
  CHECK(std::stod(csv[1][csv[1].size() - 2]) == Approx(cellMax).margin(0.05));
  CHECK(csv[1].back().empty());
  CHECK(csv[2].back() == "8 nodes > the 3 validated for ring");
  auto tr = fb::readCsvTable(out + "/training.csv");
  REQUIRE(tr.size() == 3);
  CHECK(tr[0][tr[0].size() - 2] == "comm_band_pct");
  CHECK(!tr[1][tr[1].size() - 2].empty());
  CHECK(has(slurp(out + "/projection.md"), "communication ±"));

  auto without = ran(P);
  INFO(without.text);
  CHECK(has(without.text, "**No error bands**: no validation evidence was given, so every projected row below is marked "
                          "**unvalidated**"));
  csv = fb::readCsvTable(out + "/projected.csv");
  for (std::size_t i = 1; i < csv.size(); ++i) {
    CHECK(csv[i][csv[i].size() - 2].empty());
    CHECK(csv[i].back() == "no validation evidence");
  }
  std::size_t marks = 0;
  for (auto at = without.text.find("ms | unvalidated |"); at != std::string::npos; at = without.text.find("ms | unvalidated |", at + 1))
    ++marks;
  CHECK(marks == 2);  // both AllReduce rows: the band column says unvalidated
  // A size past the sizes the measured link was fitted on is said per row (the lab's 2 x 1 tcp AllReduce was fitted
  // on 4 KiB..64 MiB), and a size inside says nothing of it.
  auto far = ran("project --inter lab=" + src + "/results/20261202-labt-1gbit-2x1:tcp --nodes 3 --coll allreduce "
                 "--sizes 16M,64G --algo ring --no-plots -o " + out + " --evidence " + out + "-v/evidence.json");
  INFO(far.text);
  csv = fb::readCsvTable(out + "/projected.csv");
  REQUIRE(csv.size() == 3);
  CHECK(csv[1].back().empty());
  CHECK(csv[2].back().find("size outside the inter-node link's fitted 4 KiB..64 MiB") != std::string::npos);
  CHECK(has(slurp(out + "/projection.md"), "size outside the inter-node link's fitted "));
  // The training step: its sizes are a full bucket (the gradient when smaller) and the last bucket. A 1e9-parameter
  // bf16 gradient in 16 MiB buckets ends in a last bucket of 1.2 MiB... inside 4 KiB..64 MiB: no mark; a 1e12 one
  // in 1 GiB buckets is past the fit.
  auto step = [&](const std::string& params, const std::string& bucket) {
    ran("project --inter lab=" + src + "/results/20261202-labt-1gbit-2x1:tcp --nodes 3 --coll allreduce --sizes 16M "
        "--algo ring --params " + params + " --compute-ms 100 --bucket " + bucket + " --no-plots -o " + out);
    auto t = fb::readCsvTable(out + "/training.csv");
    REQUIRE(t.size() == 2);
    return t[1].back();
  };
  CHECK(step("1e9", "16M").find("fitted") == std::string::npos);
  CHECK(step("1e12", "1G").find("size outside the inter-node link's fitted 4 KiB..64 MiB") != std::string::npos);
  CHECK(step("1e3", "16M").find("size outside the inter-node link's fitted 4 KiB..64 MiB") != std::string::npos);
  // Each tool refuses the other's evidence (one line, exit 2).
  auto x = tool(P + " --evidence " + src + "/results/model-nccl-validation-public/nccl-evidence.json");
  CHECK(x.rc == 2);
  CHECK(has(x.text, "not the evidence.json of `fabricbench-model validate`"));
  auto y = tool("nccl project --fit " + kGj + " --nodes 2 --evidence " + out + "-v/evidence.json -o " + out);
  CHECK(y.rc == 2);
  fs::remove_all(out);
  fs::remove_all(out + "-v");
}

// Audit 5: the generic fit of an N x G run names the two ways that fit it (--intra, nccl fit).
TEST_CASE("fit/validate/project of an N x G run point to --intra and nccl fit", "[tool][bands]") {
  const std::string L = kData + "/public-nccl-tests/h100-snellius-2n-g4-all_reduce.log", out = tmpDir("nxg");
  auto f = tool("fit " + L + " --no-plots -o " + out);
  CHECK(has(f.text, "8 ranks on 2 nodes mixes intra- and inter-node hops"));
  CHECK(has(f.text, "give the intra-node link (--intra SRC) to fit its inter-node hop"));
  CHECK(has(f.text, "nccl-tests log with `fabricbench-model nccl fit RUN`"));
  auto p = tool("project --inter " + L + ":nccl --nodes 4 -o " + out);
  CHECK(p.rc == 2);
  CHECK(has(p.text, "`fabricbench-model nccl fit RUN`"));
  auto n = tool("nccl fit " + L);
  CHECK(n.rc == 0);
  fs::remove_all(out);
}
#endif

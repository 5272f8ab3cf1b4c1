#include "app/accept_command.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "accept/accept.h"
#include "bootstrap/agree.h"
#include "core/error.h"
#include "app/accept_facts.h"
#include "app/accept_pairs.h"
#include "app/accept_report.h"
#include "app/accept_run.h"
#include "app/backends.h"
#include "app/doctor_command.h"
#include "report/process.h"
#include "report/result_sink.h"
#include "report/run_folder.h"
#include "topology/nic_rate.h"
#include "transport/tcp/socket.h"
#include "transport/transport.h"

namespace fb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace acceptcmd;

std::string broadcastString(Bootstrap& bs, const std::string& s) {
  auto b = bs.broadcastFromRoot(std::as_bytes(std::span<const char>(s.data(), s.size())));
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// ---------------------------------------------------------------------------------------------
// Units: one per node (its lowest rank), or every rank (--accept-ranks-as-nodes: a one-host test).
void findUnits(AcceptRun& ctx) {
  auto& bs = ctx.bs;
  const auto& a = ctx.o.acc;
  auto& units = ctx.units;
  auto hosts = bs.hostnames();
  std::map<std::string, int> seen;
  for (int r = 0; r < bs.size(); ++r) {
    if (a.ranksAsNodes) units.push_back({hosts[r] + "#" + std::to_string(r), hosts[r], r});
    else if (!seen.count(hosts[r])) {
      seen[hosts[r]] = r;
      units.push_back({hosts[r], hosts[r], r});
    }
  }
  ctx.n = static_cast<int>(units.size());
  for (int u = 0; u < ctx.n; ++u)
    if (units[u].rank == bs.rank()) ctx.myUnit = u;
}

// The expectation file, read by rank 0 (bad input: exit 2 on every rank, before any measurement).
int readExpect(AcceptRun& ctx) {
  auto& bs = ctx.bs;
  const auto& a = ctx.o.acc;
  try {
    agree(bs, "--expect", [&] {
      if (bs.rank() != 0 || a.expectFile.empty()) return;
      ctx.expect = accept::readExpectations(a.expectFile, acceptPathNames());
      ctx.expectSha = accept::sha256File(a.expectFile);
    });
  } catch (const ConfigError& e) {
    if (bs.rank() == 0) printLine("fabricbench: error: ", e.what());
    return 2;
  }
  return 0;
}

// The run folder (rank 0 claims it); 2 when it cannot.
int claimRunFolder(AcceptRun& ctx) {
  auto& bs = ctx.bs;
  const auto& o = ctx.o;
  std::string claim;
  if (bs.rank() == 0) {
    try {
      std::string id = o.runId;
      if (id.empty()) id = claimRunDir(o.resultsDir, defaultRunId(bs.hostname(), "accept"));
      else {
        if (fs::exists(fs::path(o.resultsDir) / id)) {
          if (!o.overwrite) throw ConfigError("result folder " + (fs::path(o.resultsDir) / id).string() + " already exists (choose another --run-id, or --overwrite)");
          fs::remove_all(fs::path(o.resultsDir) / id);
        }
        fs::create_directories(fs::path(o.resultsDir) / id);
      }
      claim = "OK" + id;
    } catch (const std::exception& e) {
      claim = std::string("ER") + e.what();
    }
  }
  claim = broadcastString(bs, claim);
  if (claim.rfind("ER", 0) == 0) {
    if (bs.rank() == 0) printLine("fabricbench: error: ", claim.substr(2));
    return 2;
  }
  ctx.runId = claim.substr(2);
  ctx.dir = fs::path(o.resultsDir) / ctx.runId;
  return 0;
}

// 1. The doctor on every node (doctor.json in the acceptance folder); its exit code.
int doctorPhase(AcceptRun& ctx) {
  int doctorRc = 0;
  {
    Options d = ctx.o;
    d.writeFiles = true;
    doctorRc = runDoctorCommand(ctx.bs, d, ctx.runId, ctx.commandLine);
  }
  std::cout << std::flush;
  return doctorRc;
}

// This rank's partner in a round and whether this unit is the lower of the pair ({-1, false}: none).
std::pair<int, bool> partnerIn(const std::vector<accept::Pair>& round, int myUnit) {
  for (const auto& p : round) {
    if (p.first == myUnit) return {p.second, true};
    if (p.second == myUnit) return {p.first, false};
  }
  return {-1, false};
}

// Runs a list of rounds of disjoint pairs; returns (a, b) -> (bw, lat) on rank 0. record: each
// round's time goes to roundMs.
std::map<accept::Pair, PairResult> runRounds(AcceptRun& ctx, PairLink& link, Buffers& buf,
                                             const std::vector<std::vector<accept::Pair>>& rounds, bool record,
                                             std::vector<double>& roundMs) {
  auto& bs = ctx.bs;
  const auto& a = ctx.o.acc;
  const auto& units = ctx.units;
  const int myUnit = ctx.myUnit;
  std::map<accept::Pair, PairResult> got;
  for (const auto& round : rounds) {
    bs.barrier();  // every pair of the round starts together
    auto r0 = Clock::now();
    auto [peer, lower] = myUnit >= 0 ? partnerIn(round, myUnit) : std::pair<int, bool>{-1, false};
    std::string mine;
    if (peer >= 0) {
      PairResult res = measurePair(link, units[peer].rank, lower, a, buf, ctx.o.runner.timeout, [&] { bs.barrier(); });
      mine = fmt::format("{} {} {:.9g} {:.9g} {:.9g} {:.9g} {:.9g}", std::min(myUnit, peer), std::max(myUnit, peer), res.bw, res.lat,
                         res.latMedian, res.stalls, res.trips);
    } else {
      bs.barrier();  // the one between the latency and the bandwidth parts of the round
    }
    auto all = bs.allGatherStrings(mine);
    if (record) roundMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - r0).count());
    for (const auto& s : all) {
      if (s.empty()) continue;
      std::istringstream in(s);
      int x, y;
      std::string bws, lats, meds, sts, trs;
      in >> x >> y >> bws >> lats >> meds >> sts >> trs;
      double bw = std::strtod(bws.c_str(), nullptr), lat = std::strtod(lats.c_str(), nullptr);
      auto& g = got[{x, y}];
      if (std::isfinite(bw)) g.bw = std::isfinite(g.bw) ? std::min(g.bw, bw) : bw;
      if (std::isfinite(lat)) {
        g.lat = lat, g.latMedian = std::strtod(meds.c_str(), nullptr);
        g.stalls = std::strtod(sts.c_str(), nullptr), g.trips = std::strtod(trs.c_str(), nullptr);
      }
    }
  }
  return got;
}

// Retests: the suspects again, in disjoint batches, until none clears or `retests` rounds.
void retestSuspects(AcceptRun& ctx, PathRun& pr, PairLink& link, Buffers& buf, std::vector<double>& roundMs) {
  auto& bs = ctx.bs;
  const auto& a = ctx.o.acc;
  const int n = ctx.n;
  const auto& path = pr.path;
  const accept::Thresholds th = thresholdsOf(a);
  // After the last round, one more for the pairs that became slow only then (the retests moved
  // the median and MAD) and were never measured again: no pair is named without a retest.
  std::set<accept::Pair> retested;
  for (int k = 0; k < a.retests + (a.retests > 0 ? 1 : 0); ++k) {
    std::string list;
    if (bs.rank() == 0)
      for (const auto& p : accept::retestPairs(pr.m, th, ctx.expect))
        if (k < a.retests || !retested.count(p)) list += fmt::format("{} {}\n", p.first, p.second);
    list = broadcastString(bs, list);
    std::vector<accept::Pair> sus;
    std::istringstream in(list);
    for (int x, y; in >> x >> y;) sus.emplace_back(x, y), retested.insert(sus.back());
    if (sus.empty()) break;
    // Few suspects: each alone (no other pair's traffic or CPU load beside it); many (a node
    // fault's pairs, a fabric-wide spread): in disjoint batches.
    std::vector<std::vector<accept::Pair>> batches;
    if (static_cast<int>(sus.size()) <= n)
      for (const auto& p : sus) batches.push_back({p});
    else
      batches = accept::disjointBatches(sus);
    auto got = runRounds(ctx, link, buf, batches, false, roundMs);
    json rt = {{"round", k + 1}, {"pairs", json::array()}};
    for (auto& [p, r] : got) {
      double old = pr.m.get(pr.m.bw, p.first, p.second), oldLat = pr.m.get(pr.m.lat, p.first, p.second);
      double oldStall = pr.m.stallFraction(p.first, p.second);
      rt["pairs"].push_back({{"a", p.first}, {"b", p.second}, {"bw_GBps", r.bw}, {"lat_us", r.lat}, {"stalls", r.stalls}, {"trips", r.trips},
                             {"was_bw_GBps", old}, {"was_lat_us", oldLat}, {"was_stall_fraction", oldStall}});
      if (std::isfinite(r.trips) && r.trips > 0 && !(oldStall <= r.stalls / r.trips)) pr.m.setStalls(p.first, p.second, r.stalls, r.trips);
      // the best of the measurements counts: a transient dip clears, a lasting fault stays
      double nb = std::isfinite(old) ? std::max(old, r.bw) : r.bw;
      double nl = std::isfinite(oldLat) ? std::min(oldLat, std::isfinite(r.lat) ? r.lat : oldLat) : r.lat;
      pr.m.set(p.first, p.second, nb, nl, pr.m.get(pr.m.lineRate, p.first, p.second));
      double om = pr.m.get(pr.m.latMedian, p.first, p.second);
      if (std::isfinite(r.latMedian) && !(om <= r.latMedian))
        pr.m.at(pr.m.latMedian, p.first, p.second) = pr.m.at(pr.m.latMedian, p.second, p.first) = r.latMedian;
    }
    if (bs.rank() == 0) fmt::print("# {} retest {}: {} suspect pair(s) measured again\n", path, k + 1, sus.size());
    pr.retests.push_back(rt);
  }
}

// One path's pair test: the link, every unit's line rate, the rounds, the retests.
PathRun measurePath(AcceptRun& ctx, const std::string& path, const std::vector<std::vector<accept::Pair>>& schedule,
                    Buffers& buf, std::vector<double>& roundMs) {
  auto& bs = ctx.bs;
  const auto& o = ctx.o;
  const auto& a = o.acc;
  const auto& units = ctx.units;
  const int n = ctx.n;
  PathRun pr;
  pr.path = path;
  pr.m = accept::PairMatrix(n);
  pr.m.path = path;
  pr.m.bwBytes = a.bwBytes;
  pr.m.latBytes = a.latBytes;
  std::unique_ptr<PairLink> link;
  const BackendEntry* be = findBackend(path);
  if (!be || be->facts->accept == ImplFacts::Accept::kNo || !be->built) {
    pr.skipped = fmt::format("{}: {}", path, be && !be->built ? be->notBuilt : std::string("no pair test over this path"));
  } else {
    try {
      agree(bs, path + " pair test", [&] {
        if (be->pairLink) link = be->pairLink(bs, o);
        else link = std::make_unique<TransportLink>(openTransport(path, bs, o.coll.transport));
        link->registerMemory(buf.s.data(), buf.s.size());
        link->registerMemory(buf.r.data(), buf.r.size());
      });
    } catch (const UnavailableError& e) {
      pr.skipped = e.what();
    }
  }
  if (!pr.skipped.empty()) {
    if (bs.rank() == 0) fmt::print("# pairs over {}: skipped: {}\n", path, pr.skipped);
    return pr;
  }
  if (auto* tl = dynamic_cast<TransportLink*>(link.get())) {
    Transport* t = &tl->transport();
    bs.addLivenessProbe([t] { t->checkPeersAlive(); });
  }
  // Line rate and its basis, per unit.
  auto rates = bs.allGatherStrings(fmt::format("{:.9g}\x1f{}", link->lineRate(), [&] {
    if (auto* tl = dynamic_cast<TransportLink*>(link.get())) {
      for (const auto& [k, v] : tl->transport().path().details)
        if (k == "nominal_basis") return v;
      return std::string();
    }
    // mpi: which interface the library uses is its own; the node's tcp interface (what MPI over
    // TCP uses) is evidence only, never a line rate to judge against
    try {
      return topo::nicRate(tcp::chooseInterface(o.coll.transport.tcpInterface, bs.hostname()).name).basis +
             " (this node's tcp interface; the MPI library's own is not known)";
    } catch (const std::exception&) {
      return std::string();
    }
  }()));
  std::vector<double> unitRate(n, -1);
  pr.lineBasis.assign(n, "");
  for (int u = 0; u < n; ++u) {
    const auto& s = rates[units[u].rank];
    unitRate[u] = std::atof(s.substr(0, s.find('\x1f')).c_str());
    pr.lineBasis[u] = s.substr(s.find('\x1f') + 1);
  }
  pr.label = link->label();
  if (bs.rank() == 0) fmt::print("# pairs over {} ({}): {} rounds of up to {} pairs, {} B bandwidth x {}, {} B latency x {}\n",
                                 path, pr.label, schedule.size(), n / 2, a.bwBytes, a.bwIters, a.latBytes, a.latIters);
  std::cout << std::flush;
  for (auto& [p, r] : runRounds(ctx, *link, buf, schedule, path == a.paths.front() || roundMs.empty(), roundMs)) {
    pr.m.set(p.first, p.second, r.bw, r.lat,
             unitRate[p.first] > 0 && unitRate[p.second] > 0 ? std::min(unitRate[p.first], unitRate[p.second]) : accept::kNaN);
    pr.m.at(pr.m.latMedian, p.first, p.second) = pr.m.at(pr.m.latMedian, p.second, p.first) = r.latMedian;
    pr.m.setStalls(p.first, p.second, r.stalls, r.trips);
  }
  retestSuspects(ctx, pr, *link, buf, roundMs);
  bs.barrier();
  bs.clearLivenessProbes();
  return pr;
}


// 2. All pairs, path by path, with the counters (deltas over the pair test) and facts per unit.
PairPhase pairPhase(AcceptRun& ctx) {
  auto& bs = ctx.bs;
  const auto& o = ctx.o;
  const auto& a = o.acc;
  PairPhase ph;
  // Counters before the pair test.
  auto before = readCounters();
  const auto pairT0 = Clock::now();
  ph.schedule = accept::circleSchedule(ctx.n);
  Buffers buf;
  buf.s.assign(std::max(a.bwBytes, a.latBytes), std::byte{0x5a});
  buf.r.assign(buf.s.size(), std::byte{0});
  for (const auto& path : (a.noPairs ? std::vector<std::string>{} : a.paths))
    ph.runs.push_back(measurePath(ctx, path, ph.schedule, buf, ph.roundMs));
  auto after = readCounters();
  ph.seconds = std::chrono::duration<double>(Clock::now() - pairT0).count();

  // Counters (deltas over the pair test) and facts, per unit.
  json mineCF = json::object();
  if (ctx.myUnit >= 0) {
    json d = json::object();
    for (const auto& [k, v] : after) {
      auto b = before.find(k);
      long long delta = v - (b == before.end() ? 0 : b->second);
      if (delta != 0) d[k] = delta;
    }
    mineCF = {{"counters", d}, {"facts", readFacts(o, bs.hostname())}};
  }
  ph.unitFacts = bs.allGatherStrings(ctx.myUnit >= 0 ? mineCF.dump() : std::string());
  return ph;
}

// 3. The whole allocation's collectives: the normal run, into <dir>/collectives/. -1 when not run
// (note says why).
int collectivesPhase(AcceptRun& ctx, const std::function<int(Options&)>& runCollectives, std::string& collNote) {
  int collRc = -1;
  if (!ctx.o.acc.noCollectives) {
    Options c = ctx.o;
    c.accept = false;
    c.resultsDir = ctx.dir.string();
    c.runId = "collectives";
    c.resume = c.overwrite = false;
    c.writeFiles = true;
    if (ctx.bs.rank() == 0) fmt::print("\n# the whole allocation's collectives (the normal run), into {}/collectives/\n", ctx.dir.string());
    std::cout << std::flush;
    collRc = runCollectives(c);
  } else {
    collNote = "not run (--accept-no-collectives)";
  }
  return collRc;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
int writeBaseline(const Options& o) {
  try {
    json j = accept::baselineFromRun(o.acc.baselineDir, o.acc.margin);
    fs::path out = fs::path(o.acc.baselineDir) / "expect.json";
    writeFileAtomic(out.string(), j.dump(2) + "\n");
    fmt::print("fabricbench --accept-baseline: {} ({} pair and {} collective expectations, margin {})\n", out.string(),
               j["pairs"].size(), j["collectives"].size(), o.acc.margin);
    return 0;
  } catch (const ConfigError& e) {
    printLine("fabricbench: error: ", e.what());
    return 2;
  } catch (const std::exception& e) {
    printLine("fabricbench: error: --accept-baseline: ", e.what());
    return 2;
  }
}


int runAcceptance(MpiBootstrap& bs, Options& o, const std::string& commandLine,
                  const std::function<int(Options&)>& runCollectives) {
  const auto& a = o.acc;
  const auto t0 = Clock::now();
  AcceptRun ctx{bs, o, commandLine};
  findUnits(ctx);
  if (ctx.n < 2 && !a.noPairs) {
    if (bs.rank() == 0)
      printLine("fabricbench: error: --accept: ", ctx.n, " node(s): the pair test needs at least 2 (launch one rank per node on "
                "2 or more nodes; on one host, --accept-ranks-as-nodes treats each rank as a node)");
    return 2;
  }
  if (int rc = readExpect(ctx)) return rc;
  if (int rc = claimRunFolder(ctx)) return rc;
  if (bs.rank() == 0) fmt::print("fabricbench --accept: {} unit(s){}, results in {}/\n\n", ctx.n,
                                 a.ranksAsNodes ? " (each rank a node: --accept-ranks-as-nodes)" : "", ctx.dir.string());
  std::fflush(stdout);

  const int doctorRc = doctorPhase(ctx);              // 1. the doctor on every node
  PairPhase pairs = pairPhase(ctx);                   // 2. all pairs, path by path
  std::string collNote;
  const int collRc = collectivesPhase(ctx, runCollectives, collNote);  // 3. the collectives
  std::string rcText;                                 // 4. verdicts and files (rank 0), the exit code broadcast
  if (bs.rank() == 0) rcText = std::to_string(judgeAndWrite(ctx, pairs, doctorRc, collRc, collNote, t0));
  rcText = broadcastString(bs, rcText);
  return std::atoi(rcText.c_str());
}

}  // namespace fb

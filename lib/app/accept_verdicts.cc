#include "app/accept_run.h"

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
#include "app/backends.h"
#include "app/doctor_command.h"
#include "report/process.h"
#include "report/result_sink.h"
#include "report/run_folder.h"
#include "topology/nic_rate.h"
#include "transport/tcp/socket.h"
#include "transport/transport.h"

namespace fb::acceptcmd {
namespace {

// ---------------------------------------------------------------------------------------------
// 4. Verdicts and files (rank 0).

// Facts that differ between units: the minority value's units; link settings among them are
// suspects by themselves; a load average well above the others' (a CPU hog).
struct UnitDiffs {
  std::map<int, std::vector<std::string>> factDiffs;
  std::vector<std::pair<int, std::string>> settingSuspects;
};

UnitDiffs unitDifferences(const std::vector<json>& cf, int n) {
  UnitDiffs ud;
  auto& factDiffs = ud.factDiffs;
  auto& settingSuspects = ud.settingSuspects;
  std::set<std::string> keys;
  for (const auto& x : cf)
    for (const auto& [k, v] : x["facts"].items()) keys.insert(k);
  for (const auto& k : keys) {
    if (k == "loadavg1") continue;
    std::map<std::string, std::vector<int>> byVal;
    for (int u = 0; u < n; ++u) byVal[cf[u]["facts"].contains(k) ? cf[u]["facts"][k].dump() : "(absent)"].push_back(u);
    if (byVal.size() < 2) continue;
    std::size_t most = 0;
    std::string common;
    for (const auto& [v, us] : byVal)
      if (us.size() > most) most = us.size(), common = v;
    for (const auto& [v, us] : byVal)
      if (v != common)
        for (int u : us) {
          factDiffs[u].push_back(fmt::format("{} {} here, {} on {} other unit(s)", k, v, common, most));
          // a link setting that differs (MTU, speed, RDMA port rate/state) is a suspect by itself,
          // slow or not: jumbo frames on some nodes only, a port trained at a lower rate
          bool linkSetting = k == "mtu" || k == "speed_Mbps" ||
                             (k.rfind("rdma ", 0) == 0 && (k.size() > 5 && (k.substr(k.size() - 5) == " rate" || k.substr(k.size() - 6) == " state")));
          if (linkSetting) settingSuspects.push_back({u, fmt::format("{} {} here, {} on {} other unit(s)", k, v, common, most)});
        }
  }
  {  // a CPU hog: load average well above the others'
    std::vector<double> la;
    for (const auto& x : cf) la.push_back(std::atof(x["facts"].value("loadavg1", std::string("0")).c_str()));
    auto st = accept::statsOf(la, false);
    for (int u = 0; u < n; ++u)
      if (la[u] > st.median + 1.0 && la[u] > 1.5 * st.median)
        factDiffs[u].push_back(fmt::format("load average {:.2f} (median of the units {:.2f}): another process busy on this node?", la[u], st.median));
  }
  return ud;
}

// What can explain a unit's suspect: the doctor's differences and failed rows for its host, the
// counters that rose more there than on the median unit, its differing facts, its line-rate basis.
struct Evidence {
  const AcceptRun& ctx;
  const json& doc;
  const std::vector<json>& cf;
  const std::map<int, std::vector<std::string>>& factDiffs;
  const std::vector<PathRun>& runs;
  double pairSeconds;

  std::vector<std::string> causesOf(int u, const std::string& path) const {
    const auto& units = ctx.units;
    const int n = ctx.n;
    std::vector<std::string> c;
    const std::string& host = units[u].host;
    for (const auto& d : doc.value("differences", json::array()))
      if (d.is_string() && d.get<std::string>().find(host) != std::string::npos) c.push_back("doctor: " + d.get<std::string>());
    for (const auto& row : doc.value("rows", json::array())) {
      if (row.value("verdict", std::string()) == "pass" || row.value("verdict", std::string()) == "skip" || !row.value("differs", false)) continue;
      auto ns = row.value("nodes", std::vector<std::string>{});
      if (std::find(ns.begin(), ns.end(), host) != ns.end() && ns.size() < doc.value("nodes", json::array()).size())
        c.push_back(fmt::format("doctor {} ({}): {}", row.value("check", std::string()), row.value("verdict", std::string()), row.value("evidence", std::string())));
    }
    // counters that rose more here than on the median unit (node-wide counters shared by units of
    // one host, or rising everywhere, explain nothing about this unit)
    for (const auto& [k, val] : cf[u]["counters"].items()) {
      std::vector<double> all;
      for (const auto& x : cf) all.push_back(x["counters"].contains(k) ? x["counters"][k].get<double>() : 0.0);
      std::string why = accept::counterCause(k, val.get<double>(), all, pairSeconds);
      if (!why.empty()) c.push_back(why);
    }
    auto fd = factDiffs.find(u);
    if (fd != factDiffs.end())
      for (const auto& f : fd->second) c.push_back(f);
    for (const auto& r : runs)
      if (r.path == path && u < static_cast<int>(r.lineBasis.size()) && !r.lineBasis[u].empty()) {
        std::map<std::string, int> count;
        for (const auto& b : r.lineBasis) ++count[b];
        if (count[r.lineBasis[u]] * 2 < n) c.push_back("line rate here: " + r.lineBasis[u] + " (differs from most units)");
      }
    return c;
  }

  // Beside a suspect that stalls (packet loss): the unit's TCP retransmissions when above the
  // median unit's (accept::retransEvidence), unless causesOf has the counter already.
  std::vector<std::string> stallEvidenceOf(int u) const {
    std::vector<std::string> c;
    for (const auto& [k, val] : cf[u]["counters"].items()) {
      std::vector<double> all;
      for (const auto& x : cf) all.push_back(x["counters"].contains(k) ? x["counters"][k].get<double>() : 0.0);
      if (!accept::counterCause(k, val.get<double>(), all, pairSeconds).empty()) continue;
      std::string why = accept::retransEvidence(k, val.get<double>(), all);
      if (!why.empty()) c.push_back(why);
    }
    return c;
  }
};

// The verdict as it builds up: exit code, reasons, suspects, threshold failures, paths.
struct Verdict {
  int rc = 0;
  std::vector<std::string> reasons;
  json paths = json::array(), suspects = json::array(), failures = json::array();
  bool partial = false;
};

// Each measured path judged (accept::judgePath), its suspects joined with their evidence, and its
// part of acceptance.json.
void judgePaths(const AcceptRun& ctx, std::vector<PathRun>& runs, const accept::Thresholds& th,
                const std::vector<std::string>& names, const Evidence& ev, Verdict& vd) {
  const auto& o = ctx.o;
  const auto& a = o.acc;
  const int n = ctx.n;
  auto& paths = vd.paths;
  auto& suspects = vd.suspects;
  auto& failures = vd.failures;
  for (auto& r : runs) {
    json pj = {{"path", r.path}, {"skipped", r.skipped}, {"label", r.label}, {"bw_bytes", a.bwBytes}, {"lat_bytes", a.latBytes}};
    if (!r.skipped.empty()) {
      if (std::find(o.required.begin(), o.required.end(), r.path) != o.required.end()) {
        vd.partial = true;
        vd.reasons.push_back("required path " + r.path + " absent: " + r.skipped);
      }
      paths.push_back(pj);
      continue;
    }
    r.verdict = accept::judgePath(r.m, th, ctx.expect, names);
    auto& v = r.verdict;
    for (auto& s : v.suspects) {
      for (int u : s.units) {
        for (auto& c : ev.causesOf(u, r.path)) s.cause.push_back(names[u] + ": " + c);
        if (s.stalled)
          for (auto& c : ev.stallEvidenceOf(u)) s.cause.push_back(names[u] + ": " + c);
      }
      std::vector<std::string> who;
      for (int u : s.units) who.push_back(names[u]);
      if (who.empty()) who.push_back("(all units)");
      suspects.push_back({{"kind", s.kind}, {"path", s.path}, {"units", who}, {"why", s.why}, {"likely_cause", s.cause}});
    }
    for (auto& f : v.failures) failures.push_back(f.row);
    auto mat = [&](const std::vector<double>& x) {
      json m = json::array();
      for (int i = 0; i < n; ++i) {
        json row = json::array();
        for (int j = 0; j < n; ++j) row.push_back(std::isfinite(r.m.get(x, i, j)) ? json(r.m.get(x, i, j)) : json(nullptr));
        m.push_back(row);
      }
      return m;
    };
    pj["bw"] = {{"median", v.bw.median}, {"mad", v.bw.mad}, {"best", v.bw.best}, {"p90", v.bw.ref}, {"pairs", v.bw.count}};
    pj["lat"] = {{"median", v.lat.median}, {"mad", v.lat.mad}, {"best", v.lat.best}, {"p10", v.lat.ref}, {"pairs", v.lat.count}};
    pj["matrix_bw_GBps"] = mat(r.m.bw);
    pj["matrix_lat_us"] = mat(r.m.lat);
    pj["matrix_lat_median_us"] = mat(r.m.latMedian);
    pj["stalls"] = {{"median_fraction", v.stall.median}, {"mad_fraction", v.stall.mad}, {"pairs", v.stall.count}};
    pj["matrix_stalls"] = mat(r.m.stalls);
    pj["matrix_round_trips"] = mat(r.m.trips);
    pj["line_rate_GBps"] = mat(r.m.lineRate);
    pj["line_rate_basis"] = r.lineBasis;
    pj["retests"] = r.retests;
    json slow = json::array();
    for (const auto& f : v.slow) slow.push_back({{"a", names[f.pair.first]}, {"b", names[f.pair.second]}, {"why", f.why}});
    pj["slow_pairs_after_retests"] = slow;
    paths.push_back(pj);
  }
  for (const auto& p : o.required)
    if (std::find(a.paths.begin(), a.paths.end(), p) == a.paths.end() && p != "gpu" && !a.noPairs) {
      vd.partial = true;
      vd.reasons.push_back("required path " + p + " not in --accept-paths");
    }
}

// Suspects that need no slow pair: a differing link setting, and a busy node (a CPU hog) by its
// counters, unless its slow pairs named it already.
void addUnitSuspects(const AcceptRun& ctx, const UnitDiffs& ud, const std::vector<json>& cf, const std::vector<std::string>& names,
                     const Evidence& ev, double pairSeconds, Verdict& vd) {
  const int n = ctx.n;
  auto& suspects = vd.suspects;
  for (const auto& [u, what] : ud.settingSuspects) {
    json cause = json::array();
    for (const auto& c : ev.causesOf(u, "")) cause.push_back(names[u] + ": " + c);
    suspects.push_back({{"kind", "setting"}, {"path", "node"}, {"units", {names[u]}},
                        {"why", {"link setting differs from the other units: " + what}}, {"likely_cause", cause}});
  }
  {  // a busy node (a CPU hog): a suspect by its counters, unless its slow pairs named it already
    std::vector<std::map<std::string, double>> deltas(n);
    for (int u = 0; u < n; ++u)
      for (const auto& [k, v] : cf[u]["counters"].items()) deltas[u][k] = v.get<double>();
    for (const auto& [u, what] : accept::busyUnits(deltas, pairSeconds)) {
      // Its slow pairs on every path are explained by it, as a node fault's are: a node suspect
      // on one path does not leave its links on another path as separate suspects.
      json why = json::array(), rest = json::array();
      for (auto& s : suspects) {
        auto us = s["units"].get<std::vector<std::string>>();
        if (s["kind"] == "link" && std::find(us.begin(), us.end(), names[u]) != us.end())
          why.push_back(fmt::format("with {} ({}): {}", us[0] == names[u] ? us[1] : us[0], s["path"].get<std::string>(),
                                    fmt::join(s["why"].get<std::vector<std::string>>(), "; ")));
        else rest.push_back(s);
      }
      suspects = rest;
      bool named = false;
      for (auto& s : suspects)
        if (s["kind"] == "node" && s["units"] == json::array({names[u]})) {
          if (std::find(s["likely_cause"].begin(), s["likely_cause"].end(), json(names[u] + ": " + what)) == s["likely_cause"].end())
            s["likely_cause"].push_back(names[u] + ": " + what);  // the rank counters have no counterCause line
          if (!named)
            for (const auto& w : why) s["why"].push_back(w);
          named = true;
        }
      if (named) continue;
      json cause = {names[u] + ": " + what};
      why.insert(why.begin(), "busy node: " + what);
      for (const auto& c : ev.causesOf(u, ""))
        if (c != what) cause.push_back(names[u] + ": " + c);
      suspects.push_back({{"kind", "node"}, {"path", "cpu"}, {"units", {names[u]}}, {"why", why}, {"likely_cause", cause}});
    }
  }
}

// The collectives run against --expect; its part of acceptance.json.
json judgeCollectives(const AcceptRun& ctx, int collRc, const std::string& collNote, Verdict& vd) {
  const auto& a = ctx.o.acc;
  const auto& dir = ctx.dir;
  const auto& expect = ctx.expect;
  auto& rc = vd.rc;
  auto& reasons = vd.reasons;
  json collJ = {{"exit_code", collRc}, {"note", collNote}, {"dir", "collectives"}};
  json collFails = json::array();
  if (!a.noCollectives) {
    if (collRc != 0) {
      rc = accept::combineExit(rc, collRc == 4 ? 4 : 1);
      reasons.push_back(fmt::format("the collectives run ended with exit {} (collectives/report.md)", collRc));
    }
    std::vector<Sample> rows;
    try {
      if (fs::exists(dir / "collectives" / "table.csv")) rows = readCsv((dir / "collectives" / "table.csv").string());
    } catch (const std::exception& e) {
      reasons.push_back(std::string("collectives/table.csv unreadable: ") + e.what());
    }
    for (const auto& ce : expect.collectives) {
      const Sample* hit = nullptr;
      for (const auto& s : rows)
        if (s.impl == ce.impl && s.coll == ce.collective && s.bytes == ce.bytes && (!hit || (hit->inPlace && !s.inPlace))) hit = &s;
      std::string who = fmt::format("{} {} {} B", ce.impl, ce.collective, ce.bytes);
      if (!hit) {
        collFails.push_back(who + ": not measured by this run (expected in " + expect.source + ")");
        vd.partial = true;
        continue;
      }
      if (ce.minBusBwGBps && hit->busBwGBps < *ce.minBusBwGBps)
        collFails.push_back(fmt::format("{}: busbw {:.3g} GB/s < expected {:.3g} GB/s", who, hit->busBwGBps, *ce.minBusBwGBps)), rc = accept::combineExit(rc, 1);
      if (ce.maxLatUs && hit->timeUs > *ce.maxLatUs)
        collFails.push_back(fmt::format("{}: time {:.3g} us > expected {:.3g} us", who, hit->timeUs, *ce.maxLatUs)), rc = accept::combineExit(rc, 1);
    }
  }
  collJ["failures"] = collFails;
  if (!collFails.empty()) reasons.push_back(fmt::format("{} collective expectation(s) not met", collFails.size()));
  return collJ;
}

// The thresholds as acceptance.json and evidence.json record them.
json thresholdsJson(const accept::Thresholds& th, const Options::Accept& a, const std::string& expectSha) {
  return {{"line_rate_floor", th.lineRateFloor}, {"best_bw_fraction", th.bestBwFraction}, {"best_lat_factor", th.bestLatFactor},
          {"reference", "90th percentile pair (bandwidth), 10th (latency)"}, {"fabric_fraction", th.fabricFraction}, {"mad_k", th.madK}, {"mad_min_effect_bw", th.madMinEffect}, {"mad_min_effect_lat", th.madMinEffectLat}, {"node_fraction", th.nodeFraction},
          {"latency_rule", "both: > best_lat_factor x the 10th percentile pair and a MAD outlier (3 pairs or more)"},
          {"stall_min_ms", th.stallMinUs / 1000}, {"stall_floor_factor", th.stallFloorFactor}, {"stall_min_count", th.stallMinCount},
          {"stall_factor", th.stallFactor},
          {"expect_file", a.expectFile}, {"expect_sha256", expectSha}, {"retests", a.retests}};
}

// report.md: the verdict, the thresholds, the suspects, the failures, the units, per path the
// heatmaps and matrices (writes the heatmap files), the collectives.
std::string reportMd(const AcceptRun& ctx, const std::vector<PathRun>& runs, const accept::Thresholds& th, const Verdict& vd,
                     const json& collFails, int collRc, const std::string& collNote, const std::string& status,
                     std::size_t rounds, double wallS) {
  const auto& a = ctx.o.acc;
  const auto& units = ctx.units;
  const int n = ctx.n;
  const auto& dir = ctx.dir;
  const int rc = vd.rc;
  const auto& reasons = vd.reasons;
  const auto& suspects = vd.suspects;
  const auto& failures = vd.failures;
  std::string md = fmt::format("# Acceptance {}: **{}** (exit {})\n\n", ctx.runId, status, rc);
  md += fmt::format("`{}`\n\n{} unit(s){}; {} rounds of at most {} disjoint pairs (circle method); wall time {:.1f} s.\n\n",
                    ctx.commandLine, n, a.ranksAsNodes ? " (each rank treated as a node)" : "", rounds, n / 2, wallS);
  for (const auto& r : reasons) md += "- " + r + "\n";
  md += "\n## Thresholds used\n\n";
  md += fmt::format("- pair bandwidth >= {:.0f} % of the line rate where known (--accept-floor)\n", 100 * th.lineRateFloor);
  md += fmt::format("- slow pair (relative): bandwidth < {:.0f} % of the best pairs' (90th percentile), latency > {:.1f} x the best "
                    "pairs' (10th percentile), or farther than {} x 1.4826 x MAD from the median and {:.0f} % (bandwidth) / {:.0f} % (latency) "
                    "off it; node fault: >= {:.0f} % (and >= 2) of a unit's pairs slow; more than {:.0f} % of all pairs slow: "
                    "fabric-wide, no node or link named\n",
                    100 * th.bestBwFraction, th.bestLatFactor, th.madK, 100 * th.madMinEffect, 100 * th.madMinEffectLat,
                    100 * th.nodeFraction, 100 * th.fabricFraction);
  md += fmt::format("- a pair's latency counts as slow only when it fails both latency rules above (the tolerance and the MAD "
                    "outlier); its bandwidth when it fails either\n");
  md += fmt::format("- stalls (packet loss): a round trip of the latency test >= {:.0f} ms (or {:.0f} x the pair's shortest) waited "
                    "for a retransmission; a pair with >= {} stalls, its stall fraction more than {} x 1.4826 x MAD above the pairs' "
                    "median and >= {:.0f} x it, is slow; joined with its nodes' TCP RetransSegs\n",
                    th.stallMinUs / 1000, th.stallFloorFactor, th.stallMinCount, th.madK, th.stallFactor);
  md += fmt::format("- retests of the slow pairs: up to {} rounds (the best measurement counts)\n", a.retests);
  md += a.expectFile.empty() ? "- no --expect file\n" : fmt::format("- --expect {} (sha256 {})\n", a.expectFile, ctx.expectSha);
  md += "\n## Suspects\n\n";
  if (suspects.empty()) md += "None.\n";
  for (const auto& s : suspects) {
    md += fmt::format("- **{} fault** on {}: {}\n", s["kind"].get<std::string>(), s["path"].get<std::string>(),
                      fmt::format("{}", fmt::join(s["units"].get<std::vector<std::string>>(), " <-> ")));
    for (const auto& w : s["why"]) md += "  - " + w.get<std::string>() + "\n";
    for (const auto& c : s["likely_cause"]) md += "  - evidence: " + c.get<std::string>() + "\n";
    if (s["likely_cause"].empty()) md += "  - evidence: no doctor difference, counter or link setting explains it\n";
  }
  if (!failures.empty() || !collFails.empty()) {
    md += "\n## Threshold failures\n\n";
    for (const auto& f : failures) md += "- " + f.get<std::string>() + "\n";
    for (const auto& f : collFails) md += "- " + f.get<std::string>() + "\n";
  }
  md += "\n## Units\n\n| # | unit | host | rank |\n|---|---|---|---|\n";
  for (int u = 0; u < n; ++u) md += fmt::format("| {} | {} | {} | {} |\n", u, units[u].name, units[u].host, units[u].rank);
  for (const auto& r : runs) {
    md += fmt::format("\n## Pairs over {}\n\n", r.path);
    if (!r.skipped.empty()) {
      md += "Skipped: " + r.skipped + "\n";
      continue;
    }
    md += fmt::format("{}. Bandwidth ({} B each way, both directions at once): median {} GB/s, MAD {}, best {}. "
                      "Latency floor ({} B, shortest half round trip of each pair; medians in acceptance.json): median {} us, MAD {}, best {}.\n\n",
                      r.label, a.bwBytes, fmtNum(r.verdict.bw.median), fmtNum(r.verdict.bw.mad), fmtNum(r.verdict.bw.best), a.latBytes,
                      fmtNum(r.verdict.lat.median), fmtNum(r.verdict.lat.mad), fmtNum(r.verdict.lat.best));
    {  // stalled round trips of the latency test, per pair that had any
      std::vector<std::string> st;
      for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j)
          if (r.m.get(r.m.stalls, i, j) > 0)
            st.push_back(fmt::format("{}-{} {:.0f}/{:.0f}", units[i].name, units[j].name, r.m.get(r.m.stalls, i, j), r.m.get(r.m.trips, i, j)));
      md += fmt::format("Stalled round trips (>= {:.0f} ms): median pair {:.1f} %, MAD {:.1f} %; {}.\n\n", th.stallMinUs / 1000,
                        100 * r.verdict.stall.median, 100 * r.verdict.stall.mad,
                        st.empty() ? std::string("no pair stalled") : fmt::format("{}", fmt::join(st, ", ")));
    }
    for (auto [stem, title, vec, unit] : {std::tuple<std::string, std::string, const std::vector<double>*, std::string>{
                                              "heatmap-" + r.path + "-bw", r.path + " pair bandwidth GB/s", &r.m.bw, "GB/s"},
                                          {"heatmap-" + r.path + "-lat", r.path + " pair latency floor us", &r.m.lat, "us"}}) {
      std::string why = heatmap(dir, stem, title, r.m, *vec, unit);
      if (why.empty()) md += fmt::format("![{}]({}.png) ([SVG]({}.svg))\n\n", title, stem, stem);
      else md += "(" + why + ")\n\n";
      if (r.m.n <= 32) md += title + ", unit x unit:\n\n" + mdMatrix(r.m, *vec) + "\n";
      else md += fmt::format("{}, unit x unit: {}.dat ({} x {}; too large for a table here)\n\n", title, stem, r.m.n, r.m.n);
    }
  }
  md += "\n## The collectives\n\n";
  md += a.noCollectives ? collNote + "\n" : fmt::format("The normal run, exit {}: [collectives/report.md](collectives/report.md).\n", collRc);
  md += "\n## Files\n\nacceptance.json (everything above), doctor.json / doctor.txt, heatmap-*.{dat,png,svg}, collectives/, "
        "evidence.json (sha256 of every input and result).\n";
  return md;
}

// evidence.json: sha256 of every file in the folder, and of the inputs.
void writeEvidence(const AcceptRun& ctx, const json& thJ) {
  const auto& a = ctx.o.acc;
  const auto& dir = ctx.dir;
  json files = json::object();
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "evidence.json")
      files[fs::relative(e.path(), dir).string()] = accept::sha256File(e.path().string());
  json ev = {{"schema", "fabricbench-acceptance-evidence/1"}, {"run_id", ctx.runId}, {"command_line", ctx.commandLine},
             {"thresholds", thJ}, {"thresholds_sha256", accept::sha256Hex(thJ.dump())},
             {"inputs", a.expectFile.empty() ? json::object() : json{{a.expectFile, ctx.expectSha}}}, {"files", files}};
  writeText(dir / "evidence.json", ev.dump(2) + "\n");
}

}  // namespace

// 4. Rank 0: the verdicts, acceptance.json, report.md, evidence.json and the closing lines; the exit code.
int judgeAndWrite(const AcceptRun& ctx, PairPhase& ph, int doctorRc, int collRc, const std::string& collNote,
                  Clock::time_point t0) {
  const auto& a = ctx.o.acc;
  const auto& units = ctx.units;
  const int n = ctx.n;
  const auto& dir = ctx.dir;
  Verdict vd;
  const accept::Thresholds th = thresholdsOf(a);
  std::vector<std::string> names;
  for (const auto& u : units) names.push_back(u.name);
  std::vector<json> cf(n);
  for (int u = 0; u < n; ++u) cf[u] = json::parse(ph.unitFacts[units[u].rank]);
  // Doctor: its differences, per host.
  json doc;
  try {
    std::ifstream in(dir / "doctor.json");
    doc = json::parse(in);
  } catch (const std::exception&) {
    doc = json::object();
  }
  if (doctorRc != 0) {
    vd.rc = accept::combineExit(vd.rc, 1);
    vd.reasons.push_back("the doctor failed a check (doctor.txt)");
  }
  UnitDiffs ud = unitDifferences(cf, n);
  Evidence ev{ctx, doc, cf, ud.factDiffs, ph.runs, ph.seconds};
  judgePaths(ctx, ph.runs, th, names, ev, vd);
  addUnitSuspects(ctx, ud, cf, names, ev, ph.seconds, vd);
  if (!vd.suspects.empty()) vd.reasons.push_back(fmt::format("{} suspect(s)", vd.suspects.size()));
  if (!vd.failures.empty()) vd.reasons.push_back(fmt::format("{} pair threshold failure(s)", vd.failures.size()));
  if (!vd.suspects.empty() || !vd.failures.empty()) vd.rc = accept::combineExit(vd.rc, 1);
  json collJ = judgeCollectives(ctx, collRc, collNote, vd);
  if (vd.partial) vd.rc = accept::combineExit(vd.rc, 4);
  const int rc = vd.rc;
  std::string status = rc == 0 ? "accepted" : rc == 4 ? "partial" : "not accepted";
  double wallS = std::chrono::duration<double>(Clock::now() - t0).count();
  json unitsJ = json::array();
  for (int u = 0; u < n; ++u) unitsJ.push_back({{"index", u}, {"name", units[u].name}, {"host", units[u].host}, {"rank", units[u].rank},
                                                {"facts", cf[u]["facts"]}, {"counter_deltas", cf[u]["counters"]}});
  json thJ = thresholdsJson(th, a, ctx.expectSha);
  json acc = {{"schema", "fabricbench-acceptance/1"}, {"run_id", ctx.runId}, {"command_line", ctx.commandLine},
              {"verdict", {{"status", status}, {"exit_code", rc}, {"reasons", vd.reasons}}},
              {"units", unitsJ}, {"ranks_as_nodes", a.ranksAsNodes}, {"thresholds", thJ},
              {"doctor", {{"exit_code", doctorRc}, {"differences", doc.value("differences", json::array())}, {"file", "doctor.json"}}},
              {"schedule", {{"units", n}, {"rounds", ph.schedule.size()}, {"pairs", n * (n - 1) / 2}, {"round_ms", ph.roundMs}}},
              {"paths", vd.paths}, {"suspects", vd.suspects}, {"threshold_failures", vd.failures}, {"collectives", collJ},
              {"wall_s", wallS}};
  writeText(dir / "acceptance.json", acc.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  writeText(dir / "report.md", reportMd(ctx, ph.runs, th, vd, collJ["failures"], collRc, collNote, status, ph.schedule.size(), wallS));
  writeEvidence(ctx, thJ);
  fmt::print("\n# acceptance: {} (exit {}){}{}; results in {}/ (report.md, acceptance.json, evidence.json)\n",
             status, rc, vd.reasons.empty() ? "" : ": ", fmt::join(vd.reasons, "; "), dir.string());
  for (const auto& s : vd.suspects)
    fmt::print("# suspect: {} fault on {}: {}{}\n", s["kind"].get<std::string>(), s["path"].get<std::string>(),
               fmt::join(s["units"].get<std::vector<std::string>>(), " <-> "),
               s["likely_cause"].empty() ? std::string() : " — " + s["likely_cause"][0].get<std::string>());
  std::fflush(stdout);
  return rc;
}

}  // namespace fb::acceptcmd

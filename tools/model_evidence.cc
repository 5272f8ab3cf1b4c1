// Validation evidence and the error bands of projected rows (model_evidence.h).
#include "model_evidence.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "collectives/spec.h"
#include "model_common.h"
#include "report/import.h"

namespace fb::tools {

std::string regimeOf(double bytes) { return bytes < (1 << 20) ? "<1MiB" : bytes < (64 << 20) ? "1-64MiB" : ">=64MiB"; }

namespace {


template <class C>
std::string joined(const C& xs) {
  std::string s;
  for (const auto& x : xs) s += (s.empty() ? "" : ", ") + fmt::format("{}", x);
  return s;
}

// {median, max} of |errors|; the median as nccl-evidence.json has always written it (the upper middle).
std::pair<double, double> stats(std::vector<double> e) {
  std::sort(e.begin(), e.end());
  return {e[e.size() / 2], e.back()};
}

}  // namespace

void EvidenceBuilder::add(const std::string& algo, const std::string& coll, double bytes, int nodes, int gpusPerNode,
                          double absErrPct, const std::string& impl) {
  auto& c = cells[{algo, regimeOf(bytes)}];
  c.err.push_back(std::fabs(absErrPct));
  c.byColl[coll].push_back(std::fabs(absErrPct));
  c.nodes.insert(nodes);
  c.gpus.insert(gpusPerNode);
  if (!impl.empty()) c.impls.insert(impl);
  c.minBytes = c.minBytes == 0 ? bytes : std::min(c.minBytes, bytes);
  c.maxBytes = std::max(c.maxBytes, bytes);
}

nlohmann::json EvidenceBuilder::toJson(const std::string& kind, const std::string& origin) const {
  nlohmann::json j;
  j["format"] = 2;
  j["kind"] = kind;
  j["origin"] = origin;
  j["cells"] = nlohmann::json::array();
  for (const auto& [k, c] : cells) {
    auto [med, mx] = stats(c.err);
    nlohmann::json colls = nlohmann::json::object();
    for (const auto& [coll, e] : c.byColl) {
      auto [cm, cx] = stats(e);
      colls[coll] = {{"points", e.size()}, {"median_abs_err_pct", cm}, {"max_abs_err_pct", cx}};
    }
    nlohmann::json cell = {{"algo", k.first}, {"regime", k.second}, {"points", c.err.size()}, {"median_abs_err_pct", med},
                           {"max_abs_err_pct", mx}, {"max_nodes", *c.nodes.rbegin()}, {"min_nodes", *c.nodes.begin()},
                           {"nodes", c.nodes}, {"gpus_per_node", c.gpus}, {"colls", colls},
                           {"min_bytes", c.minBytes}, {"max_bytes", c.maxBytes}};
    if (!c.impls.empty()) cell["impls"] = c.impls;
    j["cells"].push_back(cell);
  }
  if (!leftOut.empty()) j["left_out"] = leftOut;
  return j;
}

Evidence parseEvidence(const std::string& text, const std::string& source) {
  Evidence ev;
  ev.source = source;
  try {
    ev.j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: not JSON ({})", source, e.what()));
  }
  if (!ev.j.is_object() || !ev.j.contains("cells") || !ev.j["cells"].is_array())
    throw InputError(fmt::format("{}: not validation evidence (no \"cells\" array; nccl validate -o DIR writes "
                                 "DIR/nccl-evidence.json, validate -o DIR writes DIR/evidence.json)",
                                 source));
  for (const char* k : {"kind", "origin"})
    if (ev.j.contains(k) && !ev.j[k].is_string()) throw InputError(fmt::format("{}: \"{}\" is not a string", source, k));
  bool all = !ev.j["cells"].empty();
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& c : ev.j["cells"]) {
    if (!c.is_object() || !c.contains("algo") || !c["algo"].is_string() || !c.contains("regime") ||
        !c["regime"].is_string() || !c.contains("max_abs_err_pct") || !c["max_abs_err_pct"].is_number() ||
        !c.contains("max_nodes") || !c["max_nodes"].is_number() || !c.contains("min_bytes") ||
        !c["min_bytes"].is_number() || !c.contains("max_bytes") || !c["max_bytes"].is_number())
      throw InputError(fmt::format("{}: a cell lacks algo, regime, max_abs_err_pct, max_nodes, min_bytes or max_bytes: {}",
                                   source, c.dump()));
    // One cell per (algorithm, regime): with two, which band applies would depend on their order.
    if (!seen.insert({c["algo"].get<std::string>(), c["regime"].get<std::string>()}).second)
      throw InputError(fmt::format("{}: two cells for {} at {}", source, c["algo"].get<std::string>(),
                                   c["regime"].get<std::string>()));
    all = all && c.contains("gpus_per_node") && c.contains("colls");
  }
  ev.coverage = all;
  return ev;
}

Evidence readEvidence(const std::string& file, const std::string& option) {
  std::ifstream in(file);
  if (!in) throw InputError(fmt::format("{} {}: cannot read it", option, file));
  std::stringstream ss;
  ss << in.rdbuf();
  return parseEvidence(ss.str(), option + " " + file);
}

ErrorBand bandOf(const Evidence& ev, const std::string& name, const std::string& collArg, double bytes, int nodes,
                 int gpusPerNode) {
  // The evidence keeps each collective by its descriptor's name (sendrecv is p2pring's alias)
  const auto kind = fb::parseCollKind(collArg);
  const std::string coll = kind ? std::string(fb::collName(*kind)) : collArg;
  ErrorBand b;
  if (ev.empty()) {
    b.beyond = "no validation evidence";
    return b;
  }
  const std::string reg = regimeOf(bytes);
  // What the algorithm's cells covered, all regimes together, and its cell at this regime.
  int maxNodes = 0, minNodes = 0;
  double lo = 0, hi = 0;
  std::set<int> gpus;
  std::set<std::string> colls;
  const nlohmann::json* cell = nullptr;
  auto intsOf = [](const nlohmann::json& c, const char* key, std::set<int>& out) {
    if (c.contains(key) && c[key].is_array())
      for (const auto& x : c[key])
        if (x.is_number_integer()) out.insert(x.get<int>());
  };
  auto collsOf = [](const nlohmann::json& c, std::set<std::string>& out) {
    if (c.contains("colls") && c["colls"].is_object())
      for (const auto& [k, v] : c["colls"].items()) out.insert(k);
  };
  for (const auto& c : ev.j["cells"]) {
    if (c["algo"] != name) continue;
    maxNodes = std::max(maxNodes, c["max_nodes"].get<int>());
    if (c.contains("min_nodes") && c["min_nodes"].is_number())
      minNodes = minNodes == 0 ? c["min_nodes"].get<int>() : std::min(minNodes, c["min_nodes"].get<int>());
    double cl = c["min_bytes"], ch = c["max_bytes"];
    lo = lo == 0 ? cl : std::min(lo, cl);
    hi = std::max(hi, ch);
    intsOf(c, "gpus_per_node", gpus);
    collsOf(c, colls);
    if (c["regime"] == reg) cell = &c;
  }
  std::vector<std::string> why;
  if (maxNodes == 0) {
    b.beyond = name + " never validated";
    return b;
  }
  if (nodes > maxNodes) why.push_back(fmt::format("{} nodes > the {} validated for {}", nodes, maxNodes, name));
  if (minNodes > 0 && nodes < minNodes)
    why.push_back(fmt::format("{} node{} < the {} validated for {}", nodes, nodes == 1 ? "" : "s", minNodes, name));
  if (bytes < lo || bytes > hi) {
    why.push_back(fmt::format("size outside {}'s validated {}..{}", name, human(lo), human(hi)));
  } else if (cell && (bytes < (*cell)["min_bytes"].get<double>() || bytes > (*cell)["max_bytes"].get<double>())) {
    // Inside the algorithm's sizes but not its regime cell's (e.g. a 48 MiB row where 1-64 MiB saw 4-32 MiB).
    why.push_back(fmt::format("size outside {}'s validated {}..{} at {}", name,
                              human((*cell)["min_bytes"].get<double>()), human((*cell)["max_bytes"].get<double>()),
                              reg));
  }
  if (!cell) {
    why.push_back(fmt::format("{} not validated at {}", name, reg));
  } else {
    const auto& c = *cell;
    // The cell's band, for every collective: a collective's own figure rests on fewer points and would only
    // narrow it (the per-collective figures stay in the file, and coverage below says where one is missing).
    b.pct = c["max_abs_err_pct"];
    // Coverage of this (algorithm, regime): its node counts, GPUs per node and collectives (format 2 files).
    std::set<int> cn, cg;
    std::set<std::string> cc;
    intsOf(c, "nodes", cn);
    intsOf(c, "gpus_per_node", cg);
    collsOf(c, cc);
    if (!cn.empty() && nodes >= minNodes && nodes <= maxNodes && !cn.count(nodes))
      why.push_back(fmt::format("{} nodes: {} at {} validated on {} nodes only", nodes, name, reg, joined(cn)));
    if (!cg.empty() && !cg.count(gpusPerNode))
      why.push_back(gpus.count(gpusPerNode)
                        ? fmt::format("{} GPUs per node: {} at {} validated with {} only", gpusPerNode, name, reg, joined(cg))
                        : fmt::format("{} GPUs per node: {} validated with {} only", gpusPerNode, name, joined(gpus)));
    if (!cc.empty() && !cc.count(coll))
      why.push_back(colls.count(coll)
                        ? fmt::format("{} at {} validated on {}, not {} (band of those)", name, reg, joined(cc), coll)
                        : fmt::format("{} validated on {}, not {} (band of those)", name, joined(colls), coll));
  }
  for (auto& w : why) b.beyond += (b.beyond.empty() ? "" : "; ") + w;
  return b;
}

// Rounded up, never down: a shown band is never narrower than the largest error seen.
std::string bandText(const ErrorBand& b) {
  return b.pct >= 0 ? fmt::format("±{:.0f} %", std::ceil(b.pct - 1e-9)) : "unvalidated";
}

std::string bandCsv(const ErrorBand& b) {
  return b.pct >= 0 ? fmt::format("{:.1f}", std::ceil(b.pct * 10 - 1e-9) / 10) : "";
}

}  // namespace fb::tools

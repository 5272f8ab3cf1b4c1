// Every local check on one node, and rank 0's table over all nodes.
#include <algorithm>
#include <set>

#include "doctor/doctor.h"
#include "doctor/util.h"

namespace fb::doctor {
using namespace util;

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kWarn: return "warn";
    case Verdict::kFail: return "fail";
    case Verdict::kSkip: return "skip";
  }
  return "?";
}

std::optional<Verdict> parseVerdict(const std::string& s) {
  for (Verdict v : {Verdict::kPass, Verdict::kWarn, Verdict::kFail, Verdict::kSkip})
    if (s == verdictName(v)) return v;
  return std::nullopt;
}

void applyTestOverrides(const Machine& m, NodeReport& r) {
  auto v = m.env("FB_DOCTOR_TEST_VERSIONS");
  if (!v || v->empty()) return;
  for (const auto& item : split(*v, ';')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    std::string k = "version." + trim(item.substr(0, eq));
    r.facts[k] = trim(item.substr(eq + 1));
    r.factSources[k] = "FB_DOCTOR_TEST_VERSIONS (test override, not read from the machine)";
  }
  for (auto& f : r.findings)
    if (f.id == "software.versions") {
      std::vector<std::string> list;
      for (const auto& [k, val] : r.facts)
        if (startsWith(k, "version.")) list.push_back(k.substr(8) + " " + val);
      f.evidence = join(list, ", ") + " (compared between nodes: software.same; FB_DOCTOR_TEST_VERSIONS applied)";
    }
}

NodeReport checkNode(const Machine& m, const Hooks& hooks, const std::string& host,
                     const std::vector<std::string>& required) {
  NodeReport r;
  r.host = host;
  checkRequired(m, hooks, required, r);
  checkGpuTopology(m, hooks, r);
  checkGpuNicAffinity(m, r);
  checkGpuDirect(m, hooks, r);
  checkPcie(m, r);
  checkRdma(m, r);
  checkLimits(m, r);
  checkSoftware(m, hooks, r);
  applyTestOverrides(m, r);
  return r;
}

namespace {

// Facts with this prefix compared between nodes: one row.
void compareFacts(const std::vector<NodeReport>& nodes, const std::string& prefix, const std::string& id,
                  const std::string& what, Verdict onDiff, const std::string& fix, Report& rep,
                  const std::string& noneText) {
  Row row;
  row.id = id;
  for (const auto& n : nodes) row.nodes.push_back(n.host);
  std::set<std::string> keys, sources;
  for (const auto& n : nodes)
    for (const auto& [k, v] : n.facts)
      if (startsWith(k, prefix)) {
        keys.insert(k);
        auto s = n.factSources.find(k);
        if (s != n.factSources.end()) sources.insert(k.substr(prefix.size()) + ": " + s->second);
      }
  row.source = "each node's " + what + " (" + join(std::vector<std::string>(sources.begin(), sources.end()), "; ") + ")";
  if (nodes.size() < 2) {
    row.verdict = Verdict::kSkip;
    row.evidence = "one node: nothing to compare";
    row.source = what;
  } else if (keys.empty()) {
    row.verdict = Verdict::kSkip;
    row.evidence = noneText;
    row.source = what;
  } else {
    std::vector<std::string> same, diff;
    for (const auto& k : keys) {
      std::map<std::string, std::vector<std::string>> byValue;
      for (const auto& n : nodes) {
        auto it = n.facts.find(k);
        byValue[it == n.facts.end() ? std::string("(absent)") : it->second].push_back(n.host);
      }
      std::string name = k.substr(prefix.size());
      if (byValue.size() == 1) {
        same.push_back(name + " " + byValue.begin()->first);
      } else {
        std::vector<std::string> parts;
        for (const auto& [v, hs] : byValue) parts.push_back("'" + v + "' on " + join(hs, ","));
        diff.push_back(name + ": " + join(parts, " vs "));
      }
    }
    if (diff.empty()) {
      row.verdict = Verdict::kPass;
      row.evidence = "the same on all " + std::to_string(nodes.size()) + " nodes: " + join(same, ", ");
    } else {
      row.verdict = onDiff;
      row.evidence = "nodes differ: " + join(diff, "; ") + (same.empty() ? "" : "; same: " + join(same, ", "));
      row.fix = fix;
      row.differs = true;
      rep.differences.push_back(id + ": " + join(diff, "; "));
    }
  }
  rep.rows.push_back(row);
}

}  // namespace

Report aggregate(const std::vector<NodeReport>& nodes, const std::vector<Reachability>& reach) {
  Report rep;
  std::vector<std::string> order;
  for (const auto& n : nodes)
    for (const auto& f : n.findings)
      if (std::find(order.begin(), order.end(), f.id) == order.end()) order.push_back(f.id);
  for (const auto& id : order) {
    // group nodes by what they saw
    std::vector<Row> groups;
    for (const auto& n : nodes) {
      const Finding* f = nullptr;
      for (const auto& x : n.findings)
        if (x.id == id) f = &x;
      Finding absent{id, Verdict::kSkip, "not checked on this node", "", ""};
      if (!f) f = &absent;
      auto it = std::find_if(groups.begin(), groups.end(), [&](const Row& g) {
        return g.verdict == f->verdict && g.evidence == f->evidence && g.fix == f->fix && g.source == f->source;
      });
      if (it == groups.end()) groups.push_back({id, {n.host}, f->verdict, f->evidence, f->source, f->fix, false});
      else it->nodes.push_back(n.host);
    }
    if (groups.size() > 1) {
      std::vector<std::string> parts;
      for (auto& g : groups) {
        g.differs = true;
        parts.push_back(join(g.nodes, ",") + " " + verdictName(g.verdict));
      }
      rep.differences.push_back(id + ": " + join(parts, " / ") + " (see the rows)");
    }
    for (auto& g : groups) rep.rows.push_back(g);
  }

  compareFacts(nodes, "version.", "software.same", "versions", Verdict::kFail,
               "install the same driver, CUDA, NCCL, MPI and rdma-core on every node (mismatches cause hangs: "
               "nccl-tests issues 229, 255)",
               rep, "no version readable");
  compareFacts(nodes, "fw.", "rdma.firmware_same", "RDMA firmware (fw_ver)", Verdict::kFail,
               "flash the same firmware on every node (mlxfwmanager)", rep, "no RDMA device on any node");
  compareFacts(nodes, "rate.", "rdma.rate_same", "RDMA port rates", Verdict::kWarn,
               "a port trained at a lower rate (or a different NIC) on some node: check cables/switch ports (ibstat)",
               rep, "no RDMA port on any node");
  compareFacts(nodes, "gid_index.", "rdma.gid_same", "chosen RoCEv2 GID index", Verdict::kFail,
               "make the RoCEv2 GID index the same on every node (same netdev/address layout), or let NCCL >= 2.21 "
               "choose (unset NCCL_IB_GID_INDEX)",
               rep, "no RoCE port with a usable GID on any node");

  // reachability
  {
    Row row;
    row.id = "net.reach";
    for (const auto& n : nodes) row.nodes.push_back(n.host);
    row.source = "a TCP connection + echo from every node to every other, on the interface tcp and NCCL's socket "
                 "path use (NCCL_SOCKET_IFNAME, else --tcp-if, else the address the node name resolves to)";
    if (nodes.size() < 2) {
      row.verdict = Verdict::kSkip;
      row.evidence = "one node: nothing to reach";
    } else if (reach.size() != nodes.size()) {
      row.verdict = Verdict::kSkip;
      row.evidence = "not measured";
    } else {
      std::vector<std::string> bad, ok, ifs;
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        const auto& rc = reach[i];
        ifs.push_back(nodes[i].host + " " + (rc.address.empty() ? "(none)" : rc.address) +
                      (rc.iface.empty() ? "" : " [" + rc.iface + "]"));
        if (!rc.error.empty()) bad.push_back(nodes[i].host + ": " + rc.error);
        for (const auto& [peer, why] : rc.failures) bad.push_back(nodes[i].host + " -> " + peer + ": " + why);
        for (const auto& [peer, ms] : rc.okMs) {
          char buf[64];
          std::snprintf(buf, sizeof buf, " %.1f ms", ms);
          ok.push_back(nodes[i].host + "->" + peer + buf);
        }
      }
      if (bad.empty()) {
        row.verdict = Verdict::kPass;
        row.evidence = "every node reached every other: " + join(ok, ", ") + "; listening on " + join(ifs, ", ");
      } else {
        row.verdict = Verdict::kFail;
        row.evidence = join(bad, "; ") + "; listening on " + join(ifs, ", ");
        row.fix = "choose an interface every node can reach (NCCL_SOCKET_IFNAME / --tcp-if), check firewalls and routes; "
                  "an up but unreachable interface makes NCCL init fail or hang";
      }
    }
    rep.rows.push_back(row);
  }

  for (const auto& r : rep.rows) {
    switch (r.verdict) {
      case Verdict::kPass: ++rep.passes; break;
      case Verdict::kWarn: ++rep.warns; break;
      case Verdict::kFail: ++rep.fails; break;
      case Verdict::kSkip: ++rep.skips; break;
    }
  }
  return rep;
}

namespace {
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> out;
  std::string line, word;
  auto flushWord = [&] {
    while (word.size() > width) {
      if (!line.empty()) out.push_back(line), line.clear();
      out.push_back(word.substr(0, width));
      word = word.substr(width);
    }
    if (word.empty()) return;
    if (line.empty()) line = word;
    else if (line.size() + 1 + word.size() <= width) line += " " + word;
    else out.push_back(line), line = word;
    word.clear();
  };
  for (char c : text) {
    if (c == ' ' || c == '\n') flushWord();
    else word += c;
  }
  flushWord();
  if (!line.empty()) out.push_back(line);
  if (out.empty()) out.push_back("");
  return out;
}
}  // namespace

std::string renderTable(const Report& r) {
  const std::size_t wc = 19, wn = 12, wv = 6, we = 64, wf = 44;
  auto pad = [](const std::string& s, std::size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); };
  std::string out = pad("check", wc) + " " + pad("node(s)", wn) + " " + pad("verdict", wv) + " " + pad("evidence", we) +
                    " fix\n";
  out += std::string(wc, '-') + " " + std::string(wn, '-') + " " + std::string(wv, '-') + " " + std::string(we, '-') +
         " " + std::string(wf, '-') + "\n";
  for (const auto& row : r.rows) {
    auto c0 = wrap(row.id, wc);
    auto c1 = wrap(join(row.nodes, ",") + (row.differs ? " (differs)" : ""), wn);
    std::vector<std::string> c2 = {verdictName(row.verdict)};
    auto c3 = wrap(row.evidence, we);
    if (!row.source.empty())
      for (auto& l : wrap("[read: " + row.source + "]", we)) c3.push_back(l);
    auto c4 = wrap(row.fix.empty() ? "-" : row.fix, wf);
    std::size_t n = std::max({c0.size(), c1.size(), c3.size(), c4.size()});
    for (std::size_t i = 0; i < n; ++i) {
      auto at = [&](const std::vector<std::string>& c) { return i < c.size() ? c[i] : std::string(); };
      std::string l = pad(at(c0), wc) + " " + pad(at(c1), wn) + " " + pad(at(c2), wv) + " " + pad(at(c3), we) + " " + at(c4);
      while (!l.empty() && l.back() == ' ') l.pop_back();
      out += l + "\n";
    }
  }
  if (!r.differences.empty()) {
    out += "\nnodes differ:\n";
    for (const auto& d : r.differences) out += "  - " + d + "\n";
  }
  out += "\ndoctor: " + std::to_string(r.passes) + " pass, " + std::to_string(r.warns) + " warn, " +
         std::to_string(r.fails) + " fail, " + std::to_string(r.skips) + " skip (exit " + std::to_string(r.exitCode()) +
         ")\n";
  return out;
}

nlohmann::json toJson(const NodeReport& n) {
  nlohmann::json f = nlohmann::json::array();
  for (const auto& x : n.findings)
    f.push_back({{"id", x.id}, {"verdict", verdictName(x.verdict)}, {"evidence", x.evidence}, {"source", x.source},
                 {"fix", x.fix}});
  return {{"host", n.host}, {"findings", f}, {"facts", n.facts}, {"fact_sources", n.factSources}};
}

NodeReport nodeFromJson(const nlohmann::json& j) {
  NodeReport n;
  n.host = j.value("host", "");
  for (const auto& x : j.value("findings", nlohmann::json::array()))
    n.findings.push_back({x.value("id", ""), parseVerdict(x.value("verdict", "skip")).value_or(Verdict::kSkip),
                          x.value("evidence", ""), x.value("source", ""), x.value("fix", "")});
  n.facts = j.value("facts", std::map<std::string, std::string>{});
  n.factSources = j.value("fact_sources", std::map<std::string, std::string>{});
  return n;
}

nlohmann::json toJson(const Report& r, const std::vector<NodeReport>& nodes) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& x : r.rows)
    rows.push_back({{"check", x.id}, {"nodes", x.nodes}, {"verdict", verdictName(x.verdict)}, {"evidence", x.evidence},
                    {"source", x.source}, {"fix", x.fix}, {"differs", x.differs}});
  nlohmann::json per = nlohmann::json::array();
  for (const auto& n : nodes) per.push_back(toJson(n));
  return {{"schema", "fabricbench-doctor/1"},
          {"rows", rows},
          {"differences", r.differences},
          {"counts", {{"pass", r.passes}, {"warn", r.warns}, {"fail", r.fails}, {"skip", r.skips}}},
          {"exit_code", r.exitCode()},
          {"nodes", per}};
}

}  // namespace fb::doctor

// Comparing the ranks' fingerprints (fingerprint.h): which keys are compared, the flat view of a
// fingerprint, and the merge into one fingerprint per host with the keys that differ.
#include "report/fingerprint.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fb {
using nlohmann::json;
namespace {

bool matchPattern(const std::string& pattern, const std::string& key) {
  auto split = [](const std::string& s) {
    std::vector<std::string> v;
    std::string cur;
    std::istringstream in(s);
    while (std::getline(in, cur, '.')) v.push_back(cur);
    return v;
  };
  auto p = split(pattern), k = split(key);
  if (p.size() != k.size()) return false;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] != "*" && p[i] != k[i]) return false;
  return true;
}

void flatten(const json& j, const std::string& prefix, std::vector<std::pair<std::string, json>>& out) {
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array() && !j.empty() && (j[0].is_object() || j[0].is_array())) {
    for (std::size_t i = 0; i < j.size(); ++i) flatten(j[i], prefix + "." + std::to_string(i), out);
  } else {
    out.emplace_back(prefix, j);
  }
}

}  // namespace

std::vector<std::string> comparedFingerprintKeys() {
  return {"kernel",          "os",
          "cpu.model",       "cpu.logical_cpus",
          "gpu_driver",      "gpu_count",
          "gpus.*.name",     "gpus.*.vbios_version",
          "nccl_version",    "cuda_driver_version",
          "cuda_runtime_version", "mpi_version", "mpi_library",
          "compiler",        "build.fabricbench_version",
          "git.rev",         "git.dirty",
          "nics.*.speed_mbps", "nics.*.mtu",
          "nics.*.driver",   "nics.*.firmware",
          "rdma.*.fw_ver",   "rdma.*.ports.*.rate",
          "rdma.*.ports.*.state", "rdma.*.ports.*.link_layer",
          "rdma.*.ports.*.active_mtu"};
}

std::vector<std::pair<std::string, json>> flattenForComparison(const json& fp) {
  json copy = fp;
  if (copy.contains("rdma") && copy["rdma"].is_object() && copy["rdma"].contains("devices"))
    copy["rdma"] = mergeRdmaDiscovery(json::object(), copy["rdma"]);
  if (copy.contains("nics") && copy["nics"].is_object()) {
    json kept = json::object();
    for (auto& [name, n] : copy["nics"].items())
      if (name != "lo" && !(n.is_object() && n.contains("virtual") && n["virtual"].is_boolean() && n["virtual"].get<bool>()))
        kept[name] = n;
    copy["nics"] = kept;
  }
  std::vector<std::pair<std::string, json>> all, out;
  flatten(copy, "", all);
  for (auto& [k, v] : all)
    for (const auto& p : comparedFingerprintKeys())
      if (matchPattern(p, k)) {
        out.emplace_back(k, v);
        break;
      }
  return out;
}

json mergeFingerprints(const std::vector<json>& perRank) {
  struct HostEntry {
    std::string host;
    std::vector<int> ranks;
    json fp;
    int lowest = 0;
  };
  std::vector<HostEntry> hosts;
  for (std::size_t i = 0; i < perRank.size(); ++i) {
    const json& f = perRank[i];
    int rank = f.is_object() && f.contains("rank") && f["rank"].is_number_integer() ? f["rank"].get<int>()
                                                                                     : static_cast<int>(i);
    std::string host =
        f.is_object() && f.contains("hostname") && f["hostname"].is_string() ? f["hostname"].get<std::string>() : "";
    if (host.empty()) host = "(unknown host)";
    auto it = std::find_if(hosts.begin(), hosts.end(), [&](const HostEntry& h) { return h.host == host; });
    if (it == hosts.end()) {
      hosts.push_back({host, {}, json(), rank});
      it = hosts.end() - 1;
      it->fp = f;
    }
    it->ranks.push_back(rank);
    if (rank < it->lowest) {
      it->lowest = rank;
      it->fp = f;
    }
  }
  for (auto& h : hosts) std::sort(h.ranks.begin(), h.ranks.end());
  std::sort(hosts.begin(), hosts.end(), [](const HostEntry& a, const HostEntry& b) { return a.ranks[0] < b.ranks[0]; });

  json out = json::object();
  out["nranks"] = perRank.size();
  out["nhosts"] = hosts.size();
  out["hosts"] = json::array();
  std::vector<std::map<std::string, json>> flat;
  std::vector<std::string> keyOrder;
  std::set<std::string> seen;
  for (auto& h : hosts) {
    json f = h.fp.is_object() ? h.fp : json::object();
    f.erase("rank");
    out["hosts"].push_back({{"hostname", h.host}, {"ranks", h.ranks}, {"fingerprint", f}});
    std::map<std::string, json> m;
    for (auto& [k, v] : flattenForComparison(f)) {
      m[k] = v;
      if (seen.insert(k).second) keyOrder.push_back(k);
    }
    flat.push_back(std::move(m));
  }
  json diffs = json::array();
  if (hosts.size() > 1) {
    // Report order: the order of comparedFingerprintKeys(), then the key.
    auto patterns = comparedFingerprintKeys();
    auto rankOf = [&](const std::string& k) {
      for (std::size_t i = 0; i < patterns.size(); ++i)
        if (matchPattern(patterns[i], k)) return i;
      return patterns.size();
    };
    std::stable_sort(keyOrder.begin(), keyOrder.end(),
                     [&](const std::string& a, const std::string& b) { return rankOf(a) < rankOf(b); });
    for (const auto& k : keyOrder) {
      json values = json::object();
      std::set<std::string> distinct;
      for (std::size_t i = 0; i < hosts.size(); ++i) {
        auto it = flat[i].find(k);
        json v = it == flat[i].end() ? json("(absent)") : it->second;
        distinct.insert(v.dump(-1, ' ', false, json::error_handler_t::replace));
        values[hosts[i].host] = v;
      }
      if (distinct.size() > 1) diffs.push_back({{"key", k}, {"values", values}});
    }
  }
  out["differences"] = diffs;
  out["compared_keys"] = comparedFingerprintKeys();
  return out;
}

}  // namespace fb

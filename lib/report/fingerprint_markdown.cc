// The fingerprint section of the Markdown pages: nodes, what differs between them, the command line.
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/fingerprint.h"
#include "report/markdown_text.h"

namespace fb {
using md::cell;
using md::jsonText;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// RDMA ports of one host's fingerprint as {device, port, state, rate, link layer, firmware}. Two
// layouts exist: sysfs ({dev: {fw_ver, ports: {n: {...}}}}, lib/report/fingerprint.cc) and verbs
// discovery ({devices: [{name, fw_ver, ports: [{port, ...}]}], selected|error}, which fabricbench
// records when it has the verbs backend).
std::vector<std::array<std::string, 6>> rdmaRows(const nlohmann::json& f) {
  using nlohmann::json;
  std::vector<std::array<std::string, 6>> rows;
  if (!f.is_object() || !f.contains("rdma") || !f["rdma"].is_object()) return rows;
  const json& r = f["rdma"];
  auto text = [](const json& o, const char* k) { return o.is_object() && o.contains(k) ? jsonText(o[k]) : std::string("—"); };
  if (r.contains("devices") && r["devices"].is_array()) {
    for (const auto& d : r["devices"]) {
      if (!d.is_object() || !d.contains("ports") || !d["ports"].is_array()) continue;
      for (const auto& p : d["ports"])
        rows.push_back({text(d, "name"), text(p, "port"), text(p, "state"), text(p, "rate"), text(p, "link_layer"),
                        text(d, "fw_ver")});
    }
    return rows;
  }
  for (const auto& [dev, d] : r.items()) {
    if (!d.is_object() || !d.contains("ports") || !d["ports"].is_object()) continue;
    for (const auto& [port, p] : d["ports"].items())
      rows.push_back({dev, port, text(p, "state"), text(p, "rate"), text(p, "link_layer"), text(d, "fw_ver")});
  }
  return rows;
}

std::string renderFingerprintImpl(const nlohmann::json& fp, const std::string& commandLine) {
  using nlohmann::json;
  std::string md = "## Where these numbers come from\n\n";
  json hosts = json::array();
  if (fp.is_object() && fp.contains("hosts") && fp["hosts"].is_array()) {
    hosts = fp["hosts"];
  } else if (fp.is_object() && !fp.empty()) {
    hosts.push_back({{"hostname", fp.value("hostname", "?")}, {"ranks", json::array()}, {"fingerprint", fp}});
  }
  if (hosts.empty()) md += "No fingerprint was recorded.\n\n";

  // Differences first: mismatched nodes are a classic cause of bad numbers.
  if (fp.is_object() && fp.contains("differences") && fp["differences"].is_array() && !fp["differences"].empty()) {
    md += "**⚠ Nodes differ** (mismatched nodes are a classic cause of bad numbers):\n\n";
    for (const auto& d : fp["differences"]) {
      std::map<std::string, std::vector<std::string>> byValue;
      for (auto& [host, v] : d["values"].items()) byValue[jsonText(v)].push_back(host);
      std::string parts;
      for (auto& [v, hs] : byValue) {
        std::string hl;
        for (auto& h : hs) hl += (hl.empty() ? "" : ", ") + h;
        parts += (parts.empty() ? "" : "; ") + fmt::format("`{}` on {}", v, hl);
      }
      md += fmt::format("- Nodes differ: `{}`: {}\n", d.value("key", "?"), parts);
    }
    md += "\n";
  } else if (hosts.size() > 1) {
    md += fmt::format("All {} nodes agree on the compared keys (kernel, OS, CPU model, GPU driver and models, "
                      "NCCL/CUDA/MPI versions, NIC driver, firmware, link speed and MTU, RDMA firmware and "
                      "port rate, git revision).\n\n",
                      hosts.size());
  }

  if (!hosts.empty()) {
    md += "| host | ranks | CPU | logical CPUs | memory | OS | kernel | GPUs | GPU driver |\n"
          "|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& h : hosts) {
      const json& f = h.contains("fingerprint") ? h["fingerprint"] : json::object();
      std::string ranks;
      for (auto& r : h.value("ranks", json::array())) ranks += (ranks.empty() ? "" : ",") + jsonText(r);
      std::string gpus = "none";
      if (f.contains("gpus") && f["gpus"].is_array() && !f["gpus"].empty()) {
        std::map<std::string, int> models;
        for (auto& g : f["gpus"]) models[g.value("name", "?")]++;
        gpus.clear();
        for (auto& [m, n] : models) gpus += (gpus.empty() ? "" : ", ") + fmt::format("{} × {}", n, m);
      } else if (f.contains("gpu_query")) {
        gpus = "none (" + jsonText(f["gpu_query"]) + ")";
      }
      double memGiB = f.contains("memory_bytes") && f["memory_bytes"].is_number()
                          ? f["memory_bytes"].get<double>() / (1024.0 * 1024 * 1024)
                          : kNaN;
      json cpu = f.value("cpu", json::object());
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(h.value("hostname", "?")),
                        ranks.empty() ? "—" : ranks, cell(jsonText(cpu.value("model", json()))),
                        jsonText(cpu.value("logical_cpus", json())),
                        std::isnan(memGiB) ? "—" : fmt::format("{:.1f} GiB", memGiB),
                        cell(jsonText(f.value("os", json()))), cell(jsonText(f.value("kernel", json()))),
                        cell(gpus), cell(jsonText(f.value("gpu_driver", json()))));
    }
    md += "\n";

    md += "Network interfaces (speed as the kernel reports it; lo not shown):\n\n";
    md += "| host | nic | state | speed (Mb/s) | MTU | driver | firmware | IPv4 | kind |\n"
          "|---|---|---|---|---|---|---|---|---|\n";
    bool anyRdma = false;
    for (const auto& h : hosts) {
      const json& f = h.contains("fingerprint") ? h["fingerprint"] : json::object();
      if (!rdmaRows(f).empty()) anyRdma = true;
      if (!f.contains("nics") || !f["nics"].is_object()) continue;
      for (auto& [name, n] : f["nics"].items()) {
        if (name == "lo") continue;
        std::string ips;
        for (auto& ip : n.value("ipv4", json::array())) ips += (ips.empty() ? "" : " ") + jsonText(ip);
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(h.value("hostname", "?")),
                          cell(name), jsonText(n.value("operstate", json())), jsonText(n.value("speed_mbps", json())),
                          jsonText(n.value("mtu", json())), jsonText(n.value("driver", json())),
                          cell(jsonText(n.value("firmware", json()))), ips.empty() ? "—" : ips,
                          (n.contains("virtual") && n["virtual"].is_boolean() && n["virtual"].get<bool>()) ? "virtual" : "physical");
      }
    }
    md += "\n";
    if (anyRdma) {
      md += "RDMA devices:\n\n| host | device | port | state | rate | link layer | firmware |\n"
            "|---|---|---|---|---|---|---|\n";
      for (const auto& h : hosts) {
        const json& f = h.contains("fingerprint") ? h["fingerprint"] : json::object();
        for (const auto& r : rdmaRows(f))
          md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", cell(h.value("hostname", "?")), cell(r[0]), r[1],
                            cell(r[2]), cell(r[3]), r[4], cell(r[5]));
      }
      md += "\n";
    }

    // What the verbs discovery said where it found nothing usable (e.g. "no RDMA device").
    for (const auto& h : hosts) {
      const json& f = h.contains("fingerprint") ? h["fingerprint"] : json::object();
      // "rdma_selection" (current layout) or inside "rdma" (run.json files written before it)
      for (const char* key : {"rdma_selection", "rdma"})
        if (f.contains(key) && f[key].is_object() && f[key].contains("error"))
          md += fmt::format("- RDMA on {}: {}\n", cell(h.value("hostname", "?")), cell(jsonText(f[key]["error"])));
    }
    const json& f0 = hosts[0].contains("fingerprint") ? hosts[0]["fingerprint"] : json::object();
    md += "\nSoftware (first host):\n\n";
    auto line = [&](const char* what, const json& v) {
      if (!v.is_null()) md += fmt::format("- {}: {}\n", what, cell(jsonText(v)));
    };
    line("MPI", f0.contains("mpi_version") && !f0["mpi_version"].is_null() ? f0["mpi_version"]
                                                                           : f0.value("mpi_library", json()));
    line("NCCL", f0.value("nccl_version", json()));
    line("CUDA driver", f0.value("cuda_driver_version", json()));
    line("CUDA runtime", f0.value("cuda_runtime_version", json()));
    line("compiler", f0.value("compiler", json()));
    if (f0.contains("build")) line("build", f0["build"]);
    if (f0.contains("git")) {
      const json& g = f0["git"];
      md += fmt::format("- git revision: {}{}{}\n", jsonText(g.value("rev", json())),
                        (g.contains("dirty") && g["dirty"].is_boolean() && g["dirty"].get<bool>()) ? " (dirty: uncommitted changes)"
                        : (g.contains("dirty") && g["dirty"].is_null() ? " (dirty flag unknown)" : ""),
                        g.contains("source") ? " [" + jsonText(g["source"]) + "]" : "");
    }
  }
  if (!commandLine.empty()) md += fmt::format("- command line: `{}`\n", commandLine);
  md += "\nThe full fingerprint (every host, environment variables) is in run.json.\n\n";
  return md;
}
}  // namespace

std::string renderFingerprintMarkdown(const nlohmann::json& fp, const std::string& commandLine) {
  try {
    return renderFingerprintImpl(fp, commandLine);
  } catch (const nlohmann::json::exception& e) {
    return fmt::format("## Where these numbers come from\n\nThe fingerprint could not be summarised ({}); "
                       "see run.json.\n\n- command line: `{}`\n\n",
                       e.what(), commandLine);
  }
}

}  // namespace fb

#include "gbench_flags.h"

#include <charconv>
#include <optional>
#include <cmath>
#include <ctime>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace fb {
namespace {

std::optional<bool> truthy(const std::string& v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  return std::nullopt;
}

// Flags of Google Benchmark 1.7/1.8 that fabricbench does not honour, with what to use instead.
// A boolean one given as false asks for nothing and is accepted.
const std::map<std::string, std::string>& refused() {
  static const std::map<std::string, std::string> m = {
      {"min_time", "fabricbench times a fixed number of operations per size: use -n/--iters"},
      {"min_warmup_time", "use -w/--warmup (untimed operations per size)"},
      {"enable_random_interleaving",
       "it runs benchmarks in a different order on each rank, and the collectives would deadlock"},
      {"report_aggregates_only", "each row already is the median of its --repeat batches, with min and max"},
      {"display_aggregates_only", "each row already is the median of its --repeat batches, with min and max"},
      {"color", "the console table is fabricbench's own (use --benchmark_format=json|csv for other output)"},
      {"counters_tabular", "the console table is fabricbench's own (use --benchmark_format=json|csv for other output)"},
      {"perf_counters", "CPU performance counters of one rank say nothing about a fabric operation"},
      {"dry_run", "use --benchmark_list_tests to see what would run"},
      {"verbosity", "fabricbench has no verbosity levels (NCCL_DEBUG=INFO for NCCL's own log)"},
  };
  return m;
}

double scaleFromUs(const std::string& unit) {
  if (unit == "ns") return 1e3;
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1e-6;
  return 1.0;
}

}  // namespace

BenchmarkFlags takeBenchmarkFlags(std::vector<std::string>& args) {
  BenchmarkFlags f;
  std::vector<std::string> rest;
  for (const auto& a : args) {
    if (a.rfind("--benchmark_", 0) != 0 && a != "--v" && a.rfind("--v=", 0) != 0) {
      rest.push_back(a);
      continue;
    }
    f.given.push_back(a);
    auto eq = a.find('=');
    std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    bool hasValue = eq != std::string::npos;
    std::string v = hasValue ? a.substr(eq + 1) : "";
    std::string key = name == "v" ? "verbosity" : name.substr(10);  // after "benchmark_"
    auto need = [&](const char* what) {
      if (!hasValue || v.empty()) throw ConfigError(fmt::format("--{} wants a value: --{}={}", name, name, what));
    };
    auto boolean = [&]() {
      if (!hasValue) return true;
      auto b = truthy(v);
      if (!b) throw ConfigError(fmt::format("--{}='{}': expected true or false", name, v));
      return *b;
    };
    if (key == "filter") {
      need("REGEX");
      std::string re = v[0] == '-' ? v.substr(1) : v;
      try {
        std::regex check(re);
      } catch (const std::regex_error& e) {
        throw ConfigError(fmt::format("--benchmark_filter='{}' is not a valid regular expression ({})", v, e.what()));
      }
      f.filter = v;
    } else if (key == "list_tests") {
      f.listTests = boolean();
    } else if (key == "format" || key == "out_format") {
      need("console|json|csv");
      if (v != "console" && v != "json" && v != "csv")
        throw ConfigError(fmt::format("--{}='{}': choose console, json or csv", name, v));
      (key == "format" ? f.format : f.outFormat) = v;
    } else if (key == "out") {
      need("FILE");
      f.out = v;
    } else if (key == "repetitions") {
      need("N");
      int n = 0;
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || ptr != v.data() + v.size() || n < 1)
        throw ConfigError(fmt::format("--benchmark_repetitions='{}': expected a count >= 1", v));
      f.repetitions = n;
    } else if (key == "time_unit") {
      need("ns|us|ms|s");
      if (v != "ns" && v != "us" && v != "ms" && v != "s")
        throw ConfigError(fmt::format("--benchmark_time_unit='{}': choose ns, us, ms or s", v));
      f.timeUnit = v;
    } else if (key == "context") {
      need("KEY=VALUE,KEY=VALUE");
      std::size_t pos = 0;
      while (pos <= v.size()) {
        auto comma = v.find(',', pos);
        std::string kv = v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        auto e2 = kv.find('=');
        if (e2 == std::string::npos || e2 == 0)
          throw ConfigError(fmt::format("--benchmark_context='{}': expected KEY=VALUE pairs separated by commas", v));
        f.context.emplace_back(kv.substr(0, e2), kv.substr(e2 + 1));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    } else if (auto it = refused().find(key); it != refused().end()) {
      bool asksNothing = hasValue && truthy(v) == false;
      if (!asksNothing)
        throw ConfigError(fmt::format("--{} is {}: {}", name,
                                      key == "enable_random_interleaving" ? "refused" : "not supported", it->second));
    } else {
      throw ConfigError(fmt::format("unknown Google Benchmark flag --{} (fabricbench honours --benchmark_filter, "
                                    "_list_tests, _format, _out, _out_format, _repetitions, _time_unit, _context)",
                                    name));
    }
  }
  args = std::move(rest);
  return f;
}

bool benchmarkSelected(const BenchmarkFlags& f, const std::string& name) {
  std::string filter = f.filter;
  if (filter.empty() || filter == "all") return true;
  bool negate = filter[0] == '-';
  if (negate) filter = filter.substr(1);
  bool hit = std::regex_search(name, std::regex(filter));
  return negate ? !hit : hit;
}

std::string benchmarkJson(const std::vector<NamedSample>& rows, const BenchmarkFlags& f,
                          const std::vector<std::pair<std::string, std::string>>& context) {
  using json = nlohmann::ordered_json;  // Google Benchmark's key order: name first
  json ctx = json::object();
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S%z", std::localtime(&now));
  ctx["date"] = date;
  for (const auto& [k, v] : context) ctx[k] = v;
  for (const auto& [k, v] : f.context) ctx[k] = v;
  ctx["time_note"] = "real_time = per operation (see time_definition); cpu_time is not reported";
  json benches = json::array();
  double scale = scaleFromUs(f.timeUnit);
  std::map<std::string, int> family;
  for (const auto& r : rows) {
    const Sample& s = r.sample;
    json b;
    b["name"] = r.name;
    b["run_name"] = r.name;
    b["run_type"] = "iteration";
    b["repetitions"] = 1;
    b["repetition_index"] = 0;
    b["threads"] = 1;
    b["iterations"] = s.iters;
    b["real_time"] = s.timeUs * scale;
    b["time_unit"] = f.timeUnit;
    b["bytes_per_second"] = s.algBwGBps * 1e9;
    b["label"] = s.impl + "/" + s.path;
    b["algbw_GBps"] = s.algBwGBps;
    b["busbw_GBps"] = s.busBwGBps;
    b["wrong"] = s.wrong;
    b["nranks"] = s.nRanks;
    if (s.wrong > 0) {
      b["error_occurred"] = true;
      b["error_message"] = fmt::format("{} wrong elements", s.wrong);
    }
    benches.push_back(std::move(b));
  }
  json doc = {{"context", ctx}, {"benchmarks", benches}};
  return doc.dump(2) + "\n";
}

std::string benchmarkCsv(const std::vector<NamedSample>& rows, const BenchmarkFlags& f) {
  auto quote = [](const std::string& s) {
    std::string o = "\"";
    for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
    return o + "\"";
  };
  std::string out =
      "name,iterations,real_time,time_unit,bytes_per_second,label,error_occurred,error_message,"
      "\"algbw_GBps\",\"busbw_GBps\",\"wrong\"\n";
  double scale = scaleFromUs(f.timeUnit);
  for (const auto& r : rows) {
    const Sample& s = r.sample;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", quote(r.name), s.iters, s.timeUs * scale, f.timeUnit,
                       s.algBwGBps * 1e9, quote(s.impl + "/" + s.path), s.wrong > 0 ? "true" : "",
                       s.wrong > 0 ? quote(fmt::format("{} wrong elements", s.wrong)) : "", s.algBwGBps,
                       s.busBwGBps, s.wrong);
  }
  return out;
}

}  // namespace fb

#include "app/gbench_flags.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <cmath>
#include <ctime>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/stats.h"

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

namespace {

// One entry of Google Benchmark's output: a repetition of a benchmark ("iteration") or an
// aggregate over its repetitions (mean, median, stddev, cv), as its JSON and CSV reporters write them.
struct Entry {
  std::string name, runName, runType = "iteration", aggregateName, aggregateUnit = "time";
  int repetitions = 1, repetitionIndex = 0;
  std::int64_t iterations = 0;
  double realUs = 0, bytesPerSecond = 0;
  const Sample* row = nullptr;
};

// Google Benchmark's statistics (src/statistics.cc): mean; median (mean of the middle two for an
// even count); sample standard deviation (n - 1; 0 for one value); cv = stddev / mean.
double mean(const std::vector<double>& v) {
  double a = 0;
  for (double x : v) a += x;
  return v.empty() ? 0 : a / static_cast<double>(v.size());
}
// stats::median (the same convention); 0, not NaN, for no values.
double medianOf(std::vector<double> v) { return v.empty() ? 0 : stats::median(std::move(v)); }
double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double m = mean(v), sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(v.size() - 1));
}
double cv(const std::vector<double>& v) { return v.size() < 2 || mean(v) == 0 ? 0 : stddev(v) / mean(v); }

// Without --benchmark_repetitions: one entry per row (its median). With it: one entry per timed
// batch (repetition) of the row, then, for two or more, the four aggregates, as Google Benchmark
// writes them (tools/compare.py reads both). A row with wrong elements gets no aggregates (Google
// Benchmark leaves errored runs out of them).
std::vector<Entry> entries(const std::vector<NamedSample>& rows, const BenchmarkFlags& f) {
  std::vector<Entry> out;
  for (const auto& r : rows) {
    const Sample& s = r.sample;
    std::vector<double> times = f.repetitions > 0 && !s.batchUs.empty() ? s.batchUs : std::vector<double>{s.timeUs};
    const int reps = static_cast<int>(times.size());
    std::vector<double> bps;
    for (std::size_t i = 0; i < times.size(); ++i) {
      Entry e;
      e.name = e.runName = r.name;
      e.repetitions = f.repetitions > 0 ? reps : 1;
      e.repetitionIndex = static_cast<int>(i);
      e.iterations = s.iters;
      e.realUs = times[i];
      e.bytesPerSecond = times[i] > 0 ? static_cast<double>(s.bytes) / (times[i] * 1e-6) : 0;
      // Without repetitions the row's own figure (median), as before.
      if (f.repetitions == 0) e.bytesPerSecond = s.algBwGBps * 1e9;
      e.row = &s;
      bps.push_back(e.bytesPerSecond);
      out.push_back(std::move(e));
    }
    if (f.repetitions == 0 || reps < 2 || s.wrong > 0) continue;
    auto aggregate = [&](const char* what, double t, double b, const char* unit) {
      Entry e;
      e.name = r.name + "_" + what;
      e.runName = r.name;
      e.runType = "aggregate";
      e.aggregateName = what;
      e.aggregateUnit = unit;
      e.repetitions = reps;
      e.iterations = reps;
      e.realUs = t;
      e.bytesPerSecond = b;
      e.row = &s;
      out.push_back(std::move(e));
    };
    aggregate("mean", mean(times), mean(bps), "time");
    aggregate("median", medianOf(times), medianOf(bps), "time");
    aggregate("stddev", stddev(times), stddev(bps), "time");
    aggregate("cv", cv(times), cv(bps), "percentage");
  }
  return out;
}

}  // namespace

std::string filterHint(const BenchmarkFlags& f, const std::vector<std::string>& names) {
  if (f.filter.empty() || f.filter == "all" || names.empty()) return "";
  for (const auto& n : names)
    if (benchmarkSelected(f, n)) return "";
  std::string some;
  for (std::size_t i = 0; i < names.size() && i < 3; ++i) some += (i ? ", " : "") + names[i];
  std::string text = fmt::format("--benchmark_filter='{}' matches none of this run's {} benchmarks: their names are "
                                 "<collective>/<backend>[:<path>]/<bytes>[/<dtype>][/inplace], e.g. {}",
                                 f.filter, names.size(), some);
  // The filter is a case-sensitive regular expression: say when another case would have matched.
  std::string re = f.filter[0] == '-' ? f.filter.substr(1) : f.filter;
  std::regex icase(re, std::regex::icase);
  for (const auto& n : names)
    if (std::regex_search(n, icase) != (f.filter[0] == '-')) {
      text += fmt::format(" (the filter is case-sensitive: '{}' would match {})", re, n);
      break;
    }
  return text + "; --benchmark_list_tests lists them all";
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
  ctx["time_note"] = "real_time = per operation (see time_definition); cpu_time repeats real_time (no CPU time is "
                     "measured: a rank's CPU time says nothing about a fabric operation), so tools/compare.py reads "
                     "the entries and its CPU column equals its Time column";
  json benches = json::array();
  double scale = scaleFromUs(f.timeUnit);
  for (const auto& e : entries(rows, f)) {
    const Sample& s = *e.row;
    json b;
    b["name"] = e.name;
    b["run_name"] = e.runName;
    b["run_type"] = e.runType;
    b["repetitions"] = e.repetitions;
    if (e.runType == "iteration") b["repetition_index"] = e.repetitionIndex;
    b["threads"] = 1;
    if (e.runType == "aggregate") {
      b["aggregate_name"] = e.aggregateName;
      b["aggregate_unit"] = e.aggregateUnit;
    }
    b["iterations"] = e.iterations;
    // cv is a fraction, not a time: Google Benchmark writes it unscaled.
    const double t = e.aggregateUnit == "percentage" ? e.realUs : e.realUs * scale;
    b["real_time"] = t;
    b["cpu_time"] = t;
    b["time_unit"] = f.timeUnit;
    b["bytes_per_second"] = e.bytesPerSecond;
    b["label"] = s.impl + "/" + s.path;
    if (e.runType == "iteration") {
      b["algbw_GBps"] = e.realUs > 0 ? static_cast<double>(s.bytes) / (e.realUs * 1e3) : 0;
      b["busbw_GBps"] = s.algBwGBps > 0 ? b["algbw_GBps"].get<double>() * s.busBwGBps / s.algBwGBps : 0;
      if (f.repetitions == 0) b["algbw_GBps"] = s.algBwGBps, b["busbw_GBps"] = s.busBwGBps;
      b["wrong"] = s.wrong;
      b["nranks"] = s.nRanks;
      if (s.wrong > 0) {
        b["error_occurred"] = true;
        b["error_message"] = fmt::format("{} wrong elements", s.wrong);
      }
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
      "name,iterations,real_time,cpu_time,time_unit,bytes_per_second,label,error_occurred,error_message,"
      "\"algbw_GBps\",\"busbw_GBps\",\"wrong\"\n";
  double scale = scaleFromUs(f.timeUnit);
  for (const auto& e : entries(rows, f)) {
    const Sample& s = *e.row;
    const double t = e.aggregateUnit == "percentage" ? e.realUs : e.realUs * scale;
    const bool it = e.runType == "iteration";
    double alg = it && e.realUs > 0 ? static_cast<double>(s.bytes) / (e.realUs * 1e3) : 0;
    if (f.repetitions == 0) alg = s.algBwGBps;
    const double bus = s.algBwGBps > 0 ? alg * s.busBwGBps / s.algBwGBps : 0;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", quote(e.name), e.iterations, t, t, f.timeUnit,
                       e.bytesPerSecond, quote(s.impl + "/" + s.path), it && s.wrong > 0 ? "true" : "",
                       it && s.wrong > 0 ? quote(fmt::format("{} wrong elements", s.wrong)) : "",
                       it ? fmt::format("{}", alg) : "", it ? fmt::format("{}", bus) : "",
                       it ? fmt::format("{}", s.wrong) : "");
  }
  return out;
}

}  // namespace fb

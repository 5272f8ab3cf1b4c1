// fabricbench --accept: the expectation file (--expect, schema fabricbench-expect/1) and the baseline
// written from an accepted run folder (--accept-baseline). Declared in accept.h.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "accept/accept.h"
#include "core/error.h"
#include "report/result_sink.h"

namespace fb::accept {

namespace {

double numberAt(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = j.at(key);
  if (!v.is_number()) throw ConfigError(where + ": '" + key + "' is not a number");
  double d = v.get<double>();
  if (!(d > 0) || !std::isfinite(d)) throw ConfigError(fmt::format("{}: '{}' must be a positive number (got {})", where, key, v.dump()));
  return d;
}

std::size_t bytesAt(const nlohmann::json& j, const std::string& where) {
  if (!j.contains("bytes")) throw ConfigError(where + ": 'bytes' is missing");
  const auto& v = j["bytes"];
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() == 0) throw ConfigError(where + ": 'bytes' must be a positive integer");
  return v.get<std::size_t>();
}

std::string stringAt(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty())
    throw ConfigError(where + ": '" + key + "' is missing or not a string");
  return j[key].get<std::string>();
}

}  // namespace

Expectations parseExpectations(const std::string& text, const std::string& source,
                               const std::vector<std::string>& knownPaths) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError("--expect " + source + ": not JSON (" + e.what() + ")");
  }
  const std::string at = "--expect " + source;
  if (!j.is_object()) throw ConfigError(at + ": expected a JSON object");
  if (j.value("schema", std::string()) != "fabricbench-expect/1")
    throw ConfigError(at + ": 'schema' must be \"fabricbench-expect/1\"");
  for (const auto& [k, v] : j.items())
    if (k != "schema" && k != "pairs" && k != "collectives" && k != "comment" && k != "source" && k != "margin")
      throw ConfigError(at + ": unknown key '" + k + "' (schema, pairs, collectives, comment, source, margin)");
  Expectations e;
  e.source = source;
  if (j.contains("pairs")) {
    if (!j["pairs"].is_array()) throw ConfigError(at + ": 'pairs' must be an array");
    for (std::size_t i = 0; i < j["pairs"].size(); ++i) {
      const auto& x = j["pairs"][i];
      std::string where = fmt::format("{}: pairs[{}]", at, i);
      if (!x.is_object()) throw ConfigError(where + ": expected an object");
      PairExpect p;
      p.path = stringAt(x, "path", where);
      if (std::find(knownPaths.begin(), knownPaths.end(), p.path) == knownPaths.end())
        throw ConfigError(fmt::format("{}: unknown path '{}' (choose {})", where, p.path, fmt::join(knownPaths, ", ")));
      p.bytes = bytesAt(x, where);
      for (const auto& [k, v] : x.items())
        if (k != "path" && k != "bytes" && k != "min_GBps" && k != "max_latency_us")
          throw ConfigError(where + ": unknown key '" + k + "' (path, bytes, min_GBps, max_latency_us)");
      if (x.contains("min_GBps")) p.minGBps = numberAt(x, "min_GBps", where);
      if (x.contains("max_latency_us")) p.maxLatUs = numberAt(x, "max_latency_us", where);
      if (!p.minGBps && !p.maxLatUs) throw ConfigError(where + ": neither min_GBps nor max_latency_us");
      e.pairs.push_back(p);
    }
  }
  if (j.contains("collectives")) {
    if (!j["collectives"].is_array()) throw ConfigError(at + ": 'collectives' must be an array");
    for (std::size_t i = 0; i < j["collectives"].size(); ++i) {
      const auto& x = j["collectives"][i];
      std::string where = fmt::format("{}: collectives[{}]", at, i);
      if (!x.is_object()) throw ConfigError(where + ": expected an object");
      CollExpect c;
      c.impl = stringAt(x, "impl", where);
      c.collective = stringAt(x, "collective", where);
      c.bytes = bytesAt(x, where);
      for (const auto& [k, v] : x.items())
        if (k != "impl" && k != "collective" && k != "bytes" && k != "min_busbw_GBps" && k != "max_latency_us")
          throw ConfigError(where + ": unknown key '" + k + "' (impl, collective, bytes, min_busbw_GBps, max_latency_us)");
      if (x.contains("min_busbw_GBps")) c.minBusBwGBps = numberAt(x, "min_busbw_GBps", where);
      if (x.contains("max_latency_us")) c.maxLatUs = numberAt(x, "max_latency_us", where);
      if (!c.minBusBwGBps && !c.maxLatUs) throw ConfigError(where + ": neither min_busbw_GBps nor max_latency_us");
      e.collectives.push_back(c);
    }
  }
  if (e.pairs.empty() && e.collectives.empty()) throw ConfigError(at + ": no expectation (empty 'pairs' and 'collectives')");
  return e;
}

Expectations readExpectations(const std::string& file, const std::vector<std::string>& knownPaths) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError("--expect " + file + ": cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parseExpectations(ss.str(), file, knownPaths);
}

nlohmann::json baselineFromRun(const std::string& runDir, double margin) {
  namespace fs = std::filesystem;
  if (!(margin > 0 && margin <= 1)) throw ConfigError(fmt::format("--accept-margin {}: expected (0, 1]", margin));
  fs::path aj = fs::path(runDir) / "acceptance.json";
  std::ifstream in(aj);
  if (!in) throw ConfigError("--accept-baseline " + runDir + ": no acceptance.json there");
  nlohmann::json a;
  try {
    a = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw ConfigError("--accept-baseline " + aj.string() + ": not JSON (" + e.what() + ")");
  }
  nlohmann::json pairs = nlohmann::json::array(), colls = nlohmann::json::array();
  for (const auto& p : a.value("paths", nlohmann::json::array())) {
    if (p.value("skipped", std::string()) != "") continue;
    double bw = p["bw"].value("median", -1.0), lat = p["lat"].value("median", -1.0);
    if (bw > 0) pairs.push_back({{"path", p["path"]}, {"bytes", p["bw_bytes"]}, {"min_GBps", bw * margin}});
    if (lat > 0) pairs.push_back({{"path", p["path"]}, {"bytes", p["lat_bytes"]}, {"max_latency_us", lat / margin}});
  }
  fs::path csv = fs::path(runDir) / "collectives" / "table.csv";
  if (fs::exists(csv)) {
    for (const auto& s : readCsv(csv.string())) {
      if (s.wrong > 0 || s.timeUs <= 0) continue;
      nlohmann::json c = {{"impl", s.impl}, {"collective", s.coll}, {"bytes", s.bytes}, {"max_latency_us", s.timeUs / margin}};
      if (s.busBwGBps > 0) c["min_busbw_GBps"] = s.busBwGBps * margin;
      colls.push_back(c);
    }
  }
  if (pairs.empty() && colls.empty()) throw ConfigError("--accept-baseline " + runDir + ": nothing measured to accept");
  return {{"schema", "fabricbench-expect/1"},
          {"source", fs::absolute(runDir).lexically_normal().string()},
          {"margin", margin},
          {"comment", fmt::format("written by fabricbench --accept-baseline: minimum = {} x the measured median, "
                                  "maximum latency = measured / {}", margin, margin)},
          {"pairs", pairs},
          {"collectives", colls}};
}

}  // namespace fb::accept

// run.json: rewritten atomically at begin(), after every row, and at end().
#include <chrono>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "core/timer_names.h"
#include "core/error.h"
#include "report/result_sink.h"

namespace fb {
namespace {

std::string utcNow() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

class JsonSink : public ResultSink {
 public:
  explicit JsonSink(std::string path) : path_(std::move(path)) {}
  void begin(const RunMeta& meta) override {
    meta_ = meta;
    rows_ = meta.previousRows;
    started_ = utcNow();
    auto parent = std::filesystem::path(path_).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    write(RunSummary{false, "running", {}, -1, {}, {}}, false);
  }
  void add(const Sample& s) override {
    rows_.push_back(s);
    write(RunSummary{false, "running", {}, -1, {}, {}}, false);
  }
  void end(const RunSummary& summary) override { write(summary, true); }

 private:
  void write(const RunSummary& sm, bool finished) {
    auto j = runJson(meta_, rows_, sm, finished);
    j["started_utc"] = started_;
    j["updated_utc"] = utcNow();
    // Invalid UTF-8 (from a log line or an environment value) is replaced, never fatal.
    writeFileAtomic(path_, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  std::string path_;
  RunMeta meta_;
  std::string started_;
  std::vector<Sample> rows_;
};

}  // namespace

nlohmann::json sampleToJson(const Sample& s) {
  nlohmann::json extra = nlohmann::json::object();
  for (const auto& [k, v] : s.extra) extra[k] = v;
  // NCCL rows: the attestation and NCCL's choice as fields of their own (also kept in extra).
  nlohmann::json nccl;
  static const std::pair<const char*, const char*> kAttest[] = {
      {"intra", "intra"}, {"inter", "inter"}, {"nics", "nics"}, {"rails", "rails"}, {"gdr", "gdr"},
      {"pxn", "pxn"},     {"nvls", "nvls"},   {"algo", "algo"}, {"proto", "proto"}, {"algo_channels", "channels"},
      {"algo_source", "algo_source"}};
  for (const auto& [key, field] : kAttest)
    for (const auto& [k, v] : s.extra)
      if (k == key) nccl[field] = v;
  nlohmann::json row = {{"size_bytes", s.bytes},
          {"count", s.count},
          {"type", s.dtype},
          {"coll", s.coll},
          {"impl", s.impl},
          {"path", s.path},
          {"placement", s.inPlace ? "in" : "out"},
          {"nranks", s.nRanks},
          {"nnodes", s.nNodes},
          {"iters", s.iters},
          {"time_us", s.timeUs},
          {"algbw_GBps", s.algBwGBps},
          {"busbw_GBps", s.busBwGBps},
          {"wrong", s.wrong < 0 ? nlohmann::json() : nlohmann::json(s.wrong)},
          {"pct_nominal", s.pctNominal < 0 ? nlohmann::json() : nlohmann::json(s.pctNominal)},
          {"timer", s.timer},
          {"rank_time", s.rankTime},
          {"repeats", s.repeats},
          {"time_us_min", s.timeUsMin < 0 ? nlohmann::json() : nlohmann::json(s.timeUsMin)},
          {"time_us_max", s.timeUsMax < 0 ? nlohmann::json() : nlohmann::json(s.timeUsMax)},
          {"busbw_min_GBps", s.busBwMin() < 0 ? nlohmann::json() : nlohmann::json(s.busBwMin())},
          {"busbw_max_GBps", s.busBwMax() < 0 ? nlohmann::json() : nlohmann::json(s.busBwMax())},
          {"p50_us", s.p50Us < 0 ? nlohmann::json() : nlohmann::json(s.p50Us)},
          {"p99_us", s.p99Us < 0 ? nlohmann::json() : nlohmann::json(s.p99Us)},
          {"extra", extra}};
  if (!s.perOpUs.empty()) row["per_op_us"] = s.perOpUs;
  if (!nccl.is_null()) row["nccl_attestation"] = nccl;
  return row;
}

Sample sampleFromJson(const nlohmann::json& j) {
  try {
    Sample s;
    s.bytes = j.at("size_bytes").get<std::size_t>();
    s.count = j.at("count").get<std::size_t>();
    s.dtype = j.at("type").get<std::string>();
    s.coll = j.at("coll").get<std::string>();
    s.impl = j.at("impl").get<std::string>();
    s.path = j.at("path").get<std::string>();
    s.inPlace = j.at("placement").get<std::string>() == "in";
    s.nRanks = j.at("nranks").get<int>();
    s.nNodes = j.at("nnodes").get<int>();
    s.iters = j.at("iters").get<int>();
    s.timeUs = j.at("time_us").get<double>();
    s.algBwGBps = j.at("algbw_GBps").get<double>();
    s.busBwGBps = j.at("busbw_GBps").get<double>();
    s.wrong = j.at("wrong").is_null() ? -1 : j.at("wrong").get<std::int64_t>();
    s.pctNominal = j.at("pct_nominal").is_null() ? -1 : j.at("pct_nominal").get<double>();
    // Added with --timer/--repeat/--per-op; older files lack them.
    auto optNum = [&](const char* k) {
      return j.contains(k) && j[k].is_number() ? j[k].get<double>() : -1.0;
    };
    // Before --timer every row was the rank timer; before the names rank/nccl-tests it said gpu/host.
    s.timer = normalizeRowTimer(j.contains("timer") && j["timer"].is_string() ? j["timer"].get<std::string>() : "gpu",
                                s.impl);
    if (j.contains("rank_time") && j["rank_time"].is_string()) s.rankTime = j["rank_time"].get<std::string>();
    if (j.contains("repeats") && j["repeats"].is_number_integer()) s.repeats = j["repeats"].get<int>();
    s.timeUsMin = optNum("time_us_min");
    s.timeUsMax = optNum("time_us_max");
    s.p50Us = optNum("p50_us");
    s.p99Us = optNum("p99_us");
    if (j.contains("per_op_us") && j["per_op_us"].is_array())
      for (const auto& v : j["per_op_us"])
        if (v.is_number()) s.perOpUs.push_back(v.get<double>());
    if (j.contains("extra"))
      for (auto& [k, v] : j["extra"].items()) s.extra.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("run.json row: ") + e.what());
  }
}

nlohmann::json runJson(const RunMeta& meta, const std::vector<Sample>& rows, const RunSummary& summary,
                       bool finished) {
  nlohmann::json jr = nlohmann::json::array();
  for (const auto& s : rows) jr.push_back(sampleToJson(s));
  return {{"schema", "fabricbench/1"},
          {"run_id", meta.runId},
          {"command_line", meta.commandLine},
          {"config", meta.config},
          {"fingerprint", meta.fingerprint},
          {"finished", finished},
          {"rows", jr},
          {"summary",
           {{"ok", summary.ok},
            {"status", summary.status},
            {"exit_code", summary.exitCode < 0 ? nlohmann::json() : nlohmann::json(summary.exitCode)},
            {"measured", summary.measured},
            {"skipped", summary.skipped},
            {"notes", summary.notes}}}};
}

std::unique_ptr<ResultSink> makeJsonSink(const std::string& path) { return std::make_unique<JsonSink>(path); }

}  // namespace fb

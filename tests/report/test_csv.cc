#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/timer_names.h"
#include "helpers.h"
#include "report/csv.h"
#include "report/result_sink.h"

using fbtest::row;

namespace {

void requireSame(const fb::Sample& a, const fb::Sample& b) {
  CHECK(a.coll == b.coll);
  CHECK(a.impl == b.impl);
  CHECK(a.path == b.path);
  CHECK(a.dtype == b.dtype);
  CHECK(a.inPlace == b.inPlace);
  CHECK(a.bytes == b.bytes);
  CHECK(a.count == b.count);
  CHECK(a.nRanks == b.nRanks);
  CHECK(a.nNodes == b.nNodes);
  CHECK(a.iters == b.iters);
  CHECK(a.timeUs == b.timeUs);  // exact: shortest round-trip formatting
  CHECK(a.algBwGBps == b.algBwGBps);
  CHECK(a.busBwGBps == b.busBwGBps);
  CHECK(a.wrong == b.wrong);
  CHECK(a.pctNominal == b.pctNominal);
  CHECK(a.extra == b.extra);
  CHECK(a.timer == b.timer);
  CHECK(a.rankTime == b.rankTime);
  CHECK(a.repeats == b.repeats);
  CHECK(a.timeUsMin == b.timeUsMin);
  CHECK(a.timeUsMax == b.timeUsMax);
  CHECK(a.p50Us == b.p50Us);
  CHECK(a.p99Us == b.p99Us);
}

std::vector<fb::Sample> awkwardRows() {
  auto a = row("allreduce", "tcp", "tcp eth0, 10.0.0.1 \"bonded\"", 1048576, 123.456789012345, 17.0123456789);
  a.extra = {{"channels", "2"}, {"gid", "fe80::1;x=y"}, {"note", "back\\slash, \"quoted\""}};
  a.pctNominal = 87.5;
  a.timer = "nccl-tests";
  a.rankTime = "avg";
  a.repeats = 3;
  a.timeUsMin = 120.25;
  a.timeUsMax = 130.5;
  a.p50Us = 121.125;
  a.p99Us = 140.0625;
  auto b = row("allgather", "nccl", "NVLink P2P/CUMEM x16ch\nsecond line", 8, 9.5, 0.0001, -1, true);
  auto c = row("p2pring", "mpi", " leading and trailing space ", 0, 3.25, 0, 7);
  c.count = 0;
  return {a, b, c};
}

}  // namespace

TEST_CASE("csv: header has units and the documented column order", "[csv]") {
  auto cols = fb::csvColumns();
  REQUIRE(cols.size() == 36);
  CHECK(cols.front() == "size_bytes");
  CHECK(cols[10] == "time_us");
  CHECK(cols[11] == "algbw_GBps");
  CHECK(cols[12] == "busbw_GBps");
  CHECK(cols[15] == "extra");
  CHECK(cols[16] == "timer");
  CHECK(cols[17] == "rank_time");
  CHECK(cols[18] == "repeats");
  CHECK(cols[19] == "time_us_min");
  CHECK(cols[20] == "time_us_max");
  CHECK(cols[21] == "busbw_min_GBps");
  CHECK(cols[22] == "busbw_max_GBps");
  CHECK(cols[25] == "intra");
  CHECK(cols[26] == "inter");
  CHECK(cols[27] == "nics");
  CHECK(cols[28] == "rails");
  CHECK(cols[29] == "gdr");
  CHECK(cols[30] == "pxn");
  CHECK(cols[31] == "nvls");
  CHECK(cols[32] == "algo");
  CHECK(cols[33] == "proto");
  CHECK(cols[34] == "channels");
  CHECK(cols[35] == "algo_source");
  CHECK(cols[23] == "p50_us");
  CHECK(cols[24] == "p99_us");
  CHECK(cols.back() == "algo_source");
}

TEST_CASE("csv: spread columns (busbw of the slowest/fastest batch) and legacy tables", "[csv]") {
  auto s = row("allreduce", "tcp", "lo", 1000, 10, 2.0);
  s.repeats = 3;
  s.timeUsMin = 8;
  s.timeUsMax = 20;
  CHECK(s.busBwMin() == Approx(1.0));   // the slowest batch: twice the median time
  CHECK(s.busBwMax() == Approx(2.5));   // the fastest: 10/8 of the median busbw
  std::string line = fb::csvLine(s);
  CHECK(line.find(",rank-clock,max,3,8,20,1,2.5,,") != std::string::npos);
  // A table written before --timer/--repeat (16 columns) still reads: the rank timer, max, 1 batch.
  std::string legacy =
      "size_bytes,count,type,coll,impl,path,placement,nranks,nnodes,iters,time_us,algbw_GBps,busbw_GBps,wrong,"
      "pct_nominal,extra\n1024,256,float32,allreduce,tcp,lo,out,2,1,20,10.5,0.1,0.1,0,,\n";
  auto back = fb::parseCsv(legacy, "legacy");
  REQUIRE(back.size() == 1);
  CHECK(back[0].timeUs == 10.5);
  CHECK(back[0].timer == "rank-clock");  // tcp: the steady clock, no GPU
  CHECK(back[0].repeats == 1);
  CHECK(back[0].timeUsMin == -1);
  CHECK(back[0].busBwMin() == -1);
}

TEST_CASE("csv: NCCL attestation columns come from extra; 25-column tables still read", "[csv]") {
  auto s = row("allreduce", "nccl", "training NET/Socket/0 x2ch", 1024, 10, 0.1);
  s.extra = {{"channels", "2"}, {"intra", "none"}, {"inter", "socket"}, {"nics", "eth0"}, {"rails", "1"},
             {"gdr", "no"}, {"pxn", "no"}, {"nvls", "disabled"}, {"algo", "RING"}, {"proto", "LL"},
             {"algo_channels", "1"}, {"algo_source", "profiler plugin (NCCL collective event)"}};
  std::string line = fb::csvLine(s);
  CHECK(line.size() > 0);
  CHECK(line.find(",none,socket,eth0,1,no,no,disabled,RING,LL,1,profiler plugin (NCCL collective event)") !=
        std::string::npos);
  std::string header;
  for (auto& c : fb::csvColumns()) header += (header.empty() ? "" : ",") + c;
  auto back = fb::parseCsv(header + "\n" + line + "\n", "new");
  REQUIRE(back.size() == 1);
  CHECK(back[0].extra == s.extra);
  // A table of the --timer columns only (25, before the attestation columns) reads too.
  auto cols = fb::csvColumns();
  cols.resize(25);
  std::string h25;
  for (auto& c : cols) h25 += (h25.empty() ? "" : ",") + c;
  std::string l25 = line.substr(0, line.find(",none,socket,"));
  auto old = fb::parseCsv(h25 + "\n" + l25 + "\n", "old");
  REQUIRE(old.size() == 1);
  CHECK(old[0].timeUs == 10);
}

TEST_CASE("csv: timer names: old files' gpu and host read as rank-events / rank-clock and nccl-tests", "[csv][timer]") {
  // Rows as the old names wrote them: the rank timer said gpu on every backend, nccl-tests' said host.
  std::string header;
  for (auto& c : fb::csvColumns()) header += (header.empty() ? "" : ",") + c;
  std::string text = header + "\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"nccl", "gpu"}, {"cuda", "gpu"}, {"tcp", "gpu"}, {"mpi", "gpu"}, {"nccl", "host"}, {"tcp", "host"}};
  for (const auto& [impl, timer] : cases) {
    auto s = row("allreduce", impl, "p", 1024, 10, 0.1);
    s.timer = timer;
    text += fb::csvLine(s) + "\n";
  }
  auto back = fb::parseCsv(text, "old-names");
  REQUIRE(back.size() == cases.size());
  const std::vector<std::string> want = {"rank-events", "rank-events", "rank-clock", "rank-clock", "nccl-tests",
                                         "nccl-tests"};
  int wrong = 0;
  for (std::size_t i = 0; i < want.size(); ++i) wrong += back[i].timer != want[i];
  CHECK(wrong == 0);
  // The rank timer by implementation, from its ImplFacts (eventTimer): CUDA events for nccl and cuda only.
  const std::vector<std::pair<std::string, std::string>> rank = {{"nccl", "rank-events"}, {"cuda", "rank-events"},
      {"tcp", "rank-clock"}, {"mpi", "rank-clock"}, {"verbs", "rank-clock"}, {"nccl-tests", "rank-clock"},
      {"unknown-tool", "rank-clock"}};
  wrong = 0;
  for (const auto& [impl, name] : rank)
    if (fb::rowTimerName("rank", impl) != name) ++wrong, UNSCOPED_INFO(impl << ": " << fb::rowTimerName("rank", impl));
  CHECK(wrong == 0);
  // Today's names read as written.
  auto s = row("allreduce", "tcp", "p", 1024, 10, 0.1);
  s.timer = "nccl-tests";
  CHECK(fb::parseCsv(header + "\n" + fb::csvLine(s) + "\n", "new")[0].timer == "nccl-tests");
}

TEST_CASE("csv: line quoting follows RFC 4180", "[csv]") {
  auto s = row("allreduce", "tcp", "a,b \"c\"", 4, 1, 1);
  std::string line = fb::csvLine(s);
  CHECK(line.find("\"a,b \"\"c\"\"\"") != std::string::npos);
  auto plain = row("allreduce", "tcp", "lo", 4, 1, 1);
  CHECK(fb::csvLine(plain).find('"') == std::string::npos);
}

TEST_CASE("csv: sink writes, readCsv reads back every field", "[csv]") {
  fbtest::TempDir dir;
  std::string path = dir.str("run/table.csv");
  auto rows = awkwardRows();
  {
    auto sink = fb::makeCsvSink(path);
    fb::RunMeta meta;
    meta.runId = "t";
    sink->begin(meta);
    for (auto& r : rows) {
      sink->add(r);
      // Rows are on disk as soon as add() returns (a killed run keeps them).
      auto sofar = fb::readCsv(path);
      CHECK(sofar.size() == static_cast<std::size_t>(&r - &rows[0] + 1));
    }
    sink->end(fb::RunSummary{});
  }
  auto back = fb::readCsv(path);
  REQUIRE(back.size() == rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) requireSame(rows[i], back[i]);
}

TEST_CASE("csv: extras escape ; = and backslash", "[csv]") {
  std::vector<std::pair<std::string, std::string>> e = {{"a=b", "c;d"}, {"k", "v\\"}, {"empty", ""}};
  auto text = fb::encodeExtras(e);
  CHECK(fb::decodeExtras(text) == e);
  CHECK(fb::decodeExtras("").empty());
  CHECK_THROWS_AS(fb::decodeExtras("novalue"), fb::Error);
  CHECK_THROWS_AS(fb::decodeExtras("k=v\\"), fb::Error);
}

TEST_CASE("csv: truncated and malformed lines are rejected with fb::Error", "[csv]") {
  std::string header;
  for (auto& c : fb::csvColumns()) header += (header.empty() ? "" : ",") + c;
  header += "\n";
  std::string good = fb::csvLine(row("allreduce", "tcp", "lo", 1024, 10, 0.3)) + "\n";
  REQUIRE(fb::parseCsv(header + good, "t").size() == 1);
  REQUIRE(fb::parseCsv(header + good + good, "t").size() == 2);
  REQUIRE(fb::parseCsv(header, "t").empty());

  // A line cut anywhere is rejected, wherever the cut falls.
  for (std::size_t cut = 1; cut < good.size(); ++cut) {
    INFO("cut at " << cut);
    CHECK_THROWS_AS(fb::parseCsv(header + good + good.substr(0, cut), "t"), fb::Error);
  }
  // Unterminated quote.
  std::string quoted = fb::csvLine(row("allreduce", "tcp", "a,b", 4, 1, 1)) + "\n";
  auto q = quoted.find('"');
  CHECK_THROWS_AS(fb::parseCsv(header + quoted.substr(0, q + 2), "t"), fb::Error);
  // Wrong field count, bad numbers, bad placement, empty line, foreign header, empty file.
  CHECK_THROWS_AS(fb::parseCsv(header + "1,2,3\n", "t"), fb::Error);
  std::string badNum = good;
  badNum.replace(0, 4, "12Q4");
  CHECK_THROWS_AS(fb::parseCsv(header + badNum, "t"), fb::Error);
  std::string badPlace = good;
  badPlace.replace(badPlace.find(",out,"), 5, ",sideways,");
  CHECK_THROWS_AS(fb::parseCsv(header + badPlace, "t"), fb::Error);
  CHECK_THROWS_AS(fb::parseCsv(header + "\n" + good, "t"), fb::Error);
  CHECK_THROWS_AS(fb::parseCsv("a,b,c\n" + good, "t"), fb::Error);
  CHECK_THROWS_AS(fb::parseCsv("", "t"), fb::Error);
  // The message names the source and the line.
  try {
    fb::parseCsv(header + good + good.substr(0, 10), "results/x/table.csv");
    FAIL("no throw");
  } catch (const fb::Error& e) {
    std::string w = e.what();
    CHECK(w.find("results/x/table.csv") != std::string::npos);
    CHECK(w.find("line 3") != std::string::npos);
  }
  CHECK_THROWS_AS(fb::readCsv("/nonexistent/table.csv"), fb::Error);
}

TEST_CASE("csv: CRLF line ends are accepted", "[csv]") {
  std::string header;
  for (auto& c : fb::csvColumns()) header += (header.empty() ? "" : ",") + c;
  std::string good = fb::csvLine(row("allreduce", "tcp", "lo", 1024, 10, 0.3));
  auto rows = fb::parseCsv(header + "\r\n" + good + "\r\n", "t");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].path == "lo");
}

TEST_CASE("csv: one splitter, strict for table.csv, tolerant for a file still being written", "[csv]") {
  const std::string whole = "a,\"b,\"\"q\"\"\",c\r\n\n1,\"two\nlines\",3\n";
  auto strict = fb::splitCsvRecords(whole, "t.csv", fb::CsvMode::Strict);
  REQUIRE(strict.size() == 3);  // the blank line is a record of one empty field
  CHECK(strict[0].fields == std::vector<std::string>{"a", "b,\"q\"", "c"});
  CHECK(strict[1].fields == std::vector<std::string>{""});
  CHECK(strict[2].line == 3);
  CHECK(strict[2].fields == std::vector<std::string>{"1", "two\nlines", "3"});
  auto tol = fb::splitCsvRecords(whole, "t.csv", fb::CsvMode::Tolerant);
  REQUIRE(tol.size() == 2);  // blank line skipped
  CHECK(tol[1].fields == strict[2].fields);
  // A half-written last record: strict refuses it, tolerant keeps it as it stands.
  const std::string cut = "h1,h2\n1,\"par";
  CHECK_THROWS_WITH(fb::splitCsvRecords(cut, "t.csv", fb::CsvMode::Strict),
                    Catch::Contains("line 2") && Catch::Contains("unterminated"));
  auto kept = fb::splitCsvRecords(cut, "t.csv", fb::CsvMode::Tolerant);
  REQUIRE(kept.size() == 2);
  CHECK(kept[1].fields == std::vector<std::string>{"1", "par"});
  CHECK_THROWS_WITH(fb::splitCsvRecords("x,y", "t.csv", fb::CsvMode::Strict), Catch::Contains("truncated"));
  CHECK(fb::splitCsvRecords("x,y", "t.csv", fb::CsvMode::Tolerant).at(0).fields.size() == 2);
  // Malformed quoting is an error in both modes.
  CHECK_THROWS(fb::splitCsvRecords("a\"b\n", "t.csv", fb::CsvMode::Tolerant));
}

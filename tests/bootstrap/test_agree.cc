// agree(): every rank gets the same verdict (the most severe one, with the message of the lowest
// rank that gave it), as the same exception type, including for a failure injected on one rank
// through FB_TEST_FAIL.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/agree.h"
#include "bootstrap/thread_bootstrap.h"
#include "core/error.h"

using namespace fb;

namespace {

struct Outcome {
  std::string type;  // "ok", "unavailable", "badinput", "failed", "other"
  std::string what;
};

// Runs agree() on n ranks where rank r runs throwers[r] (nullptr = succeeds); returns each rank's outcome.
std::vector<Outcome> run(int n, const std::vector<std::function<void(int)>>& throwers) {
  std::vector<Outcome> out(n);
  std::mutex mu;
  runRanks(n, [&](Bootstrap& bs) {
    Outcome o{"ok", ""};
    try {
      agree(bs, "step", [&] {
        if (bs.rank() < static_cast<int>(throwers.size()) && throwers[bs.rank()]) throwers[bs.rank()](bs.rank());
      });
    } catch (const UnavailableError& e) {
      o = {"unavailable", e.what()};
    } catch (const ConfigError& e) {
      o = {"badinput", e.what()};
    } catch (const AgreedFailure& e) {
      o = {"failed", e.what()};
    } catch (const std::exception& e) {
      o = {"other", e.what()};
    }
    std::lock_guard<std::mutex> lk(mu);
    out[bs.rank()] = o;
  });
  return out;
}

void same(const std::vector<Outcome>& v, const std::string& type) {
  for (std::size_t r = 0; r < v.size(); ++r) {
    CAPTURE(r, v[r].what);
    CHECK(v[r].type == type);
    CHECK(v[r].what == v[0].what);
  }
}

}  // namespace

TEST_CASE("agree: nobody fails, nobody throws", "[unit]") {
  same(run(3, {}), "ok");
}

TEST_CASE("agree: a failure on one rank is every rank's verdict", "[unit]") {
  auto v = run(4, {nullptr, nullptr, [](int) { throw CudaError("[h:2] cudaMalloc failed"); }});
  same(v, "failed");
  CHECK(v[0].what == "step: rank 2: [h:2] cudaMalloc failed");
}

TEST_CASE("agree: the most severe verdict wins, the lowest such rank speaks", "[unit]") {
  auto unavailable = [](int r) { throw UnavailableError("no GPU on " + std::to_string(r)); };
  auto bad = [](int r) { throw ConfigError("bad --gid-index on " + std::to_string(r)); };
  auto failed = [](int r) { throw IoError("peer lost on " + std::to_string(r)); };
  auto v = run(5, {unavailable, bad, failed, failed, unavailable});
  same(v, "failed");
  CHECK(v[0].what.find("rank 2: peer lost on 2") != std::string::npos);
  v = run(3, {unavailable, bad, bad});
  same(v, "badinput");
  CHECK(v[0].what == "bad --gid-index on 1");
  v = run(3, {nullptr, unavailable, nullptr});
  same(v, "unavailable");
  CHECK(v[0].what == "step: rank 1: no GPU on 1");
}

TEST_CASE("agree: a nested agreement keeps its message", "[unit]") {
  std::vector<std::string> msgs(3);
  std::mutex mu;
  runRanks(3, [&](Bootstrap& bs) {
    try {
      agree(bs, "outer", [&] {
        agree(bs, "inner", [&] {
          if (bs.rank() == 1) throw UnavailableError("x");
        });
      });
    } catch (const UnavailableError& e) {
      std::lock_guard<std::mutex> lk(mu);
      msgs[bs.rank()] = e.what();
    }
  });
  for (auto& m : msgs) CHECK(m == "inner: rank 1: x");
}

TEST_CASE("failHook: FB_TEST_FAIL=POINT:RANK[:KIND] fails that rank only, and agree spreads it", "[unit]") {
  ::setenv("FB_TEST_FAIL", "tcp-open:1:unavailable,cuda-prepare:2", 1);
  auto hook = [](const std::string& point) { return [point](int r) { failHook(point, r); }; };
  auto v = run(3, {hook("tcp-open"), hook("tcp-open"), hook("tcp-open")});
  same(v, "unavailable");
  CHECK(v[0].what.find("rank 1:") != std::string::npos);
  CHECK(v[0].what.find("injected failure at tcp-open") != std::string::npos);
  v = run(3, {hook("cuda-prepare"), hook("cuda-prepare"), hook("cuda-prepare")});
  same(v, "failed");
  CHECK(v[0].what.find("rank 2:") != std::string::npos);
  same(run(3, {hook("nccl-init"), hook("nccl-init"), hook("nccl-init")}), "ok");
  ::unsetenv("FB_TEST_FAIL");
}

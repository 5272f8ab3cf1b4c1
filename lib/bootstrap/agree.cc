#include "bootstrap/agree.h"

#include <cstdlib>
#include <sstream>

#include "core/error.h"

namespace fb {

StepVerdict verdictOf(const std::exception& e) {
  if (dynamic_cast<const UnavailableError*>(&e)) return StepVerdict::kUnavailable;
  if (dynamic_cast<const ConfigError*>(&e)) return StepVerdict::kBadInput;
  return StepVerdict::kFailed;
}

void agreeOn(Bootstrap& bs, const std::string& what, StepVerdict mine, const std::string& message) {
  std::string blob = mine == StepVerdict::kOk ? std::string() : std::string(1, static_cast<char>('0' + static_cast<int>(mine))) + message;
  auto all = bs.allGatherStrings(blob);
  int worst = -1;
  StepVerdict v = StepVerdict::kOk;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (all[r].empty()) continue;
    auto rv = static_cast<StepVerdict>(all[r][0] - '0');
    if (rv > v) {
      v = rv;
      worst = r;
    }
  }
  if (v == StepVerdict::kOk) return;
  std::string msg = all[worst].substr(1);
  // Every rank gave the same verdict and message: it was agreed already (a nested agree).
  bool agreedBelow = true;
  for (const auto& b : all) agreedBelow = agreedBelow && b == all[worst];
  std::string text = agreedBelow ? msg : what + ": rank " + std::to_string(worst) + ": " + msg;
  switch (v) {
    case StepVerdict::kUnavailable: throw UnavailableError(text);
    case StepVerdict::kBadInput: throw ConfigError(msg);
    default: throw AgreedFailure(text);
  }
}

void agree(Bootstrap& bs, const std::string& what, const std::function<void()>& fn) {
  StepVerdict mine = StepVerdict::kOk;
  std::string msg;
  try {
    fn();
  } catch (const std::exception& e) {
    mine = verdictOf(e);
    msg = e.what();
  }
  agreeOn(bs, what, mine, msg);
}

void failHook(const std::string& point, int rank) {
  const char* env = std::getenv("FB_TEST_FAIL");
  if (!env || !*env) return;
  std::stringstream all(env);
  std::string item;
  while (std::getline(all, item, ',')) {
    std::stringstream ss(item);
    std::string p, r, kind;
    std::getline(ss, p, ':');
    std::getline(ss, r, ':');
    std::getline(ss, kind, ':');
    if (p != point || r != std::to_string(rank)) continue;
    std::string text = "injected failure at " + point + " (FB_TEST_FAIL)";
    if (kind == "unavailable") FB_THROW(UnavailableError, text);
    if (kind == "badinput") FB_THROW(ConfigError, text);
    FB_THROW(Error, text);
  }
}

std::string onRankZero(Bootstrap& bs, const std::string& what, const std::function<std::string()>& fn) {
  (void)what;
  // "0<value>" or "<verdict digit><message>".
  std::string msg;
  if (bs.rank() == 0) {
    try {
      msg = "0" + fn();
    } catch (const std::exception& e) {
      msg = std::string(1, static_cast<char>('0' + static_cast<int>(verdictOf(e)))) + e.what();
    }
  }
  auto b = bs.broadcastFromRoot(std::as_bytes(std::span<const char>(msg.data(), msg.size())));
  msg.assign(reinterpret_cast<const char*>(b.data()), b.size());
  auto v = static_cast<StepVerdict>(msg.empty() ? 0 : msg[0] - '0');
  std::string body = msg.empty() ? std::string() : msg.substr(1);
  switch (v) {
    case StepVerdict::kOk: return body;
    case StepVerdict::kUnavailable: throw UnavailableError(body);
    case StepVerdict::kBadInput: throw ConfigError(body);
    default: throw AgreedFailure(body);
  }
}

}  // namespace fb

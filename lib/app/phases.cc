#include "app/phases.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "app/backends.h"
#include "app/run_recorder.h"
#include "app/validate.h"

namespace fb {

bool showVerdictsEnv() { return std::getenv("FB_TEST_FAIL") != nullptr; }

AgreedOptions agreeOnOptions(Bootstrap& bs, const std::vector<std::string>& args, std::chrono::seconds startupTimeout) {
  AgreedOptions out;
  std::optional<Options> parsed;
  std::string err;
  bool info = false;  // --help: printed by rank 0 once every rank agrees
  try {
    parsed = parseOptions(args, false);
    if (!parsed) info = true;
    else {
      validateOnThisRank(*parsed, bs.size(), bs.rank(), bs.hostname());
      if (bs.rank() == 0) preflight(*parsed);
    }
  } catch (const ConfigError& e) {
    err = e.what();
  } catch (const std::exception& e) {  // a check that failed in an unexpected way is still bad input
    err = e.what();
  }
  // What each rank was told: its normalized flags, and its raw arguments for the message.
  std::string raw;
  for (auto& a : args) raw += (raw.empty() ? "" : " ") + a;
  bs.setTimeout(startupTimeout);
  auto all = bs.allGatherStrings(!err.empty() ? "ER" + err
                                 : info       ? "HP" + raw + '\x1f' + raw
                                              : "OK" + parsed->canonical + '\x1f' + raw);
  auto canonicalOf = [](const std::string& s) { return s.substr(0, s.find('\x1f')); };
  auto rawOf = [](const std::string& s) { return s.substr(s.find('\x1f') + 1); };
  out.exitCode = 2;
  for (int r = 0; r < bs.size(); ++r) {
    if (all[r].rfind("ER", 0) == 0) {
      if (bs.rank() == 0)
        ::fb::printLine("fabricbench: error: ", all[r].substr(2), (bs.size() > 1 ? fmt::format(" (rank {})", r) : ""));
      return out;
    }
  }
  for (int r = 1; r < bs.size(); ++r) {
    if (canonicalOf(all[r]) != canonicalOf(all[0])) {
      if (bs.rank() == 0)
        ::fb::printLine("fabricbench: error: ranks were started with different flags (rank 0: '", rawOf(all[0]), "', rank ", r, ": '", rawOf(all[r]), "')");
      return out;
    }
  }
  out.exitCode = 0;
  if (info) {
    if (bs.rank() == 0) parseOptions(args, true);
    return out;
  }
  Options& o = *parsed;
  bs.setTimeout(o.runner.timeout);
  for (CollKind k : o.colls) {
    if (describe(k).needsRoot && o.root >= bs.size()) {  // the same flags on every rank: the same verdict
      if (bs.rank() == 0)
        std::cerr << fmt::format("fabricbench: error: --root {} is not a rank of this job ({} ranks)\n", o.root, bs.size());
      out.exitCode = 2;
      return out;
    }
  }
  out.options = std::move(parsed);
  return out;
}

[[noreturn]] void failJob(MpiBootstrap& bs, RunRecorder* state, const std::exception& e) {
  for (auto& w : openTransports())
    if (auto t = w.lock()) t->abandon();
  std::string mine;
  if (dynamic_cast<const PeerFailedError*>(&e)) mine = "P|";  // joined because another rank failed
  else if (auto* io = dynamic_cast<const IoError*>(&e)) mine = "L" + std::to_string(io->peer()) + "|";
  else if (dynamic_cast<const TimeoutError*>(&e)) mine = "T|";
  else mine = "E|";
  mine += e.what();
  auto reports = bs.exchangeFailureReports(mine, std::chrono::seconds(3));
  std::vector<int> silent;
  for (int r = 0; r < bs.size(); ++r)
    if (!reports[r]) silent.push_back(r);
  std::string verdict;
  if (!silent.empty()) {
    verdict = silent.size() == 1 ? "lost or stuck: rank " : "lost or stuck: ranks ";
    for (std::size_t i = 0; i < silent.size(); ++i)
      verdict += fmt::format("{}{} ({})", i ? ", " : "", silent[i], bs.describeRank(silent[i]));
    verdict += " stopped answering";
    // What a surviving rank saw of it, when one says so.
    for (int r = 0; r < bs.size(); ++r) {
      if (!reports[r] || (*reports[r])[0] == 'P') continue;
      const std::string& t = *reports[r];
      bool namesSilent = false;
      for (int x : silent) namesSilent = namesSilent || t.rfind("L" + std::to_string(x) + "|", 0) == 0;
      if (namesSilent || (t[0] == 'T' && t.find("rank " + std::to_string(silent[0])) != std::string::npos)) {
        verdict += "; rank " + std::to_string(r) + " saw: " + t.substr(t.find('|') + 1);
        break;
      }
    }
  } else {
    for (int r = 0; r < bs.size() && verdict.empty(); ++r)
      if (reports[r] && (*reports[r])[0] != 'P') verdict = "rank " + std::to_string(r) + ": " + reports[r]->substr(reports[r]->find('|') + 1);
    if (verdict.empty()) verdict = e.what();
  }
  int leader = 0;
  while (leader < bs.size() && !reports[leader]) ++leader;
  if (bs.rank() == leader) ::fb::printLine("fabricbench: error: ", verdict);
  if (state && bs.rank() == 0) {
    RunSummary sum;
    sum.ok = false;
    sum.status = "aborted: " + verdict;
    state->end(sum);
  }
  std::cout << std::flush;
  if (bs.rank() == leader) bs.abortJob(1);
  // The leader ends the job; should it not, leave anyway.
  std::this_thread::sleep_for(std::chrono::seconds(10));
  std::_Exit(1);
}

}  // namespace fb

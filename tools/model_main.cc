// fabricbench-model: measured curves -> fitted per-hop latency/bandwidth -> projected collective
// time on N nodes x G ranks (ring, tree, hierarchical; the fastest per size, named) -> training-step
// estimate -> fabric cost. A plain program (no MPI). Subcommands:
//   fit       RUN...                           fitted parameters and the error at every measured size
//   validate  --inter RUN [--intra RUN] --check RUN...   predict measured runs from smaller ones
//   project   --inter SRC... [--intra SRC] --nodes LIST [--gpus LIST] ...   projected, costed rows
// RUN = a results folder, a table.csv, an nccl-tests log or perftest output. SRC = spec:NAME[,eff=X][,lat=US]
// or RUN:SERIES (the series of RUN that matches SERIES, per collective). Projected rows go to
// projected.csv / validation.csv (column kind = projected), never into a table.csv.
// Exit codes: 0 done, 1 a plot failed or a validation bound was missed (validate --require), 2 bad input.
// One file per subcommand: model_fit.cc, model_validate.cc, model_project.cc (and specs), model_nccl.cc;
// shared pieces in model_common.cc.
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "model_common.h"
#include "model_nccl.h"
#include "report/import.h"

using namespace fb::tools;

namespace {

// One row per subcommand: name, help, and a setup that adds its options to the CLI11 subcommand and
// returns what runs it after parsing. A new subcommand (e.g. `nccl`, in its own file) is one row here.
struct Subcommand {
  const char* name;
  const char* help;
  std::function<std::function<int()>(CLI::App&)> setup;
};

int run(int argc, char** argv) {
  CLI::App app{"fabricbench-model: fit measured curves, project collectives to N nodes x G ranks (ring, tree, "
               "hierarchical), estimate a training step and the fabric cost. Projected rows are labelled as such."};
  app.require_subcommand(1);
  std::string cmdLine = "fabricbench-model";
  for (int i = 1; i < argc; ++i) cmdLine += std::string(" ") + argv[i];
  const Subcommand table[] = {
      {"fit", "fit every series of the given runs; print the parameters and the error at every size", setupFit},
      {"validate", "fit on small runs, predict bigger measured runs, print the error", setupValidate},
      {"project", "projected collective times, training step and cost on N nodes x G ranks",
       [&](CLI::App& s) { return setupProject(s, cmdLine); }},
      {"specs", "print the link spec table with its sources", setupSpecs},
  };
  std::vector<std::pair<CLI::App*, std::function<int()>>> subs;
  for (auto& t : table) {
    CLI::App* s = app.add_subcommand(t.name, t.help);
    subs.emplace_back(s, t.setup(*s));
  }
  CLI::App* nccl = fb::tools::addNcclCommands(app);
  subs.emplace_back(nccl, [nccl] { return fb::tools::runNcclCommands(nccl); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::string w = e.what();
    std::fprintf(stderr, "fabricbench-model: error: %s (see fabricbench-model --help)\n", w.c_str());
    return 2;
  }
  for (auto& [s, runIt] : subs)
    if (*s) return runIt();
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  fb::setProgramName("fabricbench-model");  // lib/'s warnings (a run folder without run.json) carry it
  try {
    return run(argc, argv);
  } catch (const fb::InputError& e) {
    removeCreated();
    std::fprintf(stderr, "fabricbench-model: error: %s\n", e.what());
    return 2;
  } catch (const fb::ConfigError& e) {
    removeCreated();
    std::fprintf(stderr, "fabricbench-model: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabricbench-model: error: %s\n", e.what());
    return 1;
  }
}

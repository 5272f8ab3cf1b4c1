// fabricbench-model nccl: NCCL's own algorithms and protocols (lib/model/nccl.h) calibrated on
// nccl-tests logs, validated on other runs of the same cluster, and projected to N nodes x G GPUs.
//   nccl fit      RUN...                               calibrated machine, error and NCCL's pick per size
//   nccl validate --fit RUN... --predict RUN... | --sets FILE.json   the validation table, evidence.json
//   nccl project  --fit RUN... --nodes LIST [--fabric NAME=nic=48,nics=8]... [--evidence FILE]
// Projected rows carry an error band from validation evidence of their algorithm and size regime.
#pragma once
#include <CLI/CLI.hpp>

namespace fb::tools {

// Registers "nccl" and its subcommands on the model tool's app; returns the "nccl" subcommand.
CLI::App* addNcclCommands(CLI::App& app);
// Runs the parsed nccl subcommand; exit code. Throws fb::InputError on bad input (exit 2 by the caller).
int runNcclCommands(CLI::App* nccl);

}  // namespace fb::tools

// fabricbench-model nccl: what its subcommands share (model_nccl.cc: fit, validate and the
// registration; model_nccl_project.cc: project).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "model_common.h"

#include <CLI/CLI.hpp>

#include "model/nccl.h"

namespace fb::tools::ncclcmd {

struct MachineOpts {
  std::optional<double> nics;  // not given: one NIC per GPU (rails); given, > 0
  double nicGBps = 48, nicLineGBps = 0;  // nicLineGBps 0: nicGBps x 50/48
  // Not given: from the logs' GPU (model::ncclGpuPrior), else the Hopper defaults 365 / 480.
  std::optional<double> ringGBps, nvlsGBps;
  std::optional<bool> pcie;  // --pcie / --nvlink / a set's "pcie"; not given: by the logs' GPU, else NVLink
  bool collNet = false;
  std::string given;  // KEY=VALUE,... applied to every run (algo=ring, proto=simple, channels=24)
};

void addMachineOptions(CLI::App* c, MachineOpts& o);
void positive(double v, const char* what, bool zeroOk = false);
// The machine options alone, before any log is read: one line for the first bad value.
void checkMachineOptions(const MachineOpts& o);
// The prior machine: the options given, the rest from the first run's GPU (the logs' '#  Rank' lines or
// fingerprint) where ncclGpuPrior knows it. *note (when given) says which GPU family set what.
fb::model::NcclMachine priorOf(const MachineOpts& o, const std::vector<fb::model::NcclRun>& runs,
                               std::string* note = nullptr);
// The fit of the runs from priorOf; where the logs leave NVLS open (no GPU named or one the table lacks, no
// --nvls-gbps), fitted with and without NVLS, keeping the closer (*note says which and why).
fb::model::NcclFit calibrateRuns(const MachineOpts& o, const std::vector<fb::model::NcclRun>& runs,
                                 const fb::model::NcclFitOptions& fo, std::string* note);
std::vector<fb::model::NcclRun> loadRuns(const std::vector<std::string>& files, const std::string& given);
using fb::tools::human;  // "1 MiB" (model_common.h)
std::string pick(fb::model::NcclAlgo a, fb::model::NcclProto p);
std::string machineLine(const fb::model::NcclFit& f);
std::string runShape(const fb::model::NcclRun& r);
// Per-size table of one run: measured, model, error, NCCL's pick in the model.
std::string pointsTable(const std::vector<fb::model::NcclFitPoint>& pts);
void writeOut(const std::string& dir, const std::string& name, const std::string& text);

// The parsed options of the three subcommands.
struct Args {
  CLI::App *fit = nullptr, *val = nullptr, *prj = nullptr;
  MachineOpts mo;
  std::vector<std::string> fitRuns, predRuns;
  std::string setsFile, out, evidence, force, minBytes = "1M", sizes = "1M,16M,256M,1G,8G";
  std::vector<std::string> fabrics, colls;
  std::vector<int> nodes, gpus;
  double boundMed = 10, boundMax = 20;
  bool require = false;
};
extern Args g;

int cmdProject();

}  // namespace fb::tools::ncclcmd

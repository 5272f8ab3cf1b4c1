#include "report/verdict.h"

#include "core/impl_facts.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fb {
namespace {

std::string implOf(const std::string& label) { return label.substr(0, label.find(':')); }

std::string joinLabels(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

}  // namespace

bool isGpuBackend(const std::string& label, const std::vector<std::string>& gpuBackends) {
  return std::find(gpuBackends.begin(), gpuBackends.end(), implOf(label)) != gpuBackends.end();
}

Verdict judgeRun(const VerdictInput& in) {
  Verdict v;
  std::vector<std::string> skippedLabels;
  for (const auto& [label, why] : in.skipped) skippedLabels.push_back(label);
  // Declined rows are listed with what was declined: "mpi allreduce float32 avg".
  for (const auto& [label, what] : in.declined) skippedLabels.push_back(label + " " + what.substr(0, what.find(": ")));
  std::string lists = fmt::format("measured: {}; skipped: {}", joinLabels(in.measured), joinLabels(skippedLabels));

  bool anyGpu = std::any_of(in.measured.begin(), in.measured.end(),
                            [&](const std::string& m) { return isGpuBackend(m, in.gpuBackends); });
  const std::string gpuPaths = fmt::format("{}", fmt::join(in.gpuBackends, ", "));
  // A named transport none of whose paths produced rows was skipped. (One NCCL path measured and the
  // others listed as skipped under --path auto is not: the transport was measured.)
  for (const auto& [label, why] : in.skipped) {
    std::string impl = implOf(label);
    bool named = std::find(in.named.begin(), in.named.end(), impl) != in.named.end();
    bool measured = std::any_of(in.measured.begin(), in.measured.end(),
                                [&](const std::string& m) { return implOf(m) == impl; });
    // An attestation failure is reported once, below, as the reason the run failed.
    if (named && !measured && why.find("--require ") == std::string::npos)
      v.reasons.push_back(fmt::format("{} was named on the command line but skipped ({})", label, why));
  }
  for (const auto& [label, what] : in.declined)
    if (std::find(in.named.begin(), in.named.end(), implOf(label)) != in.named.end())
      v.reasons.push_back(fmt::format("{} was named on the command line but skipped {}", label, what));
  if (in.autoTransports && !in.gpus.empty() && !anyGpu)
    v.reasons.push_back(fmt::format("this node has GPUs ({}) but no GPU path ({}) was measured", in.gpus, gpuPaths));
  for (const auto& r : in.required) {
    bool hit = r == "gpu" ? anyGpu
                          : std::any_of(in.measured.begin(), in.measured.end(),
                                        [&](const std::string& m) { return m == r || implOf(m) == r; });
    if (!hit)
      v.reasons.push_back(r == "gpu" ? fmt::format("--require gpu: no GPU path ({}) was measured", gpuPaths)
                                     : fmt::format("--require {}: no {} row was measured", r, r));
  }
  // An NCCL attestation that did not hold (--require ib|roce|gdr|nvlink|rails=N, or --path ib/roce
  // on more than one node): NCCL's backend was skipped with the reason "--require ...". The run
  // fails with exit 4 even when nothing else produced rows.
  bool attestFailed = false;
  for (const auto& [label, why] : in.skipped)
    if (why.find("--require ") != std::string::npos) {
      attestFailed = true;
      v.reasons.push_back(fmt::format("{}: {}", label, why));
    }
  // A row of a backend that attests (core/impl_facts.h: NCCL) proves the attestation held.
  if (!in.attestRequired.empty() && !attestFailed &&
      !std::any_of(in.measured.begin(), in.measured.end(), [](const std::string& m) {
        const ImplFacts* f = findImplFacts(implOf(m));
        return f && f->attests;
      }))
    v.reasons.push_back(fmt::format("--require {}: no {} row was measured to attest it", fmt::join(in.attestRequired, ","),
                                    fmt::join(implNames(&ImplFacts::attests), "/")));

  if (in.badRows > 0) {
    v.ok = false;
    v.exitCode = kExitFailed;
    v.status = fmt::format("failed: {} wrong elements in {} rows; {}", in.wrongTotal, in.badRows, lists);
  } else if (in.rows == 0 && !attestFailed) {
    v.ok = false;
    v.exitCode = kExitNothingRan;
    v.status = fmt::format("failed: nothing ran (every backend skipped or filtered out); {}", lists);
  } else if (!v.reasons.empty()) {
    v.ok = false;
    v.exitCode = kExitPartial;
    std::string why;
    for (const auto& r : v.reasons) why += (why.empty() ? "" : "; ") + r;
    v.status = fmt::format("partial: {} rows, wrong = {}; {}; not passed: {}", in.rows,
                           in.checked ? "0" : "not checked (-c 0)", lists, why);
  } else {
    v.status = fmt::format("passed: {} rows, wrong = 0{}; {}", in.rows, in.checked ? "" : " (data NOT checked: -c 0)",
                           lists);
  }
  return v;
}

}  // namespace fb

#include "core/impl_facts.h"

namespace fb {

const std::vector<ImplFacts>& implFacts() {
  using A = ImplFacts::Accept;
  static const std::vector<ImplFacts> table = [] {
    std::vector<ImplFacts> t;
    auto add = [&](std::string_view name, auto&& set) {
      ImplFacts f;
      f.name = name;
      set(f);
      t.push_back(f);
    };
    add("tcp", [](ImplFacts& f) { f.backend = f.hostAlgorithms = true, f.accept = A::kPairs; });
    add("mpi", [](ImplFacts& f) { f.backend = f.modelReference = true, f.accept = A::kPairs; });
    add("verbs", [](ImplFacts& f) { f.backend = f.hostAlgorithms = true, f.accept = A::kPairs; });
    add("nccl", [](ImplFacts& f) {
      f.title = "NCCL";
      f.backend = f.gpu = f.eventTimer = f.pipelined = f.ratioBaseline = f.attests = f.ncclAlgorithms = true;
      f.accept = A::kPairsWhenNamed;
    });
    add("cuda", [](ImplFacts& f) { f.backend = f.gpu = f.eventTimer = f.pipelined = true; });
    // imported rows (fabricbench-report import): NCCL's own benchmark pipelines as NCCL does
    add("nccl-tests", [](ImplFacts& f) { f.gpu = f.pipelined = f.ncclAlgorithms = true; });
    return t;
  }();
  return table;
}

const ImplFacts* findImplFacts(std::string_view impl) {
  for (const auto& f : implFacts())
    if (f.name == impl) return &f;
  return nullptr;
}

std::vector<std::string> implNames(bool ImplFacts::*fact) {
  std::vector<std::string> out;
  for (const auto& f : implFacts())
    if (f.*fact) out.emplace_back(f.name);
  return out;
}

std::vector<std::string> acceptPathNames(bool measured) {
  std::vector<std::string> out;
  for (const auto& f : implFacts())
    if (measured ? f.accept == ImplFacts::Accept::kPairs : f.accept != ImplFacts::Accept::kNo) out.emplace_back(f.name);
  return out;
}

std::string_view implOfLabel(std::string_view label) { return label.substr(0, label.find(':')); }

}  // namespace fb

// The cuda collective's programs and the cost model's algorithm each one is, as a header of its own
// (no CUDA): tests/model checks each id parses to the model's Algo without building the backend.
#pragma once
#include <string_view>

#include "collectives/spec.h"

namespace fb::cudaipc {

enum class CudaProgram { kRing, kOneShot, kOneShotLL };
inline constexpr CudaProgram kCudaPrograms[] = {CudaProgram::kRing, CudaProgram::kOneShot, CudaProgram::kOneShotLL};

// The row's typed "model_algo" detail: the canonical name in lib/model's algoTable. The ring program's
// AllToAll pulls each peer's block straight from it: the model's "direct" (pairwise). Its Broadcast
// (every rank pulls the root's buffer) stays "ring", the only Broadcast the model has (about S per rank).
constexpr std::string_view cudaModelAlgo(CudaProgram p, CollKind k) {
  switch (p) {
    case CudaProgram::kOneShot:
    case CudaProgram::kOneShotLL: return "one-shot";
    case CudaProgram::kRing: break;
  }
  return k == CollKind::kAllToAll ? "direct" : "ring";
}

}  // namespace fb::cudaipc

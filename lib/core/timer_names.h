// The two timers (--timer), named for what they are:
//   rank        each rank's own clock around its own batch (the default): CUDA events on its
//               stream on GPU backends (rows say "rank-events"), the steady clock on host backends
//               (rows say "rank-clock"). No GPU is involved in a host backend's row.
//   nccl-tests  nccl-tests' host clock: after a barrier, from before the first operation is
//               enqueued until the stream is synchronised (rows say "nccl-tests").
// Files and command lines from before these names said "gpu" (the rank timer, on every backend)
// and "host" (nccl-tests'): both still read, and --timer gpu|host still parse.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "core/impl_facts.h"

namespace fb {

inline constexpr std::string_view kTimerRank = "rank", kTimerNcclTests = "nccl-tests";

// The flag's value as a timer: "rank"/"gpu" → rank, "nccl-tests"/"host" → nccl-tests; nullopt else.
inline std::optional<std::string_view> parseTimerFlag(std::string_view v) {
  if (v == kTimerRank || v == "gpu") return kTimerRank;
  if (v == kTimerNcclTests || v == "host") return kTimerNcclTests;
  return std::nullopt;
}

// True for implementations whose own timing is CUDA events on a stream (their ImplFacts say so).
inline bool timesWithEvents(std::string_view impl) {
  const ImplFacts* f = findImplFacts(impl);
  return f && f->eventTimer;
}

// What a row's `timer` column says for a run with --timer `flag` (either spelling) of `impl`.
inline std::string rowTimerName(std::string_view flag, std::string_view impl) {
  if (parseTimerFlag(flag) == kTimerNcclTests) return std::string(kTimerNcclTests);
  return timesWithEvents(impl) ? "rank-events" : "rank-clock";
}

// A row's timer as read from a file: the old names ("gpu", "host") become today's; others stay.
inline std::string normalizeRowTimer(std::string_view timer, std::string_view impl) {
  if (timer == "gpu" || timer == "host") return rowTimerName(timer, impl);
  return std::string(timer);
}

}  // namespace fb

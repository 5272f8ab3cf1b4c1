// Order statistics: one function per convention, used across the suite.
#pragma once
#include <vector>

namespace fb::stats {

// Nearest-rank percentile, q in 0..100: the smallest value with at least q % of the values at or
// below it (q = 0 gives the minimum). NaN when v is empty. Used for p99 columns and verdicts.
double percentile(std::vector<double> v, double q);
// The value at 0-based rank floor(n/2) of the sorted values: the median for an odd count, the upper middle for
// an even one. nccl-tests' -I p50 (util.cu computeIterStats), used for --per-op's p50. NaN when empty.
double upperMedian(std::vector<double> v);
// The median: the middle value, or the mean of the two middle values for an even count. NaN when empty.
double median(std::vector<double> v);
// The median absolute deviation from the median (unscaled). NaN when empty.
double mad(const std::vector<double>& v);

}  // namespace fb::stats

// Order statistics, one convention for the whole suite.
#pragma once
#include <vector>

namespace fb::stats {

// Nearest-rank percentile, q in 0..100: the smallest value with at least q % of the values at or
// below it (q = 0 gives the minimum). NaN when v is empty. Used for p50/p99 columns and verdicts.
double percentile(std::vector<double> v, double q);
// The median: the middle value, or the mean of the two middle values for an even count. NaN when empty.
double median(std::vector<double> v);
// The median absolute deviation from the median (unscaled). NaN when empty.
double mad(const std::vector<double>& v);

}  // namespace fb::stats

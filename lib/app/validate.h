// Bad-input checks that need this rank's machine or the rank count (options.cc checks the form
// of each flag). Every rank runs them before the first exchange, so bad input is found before
// any communication and before anything is created on disk; the exchange then gives every rank
// the same verdict (one line, exit 2).
#pragma once
#include <string>

#include "app/options.h"

namespace fb {

// Throws ConfigError with one line naming the problem. `rank` 0 also checks the result folder
// (it is the rank that writes it).
void validateOnThisRank(const Options& o, int nranks, int rank, const std::string& hostname);

}  // namespace fb

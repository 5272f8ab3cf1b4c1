// Moved to core/process.h (the machine inventory in lib/topology runs commands too). This header
// stays for the includes in tools/model* and benchmarks/, which other work owns.
#pragma once
#include "core/process.h"

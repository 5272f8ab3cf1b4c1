// The instruments' error check: a call that does not return `ok` prints one line and ends the program.
#pragma once
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define INSTRUMENT_CHECK(x, ok, text)                     \
  do {                                                    \
    auto e_ = (x);                                        \
    if (e_ != (ok)) {                                     \
      std::printf("error: %s: %s\n", #x, text(e_));       \
      std::exit(1);                                       \
    }                                                     \
  } while (0)
#define CK(x) INSTRUMENT_CHECK(x, cudaSuccess, cudaGetErrorString)

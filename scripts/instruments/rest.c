// Instrument (issue 33): LD_PRELOAD into nccl-tests so its main thread sleeps before each size's per-iteration
// loop, as fabricbench's blocks between its loops (1674 voluntary switches a run against nccl-tests' 15, session
// 22): does a rested core run the next loop faster? nccl-tests creates its -I events (cudaEventCreate, shared
// CUDA runtime) in a burst before each size's loop; the first call of a burst (none for 5 ms) sleeps REST_US
// microseconds (default 2000) first. Build: cc -O2 -shared -fPIC -o rest.so rest.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int (*EventCreate)(void**);

static double nowMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int cudaEventCreate(void** event) {
  static EventCreate real;
  static double last = -1e9;
  static long restUs = -1;
  if (!real) real = (EventCreate)dlsym(RTLD_NEXT, "cudaEventCreate");
  if (restUs < 0) restUs = getenv("REST_US") ? atol(getenv("REST_US")) : 2000;
  if (nowMs() - last > 5) usleep((useconds_t)restUs);
  last = nowMs();
  return real(event);
}

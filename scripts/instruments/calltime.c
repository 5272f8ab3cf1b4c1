// Instrument (issue 33): where in the host loop does nccl-tests -I 1 spend the 0.5-0.7 us an out-of-place
// one-rank operation that fabricbench --per-op does not? LD_PRELOAD into either tool: every ncclAllReduce and
// cudaEventRecord the application calls (shared libnccl and libcudart in both) is timed on CLOCK_MONOTONIC.
// For each ncclAllReduce that follows an event record (the per-op loops of both tools) one CSV row goes to
// $CALLTIME_OUT at exit: count, in place, the call's own time, the record's time before it, and the time from
// that record's return to this call's entry, and from the allreduce before to that record's entry (the
// application's own code between the calls; -1 for the first), all in ns.
// Build: cc -O2 -shared -fPIC -o calltime.so calltime.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*AllReduce)(const void*, void*, size_t, int, int, void*, void*);
typedef int (*EventRecord)(void*, void*);

enum { kMax = 1 << 18 };
static struct Row { size_t count; int inPlace; long ar, rec, gap, before; } rows[kMax];
static int nRows;
static long recEnter, recExit;  // the last cudaEventRecord's entry and return
static long arExit, recBefore;  // the last ncclAllReduce's return; that record's entry minus it (-1: none)
static int lastWasRecord;

static long nowNs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

int cudaEventRecord(void* event, void* stream) {
  static EventRecord real;
  if (!real) real = (EventRecord)dlsym(RTLD_NEXT, "cudaEventRecord");
  long t0 = nowNs();
  int r = real(event, stream);
  recBefore = arExit ? t0 - arExit : -1;
  recEnter = t0;
  recExit = nowNs();
  lastWasRecord = 1;
  return r;
}

int ncclAllReduce(const void* send, void* recv, size_t count, int type, int op, void* comm, void* stream) {
  static AllReduce real;
  if (!real) real = (AllReduce)dlsym(RTLD_NEXT, "ncclAllReduce");
  long t0 = nowNs();
  int r = real(send, recv, count, type, op, comm, stream);
  long t1 = nowNs();
  if (lastWasRecord && nRows < kMax)
    rows[nRows++] = (struct Row){count, send == recv, t1 - t0, recExit - recEnter, t0 - recExit, recBefore};
  arExit = t1;
  lastWasRecord = 0;
  return r;
}

__attribute__((destructor)) static void dump(void) {
  const char* path = getenv("CALLTIME_OUT");
  if (!path || !nRows) return;
  FILE* f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "count,in_place,allreduce_ns,record_ns,gap_ns,before_ns\n");
  for (int i = 0; i < nRows; ++i)
    fprintf(f, "%zu,%d,%ld,%ld,%ld,%ld\n", rows[i].count, rows[i].inPlace, rows[i].ar, rows[i].rec, rows[i].gap,
            rows[i].before);
  fclose(f);
}

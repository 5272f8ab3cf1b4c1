// fabricbench's NCCL profiler plugin (loaded by NCCL through NCCL_PROFILER_PLUGIN): records the
// algorithm, protocol and channel count NCCL chose for each collective (and the channels of each
// send/receive) while fabricbench arms it, i.e. around the one warm-up operation per size, and
// nothing otherwise: disarmed, the activation mask NCCL reads per operation is 0, so timed
// batches pay nothing. Interface: NCCL's profiler API v5 (NCCL 2.26-2.28). The declarations below
// are ours, written from the API's description (ext-profiler/README.md and the v5 event
// descriptor): only the fields this plugin reads are named, the rest keeps the layout.
//
// fabricbench reaches the records with dlopen(RTLD_NOLOAD) + dlsym of the two C functions at the
// end (fbProfilerArm, fbProfilerTake). No NCCL header is needed to build this library.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace {

using Result = int;  // ncclResult_t: 0 = ncclSuccess
constexpr std::uint64_t kEventColl = 1u << 1;
constexpr std::uint64_t kEventP2p = 1u << 2;

struct EventDescr {  // ncclProfilerEventDescr_v5_t
  std::uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      std::uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      std::size_t count;
      int root;
      const char* datatype;
      std::uint8_t nChannels;
      std::uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      std::size_t count;
      int peer;
      std::uint8_t nChannels;
      void* parentGroup;
    } p2p;
    char pad[128];
  };
};

using Logger = void (*)(int, unsigned long, const char*, int, const char*, ...);

struct Plugin {  // ncclProfiler_v5_t
  const char* name;
  Result (*init)(void** context, std::uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                 int nranks, int rank, Logger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescr* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, void* eStateArgs);
  Result (*finalize)(void* context);
};

struct Context {
  int rank;
};

std::mutex gMutex;
std::vector<int*> gMasks;  // NCCL's activation mask (one per process in 2.28; kept per init to be safe)
std::vector<std::pair<int, std::string>> gRecords;  // rank, record
int gArmed = 0;  // arm count: ranks that are threads of one process arm and disarm independently

Result init(void** context, std::uint64_t, int* mask, const char*, int, int, int rank, Logger) {
  std::lock_guard<std::mutex> lock(gMutex);
  *context = new Context{rank};
  if (mask) {
    gMasks.push_back(mask);
    __atomic_store_n(mask, gArmed ? static_cast<int>(kEventColl | kEventP2p) : 0, __ATOMIC_RELAXED);
  }
  return 0;
}

Result startEvent(void* context, void** handle, EventDescr* d) {
  *handle = nullptr;  // no stop/state calls wanted
  if (!d || !context) return 0;
  char line[256];
  if (d->type == kEventColl) {
    std::snprintf(line, sizeof(line), "rank %d coll %s count %zu algo %s proto %s nchannels %u nwarps %u",
                  static_cast<Context*>(context)->rank, d->coll.func ? d->coll.func : "?", d->coll.count,
                  d->coll.algo ? d->coll.algo : "?", d->coll.proto ? d->coll.proto : "?",
                  static_cast<unsigned>(d->coll.nChannels), static_cast<unsigned>(d->coll.nWarps));
  } else if (d->type == kEventP2p) {
    std::snprintf(line, sizeof(line), "rank %d p2p %s count %zu peer %d nchannels %u",
                  static_cast<Context*>(context)->rank, d->p2p.func ? d->p2p.func : "?", d->p2p.count, d->p2p.peer,
                  static_cast<unsigned>(d->p2p.nChannels));
  } else {
    return 0;
  }
  std::lock_guard<std::mutex> lock(gMutex);
  if (gRecords.size() < 4096) gRecords.emplace_back(static_cast<Context*>(context)->rank, line);
  return 0;
}

Result stopEvent(void*) { return 0; }
Result recordEventState(void*, int, void*) { return 0; }
Result finalize(void* context) {
  delete static_cast<Context*>(context);
  return 0;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) Plugin ncclProfiler_v5 = {"fabricbench", init, startEvent, stopEvent,
                                                                   recordEventState, finalize};

// Arm (1) or disarm (0) recording for every communicator of this process (counted: recording
// stays on while any caller has it armed).
__attribute__((visibility("default"))) void fbProfilerArm(int on) {
  std::lock_guard<std::mutex> lock(gMutex);
  gArmed = on ? gArmed + 1 : std::max(0, gArmed - 1);
  for (int* m : gMasks) __atomic_store_n(m, gArmed ? static_cast<int>(kEventColl | kEventP2p) : 0, __ATOMIC_RELAXED);
}

// Moves rank `rank`'s records (all ranks' when rank < 0) into buf, one per line, NUL-terminated,
// truncated to n; returns how many communicators NCCL initialised with this plugin (0: NCCL
// never called init).
__attribute__((visibility("default"))) int fbProfilerTake(int rank, char* buf, std::size_t n) {
  std::lock_guard<std::mutex> lock(gMutex);
  std::string all;
  std::vector<std::pair<int, std::string>> keep;
  for (auto& r : gRecords) {
    if (rank < 0 || r.first == rank) all += r.second + "\n";
    else keep.push_back(std::move(r));
  }
  gRecords.swap(keep);
  if (n > 0) {
    std::size_t k = std::min(all.size(), n - 1);
    std::memcpy(buf, all.data(), k);
    buf[k] = '\0';
  }
  return static_cast<int>(gMasks.size());
}

}  // extern "C"

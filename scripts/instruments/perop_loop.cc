// Instrument (issue 33): why does fabricbench --per-op read 0.5 us less than nccl-tests -I 1 where the
// GPU waits on the host (one-rank in-place AllReduce; out-of-place 128-512 KiB)? One process, one
// rank, both loops side by side, interleaved: per-operation time = event i -> event i+1, p50 over
// every operation of every repetition.
//   fb      : record ev0; for i { allreduce(i); record ev[i+1] }          (fabricbench's timeEachOp)
//   nt      : for i { clock; setDevice; record ev[i]; allreduce(i) }; record ev[n]   (nccl-tests -I 1)
//   fb+set  : fb with cudaSetDevice before each operation
//   nt-bare : nt without the clock read and cudaSetDevice
//   fb-fixed: fb with one buffer position (no rotation)
//   fb-cfg  : fb on a second communicator made as fabricbench makes its own (ncclCommInitRankConfig,
//             blocking = 1) where the others use ncclCommInitAll as nccl-tests -g 1 does
// Build on the GPU host: g++ -O2 -std=c++17 perop_loop.cc -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcudart -lnccl
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "check.h"
#define NK(x) INSTRUMENT_CHECK(x, ncclSuccess, ncclGetErrorString)

namespace {
constexpr size_t kSpan = size_t(1) << 30;  // nccl-tests -e 1G: operations move inside 1 GiB
constexpr int kIters = 40, kWarm = 10, kReps = 30;
ncclComm_t comm, cfgComm;
cudaStream_t stream;
char *sendBuf, *recvBuf;

void op(size_t bytes, bool inPlace, bool rotate, int i, ncclComm_t c = comm) {
  size_t steps = rotate ? kSpan / bytes : 1, shift = bytes * (size_t(i) % steps);
  char* r = recvBuf + shift;
  char* s = inPlace ? r : sendBuf + shift;
  NK(ncclAllReduce(s, r, bytes / 4, ncclFloat, ncclSum, c, stream));
}

// One batch of kIters operations timed by `variant`; appends each operation's time (us) to out.
void batch(const std::string& variant, size_t bytes, bool inPlace, std::vector<double>& out) {
  for (int i = 0; i < kWarm; ++i) op(bytes, inPlace, true, i, variant == "fb-cfg" ? cfgComm : comm);
  CK(cudaStreamSynchronize(stream));
  std::vector<cudaEvent_t> ev(kIters + 1);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  const bool nt = variant.rfind("nt", 0) == 0, full = variant == "nt";
  const bool setDev = variant == "fb+set", rotate = variant != "fb-fixed";
  const ncclComm_t c = variant == "fb-cfg" ? cfgComm : comm;
  volatile double sink = 0;
  auto t = std::chrono::steady_clock::now();
  if (!nt) CK(cudaEventRecord(ev[0], stream));
  for (int i = 0; i < kIters; ++i) {
    if (nt) {
      if (full) {
        sink = sink + std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
        CK(cudaSetDevice(0));
      }
      CK(cudaEventRecord(ev[i], stream));
      op(bytes, inPlace, rotate, i);
    } else {
      if (setDev) CK(cudaSetDevice(0));
      op(bytes, inPlace, rotate, i, c);
      CK(cudaEventRecord(ev[i + 1], stream));
    }
  }
  if (nt) CK(cudaEventRecord(ev[kIters], stream));
  CK(cudaStreamSynchronize(stream));
  for (int i = 0; i < kIters; ++i) {
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
    out.push_back(ms * 1e3);
  }
  for (auto e : ev) CK(cudaEventDestroy(e));
}

double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * v.size()))];
}
}  // namespace

int main() {
  CK(cudaSetDevice(0));
  int dev = 0;
  NK(ncclCommInitAll(&comm, 1, &dev));
  ncclUniqueId id;
  NK(ncclGetUniqueId(&id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  NK(ncclCommInitRankConfig(&cfgComm, 1, id, 0, &config));
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  NK(ncclMemAlloc(reinterpret_cast<void**>(&sendBuf), kSpan));
  NK(ncclMemAlloc(reinterpret_cast<void**>(&recvBuf), kSpan));
  const std::vector<std::string> variants = {"fb", "nt", "fb+set", "nt-bare", "fb-fixed", "fb-cfg"};
  struct Case {
    size_t bytes;
    bool inPlace;
  };
  const std::vector<Case> cases = {{8, true}, {1 << 20, true}, {128 << 10, false}, {256 << 10, false}, {512 << 10, false},
                                   {4 << 20, false}};
  std::printf("case,variant,p50_us,p10_us,p90_us,mean_us,samples\n");
  for (const auto& c : cases) {
    std::vector<std::vector<double>> t(variants.size());
    for (int rep = 0; rep < kReps; ++rep)  // interleaved: every variant once per repetition
      for (size_t v = 0; v < variants.size(); ++v) batch(variants[v], c.bytes, c.inPlace, t[v]);
    for (size_t v = 0; v < variants.size(); ++v) {
      double sum = 0;
      for (double x : t[v]) sum += x;
      std::printf("%zu B %s,%s,%.3f,%.3f,%.3f,%.3f,%zu\n", c.bytes, c.inPlace ? "in" : "out", variants[v].c_str(),
                  pct(t[v], 0.5), pct(t[v], 0.1), pct(t[v], 0.9), sum / t[v].size(), t[v].size());
    }
  }
  NK(ncclMemFree(sendBuf));
  NK(ncclMemFree(recvBuf));
  NK(ncclCommDestroy(comm));
  NK(ncclCommDestroy(cfgComm));
  return 0;
}

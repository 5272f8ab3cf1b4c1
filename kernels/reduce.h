// Reduction kernels (sum) and the CUDA IPC collective programs built on them. Declarations
// only: usable from .cc files. Launchers never throw; they return cudaError_t.
//
// Two families:
//  * fb::kernels::reduceSum: out = in[0] + ... + in[n-1] on one GPU (any of the pointers may be
//    peer memory). 16-byte vectors when every pointer is 16-byte aligned, element by element
//    otherwise (odd sizes and unaligned offsets are always correct, only slower).
//  * fb::kernels::ipc: the persistent kernels behind lib/collectives/cuda. One launch runs one
//    whole collective operation; ranks synchronize through flags written into peer memory and
//    every spin is bounded by a time-out (globaltimer), after which the kernel records the
//    failure in KernelStatus and returns instead of hanging.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace fb::kernels {

enum class ElemType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };
std::size_t elemSize(ElemType t);

constexpr int kMaxReduceInputs = 8;

// out[i] = sum over k of inputs[k][i] for i < count (nInputs in 1..kMaxReduceInputs; 1 = copy).
// `inputs` is a host array. out may be the same pointer as an input (in place). Float16 and
// bfloat16 are accumulated in float and rounded once per element (round to nearest even).
// blocks = 0: as many as fill the GPU.
cudaError_t reduceSum(ElemType t, void* out, const void* const* inputs, int nInputs,
                      std::size_t count, cudaStream_t stream, int blocks = 0, int threads = 512);

}  // namespace fb::kernels

namespace fb::kernels::ipc {

constexpr int kMaxRanks = 8;       // one node
constexpr int kMaxRingSteps = 16;  // 2 (n - 1) + 1 for n <= 8
constexpr int kMaxBlocks = 256;    // flag arrays are sized for this many blocks

// Written by a kernel that gave up (mapped pinned host memory, so the host reads it without a
// synchronization). code: 0 = ok, 1 = a peer's flag did not arrive in time.
struct KernelStatus {
  int code;
  int block;
  int peer;   // rank that was waited for
  int pad;
  unsigned long long step;      // the step (flag value) waited for
  unsigned long long observed;  // the flag value last seen
};

// One step of a ring program: dst[i] = src0[i] (+ src1[i] when src1 != nullptr), i < count;
// plus an optional independent copy dst2[i] = src2[i], i < count2 (0 = none) in the same step.
struct RingStep {
  void* dst;
  const void* src0;
  const void* src1;
  unsigned long long count;
  void* dst2;
  const void* src2;
  unsigned long long count2;
};

// A ring program: nSteps steps run in lock step with both neighbours. Block b of every rank
// handles the same slice of each step, so flags are per block: before global step t, block b
// waits until fromLeft[b] >= t and fromRight[b] >= t (both neighbours finished step t-1);
// after it, it writes t+1 into toLeft[b] (left's fromRight) and toRight[b] (right's fromLeft).
// counters[b] (local) holds the number of steps block b completed over all launches, so the
// same launch can be replayed from a CUDA graph. With no peers (fromLeft == nullptr) the
// steps run back to back without flags.
struct RingProgram {
  ElemType type;
  int nSteps;
  int leftRank, rightRank;
  RingStep steps[kMaxRingSteps];
  unsigned long long* counters;   // [blocks], local
  unsigned long long* fromLeft;   // [blocks], local, written by the left neighbour
  unsigned long long* fromRight;  // [blocks], local, written by the right neighbour
  unsigned long long* toLeft;     // left neighbour's fromRight (peer memory)
  unsigned long long* toRight;    // right neighbour's fromLeft (peer memory)
  KernelStatus* status;           // device view of mapped host memory
  unsigned long long timeoutNs;   // per wait
};
cudaError_t launchRing(const RingProgram& p, int blocks, int threads, cudaStream_t stream);

// One-shot AllReduce for small messages: every rank pushes its input into a staging area of
// every peer, raises a per-block flag there, waits for the peers' flags in its own memory and
// sums all ranks' data locally in rank order (identical result on every rank). Two staging
// slots alternate between launches. Layout of each rank's staging area:
//   staging[slot][srcRank][maxBytes], flags[slot][srcRank][kMaxBlocks] (unsigned long long).
struct OneShotProgram {
  ElemType type;
  int nRanks, rank;
  const void* input;
  void* output;
  unsigned long long count;
  unsigned long long maxBytes;          // capacity of one (slot, srcRank) staging cell
  void* staging[kMaxRanks];             // each rank's staging base (own one included)
  unsigned long long* flags[kMaxRanks];  // each rank's flag base
  unsigned long long* counters;          // [blocks], local
  KernelStatus* status;
  unsigned long long timeoutNs;
  unsigned llFlag;  // launchOneShotLL only: this launch's flag (>= 1, never repeated while the staging lives)
};
cudaError_t launchOneShot(const OneShotProgram& p, int blocks, int threads, cudaStream_t stream);

// The same one-shot AllReduce with flags carried inside the data (the "LL" scheme NCCL uses for
// small messages): every 8 input bytes travel as one 16-byte line {word0, flag, word1, flag}
// stored with one vector store, so a receiver knows a line has arrived when both flags equal
// this launch's llFlag, and no fence or separate flag write is needed. The cell [slot][srcRank]
// of the staging must hold 2 x the message (cudaErrorInvalidValue otherwise); slot = llFlag & 1.
// The caller zeroes its staging (and synchronizes with its peers) whenever the cells may hold
// other data, and gives every launch a new llFlag, the same on every rank.
cudaError_t launchOneShotLL(const OneShotProgram& p, int blocks, int threads, cudaStream_t stream);

// The verifiable data scheme of lib/collectives/spec.h, on the GPU:
//   patternValue(rank, i, seed) = ((i*3 + rank*5 + seed*7) mod 9) - 4  (size_t arithmetic)
cudaError_t fillPattern(ElemType t, void* buf, std::size_t count, int rank, int seed, cudaStream_t stream);
// buf[i] = value for every i < count (poisoning receive buffers before a check).
cudaError_t fillValue(ElemType t, void* buf, std::size_t count, float value, cudaStream_t stream);

enum class Expect : int {
  kAllReduce = 0,      // sum over ranks of pattern(r, j)
  kAllGather = 1,      // pattern(j / paramCount, j % paramCount)
  kReduceScatter = 2,  // sum over ranks of pattern(r, rank * paramCount + j)
  kPattern = 3,        // pattern(srcRank, j)  (P2P ring: srcRank = left neighbour)
};
struct ExpectSpec {
  Expect kind;
  int nRanks;
  int rank;
  int srcRank;
  int seed;
  unsigned long long paramCount;
};
// Counts elements of buf[0..count) that differ from the expected value; adds the count to
// *dWrong (device memory, caller zeroes it).
cudaError_t countWrong(ElemType t, const void* buf, std::size_t count, const ExpectSpec& spec,
                       unsigned long long* dWrong, cudaStream_t stream);

}  // namespace fb::kernels::ipc

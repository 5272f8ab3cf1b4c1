// Copy kernels (copies done by SMs rather than the copy engine) and small helpers for peer
// memory measurements. Declarations only: usable from .cc files. Launchers return cudaError_t.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace fb::kernels {

// dst[0..bytes) = src[0..bytes) by SMs; either pointer may be peer memory (a kernel on GPU A
// writing into GPU B's memory is an SM "write" copy, reading from it an SM "read" copy).
// 16-byte vectors when dst and src have the same alignment modulo 16, bytes otherwise.
// blocks = 0: two per multiprocessor.
// unroll: 16-byte loads in flight per thread before the stores (4, 8 or 16).
// load: how the 16-byte loads (and stores) are issued. On 2xH200 NV18 a peer read with evict-first
// loads moved 358-362 GB/s over 15 launch shapes, cg loads 355-357 (fabricbench-peer --sm-sweep), so
// the default is for peer copies; a local device-to-device copy is faster with kCg (3335 vs 3027 GB/s).
enum class CopyLoad {
  kCg,                  // ld.global.cg (L2 only), plain stores
  kCgPrefetch256,       // ld.global.cg with the L2::256B prefetch-size hint
  kNoAllocPrefetch256,  // ld.global.nc.L1::no_allocate with the L2::256B hint
  kStreaming,           // ld.global.cs (evict first), plain stores: the default
  kStreamingLoadStore,  // ld.global.cs and st.global.cs
};
cudaError_t copyBytes(void* dst, const void* src, std::size_t bytes, cudaStream_t stream, int blocks = 0,
                      int threads = 1024, int unroll = 4, CopyLoad load = CopyLoad::kStreaming);

// The same copy through the SM's bulk-copy (TMA) unit: one thread per block streams its slice
// global -> shared -> global with cp.async.bulk, `stages` buffers of `chunkBytes` in flight
// (Hopper and newer). dst, src and bytes must be multiples of 16 (cudaErrorInvalidValue
// otherwise). A stage that does not arrive within timeoutNs ends the block and sets *failed.
cudaError_t bulkCopyBytes(void* dst, const void* src, std::size_t bytes, cudaStream_t stream, int blocks,
                          int chunkBytes, int stages, int* failed, unsigned long long timeoutNs = 10'000'000'000ull);

// Latency: a chain of 8-byte pointers through `buf` (device memory of any GPU): node i at
// offset (i * stride) mod bytes points to node i+1. buildChain writes it (run it on buf's GPU).
cudaError_t buildPointerChain(void* buf, std::size_t bytes, std::size_t stride, cudaStream_t stream);
// One thread follows the chain `hops` times starting at buf (dependent loads, not cached in
// L1); the final pointer is stored in *sink so the loop cannot be optimized away.
cudaError_t chasePointers(const void* buf, int hops, unsigned long long* sink, cudaStream_t stream);

// A single thread spins until *flag >= want or timeoutNs passes (globaltimer); writes 1 to
// *timedOut when it gave up. Used by the P2P sanity check's fault injection and tests.
cudaError_t spinUntil(const unsigned long long* flag, unsigned long long want, unsigned long long timeoutNs,
                      int* timedOut, cudaStream_t stream);

}  // namespace fb::kernels

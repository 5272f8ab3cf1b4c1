// Instrument: the copy rate of W warps per CTA on 2 CTAs, copying as NCCL's reduceCopy does on Hopper
// (16-byte loads, each lane UNROLL=8 loads per 4 KiB warp chunk), over 1 GiB buffers. Prints GB/s per warp.
// Build and run on the GPU host: nvcc -O3 -gencode arch=compute_90,code=sm_90 -o /tmp/warp_copy warp_copy.cu
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include "check.h"
constexpr int UNROLL = 8;
__global__ void copyKernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n16) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const size_t per = n16 / gridDim.x, base = per * blockIdx.x;
  const size_t chunk = 32 * UNROLL;  // uint4 per warp chunk (4 KiB)
  for (size_t c = base + (size_t)warp * chunk; c + chunk <= base + per; c += (size_t)nwarps * chunk) {
    uint4 v[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) v[k] = src[c + k * 32 + lane];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) dst[c + k * 32 + lane] = v[k];
  }
}
int main() {
  const size_t bytes = 1ull << 30, n16 = bytes / 16;
  uint4 *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes));
  CK(cudaMemset(b, 0, bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  printf("# %s, 2 CTAs, copy of 1 GiB\n", p.name);
  printf("warps_per_cta,total_warps,GBps,GBps_per_warp\n");
  for (int w : {1, 2, 4, 5, 8, 9, 10, 16, 18, 20}) {
    copyKernel<<<2, w * 32>>>(a, b, n16);  // warm
    CK(cudaEventRecord(e0));
    for (int r = 0; r < 3; ++r) copyKernel<<<2, w * 32>>>(a, b, n16);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    double gbps = 3.0 * bytes / (ms * 1e-3) / 1e9;
    printf("%d,%d,%.2f,%.3f\n", w, 2 * w, gbps, gbps / (2 * w));
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) { printf("error %s\n", cudaGetErrorString(err)); return 1; }
  return 0;
}

// fabricbench-peer: the GPU x GPU bandwidth and latency matrix.
#include "benchmarks/peer/peer_tests_impl.h"

namespace fb::peer {

void PeerBench::matrix() {
  const int n = n_;
  const std::size_t B = matrixBytes_;
  fmt::print("\n## GPU x GPU matrix (row = source/reader GPU i, column = GPU j)\n");
  // P2P capability.
  fmt::print("  P2P access (cudaDeviceCanAccessPeer / perf rank / native atomics / enabled here):\n");
  columnHeader(n);
  for (int i = 0; i < n; ++i) {
    fmt::print("  {:>6}", fmt::format("GPU{}", i));
    for (int j = 0; j < n; ++j) {
      if (i == j) {
        fmt::print(" {:>14}", "-");
        continue;
      }
      int can = 0, rank = 0, atomics = 0;
      cudaDeviceCanAccessPeer(&can, i, j);
      cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, i, j);
      cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, i, j);
      cudaGetLastError();
      fmt::print(" {:>14}", fmt::format("{}/{}/{}/{}", can ? "yes" : "NO", rank, atomics ? "yes" : "no",
                                        peerOk(i, j) ? "on" : "off"));
    }
    fmt::print("\n");
  }
  // Bandwidth: copy engine i -> j (i == j: device-local copy, GB/s one way).
  std::vector<DeviceBuffer> bufs;
  std::vector<DeviceBuffer> dsts;
  for (int d = 0; d < n; ++d) {
    FB_CUDA_CHECK(cudaSetDevice(d));
    bufs.emplace_back(B);
    dsts.emplace_back(B);
    FB_CUDA_CHECK(ipc::fillPattern(kernels::ElemType::kFloat32, bufs.back().get(), B / 4, d, kPatternSeed, gpus_[d].s));
    syncBounded(d, gpus_[d].s);
  }
  fmt::print("  copy-engine bandwidth GB/s, {} per copy (i -> j; wrong elements in brackets when > 0):\n",
             formatSize(B) + "B");
  columnHeader(n);
  for (int i = 0; i < n; ++i) {
    fmt::print("  {:>6}", fmt::format("GPU{}", i));
    for (int j = 0; j < n; ++j) {
      FB_CUDA_CHECK(cudaSetDevice(i));
      cudaStream_t s = gpus_[i].s;
      auto op = [&] { FB_CUDA_CHECK(cudaMemcpyPeerAsync(dsts[j].get(), j, bufs[i].get(), i, B, s)); };
      timeOnStream(s, 1, op);
      double sec = timeOnStream(s, std::max(1, o_.iters / 2), op);
      std::int64_t wrong = countWrongPattern(j, gpus_[j].s, dsts[j].get(), B, i);
      double bw = double(B) * std::max(1, o_.iters / 2) / sec / 1e9;
      fmt::print(" {:>14}", wrong ? fmt::format("{:.1f} [{}]", bw, wrong) : fmt::format("{:.1f}", bw));
      emit("matrix_copy", fmt::format("GPU{}->GPU{} ce", i, j), B, sec / std::max(1, o_.iters / 2),
           std::max(1, o_.iters / 2), wrong);
    }
    fmt::print("\n");
  }
  // Latency: one thread on GPU i following a pointer chain in GPU j's memory.
  fmt::print("  SM load latency ns (one thread on GPU i chasing pointers in GPU j's memory, {} hops):\n",
             o_.latencyHops);
  const std::size_t chainBytes = 64ull << 20, stride = 4096 + 64;
  for (int j = 0; j < n; ++j) {
    FB_CUDA_CHECK(cudaSetDevice(j));
    FB_CUDA_CHECK(kernels::buildPointerChain(bufs[j].get(), std::min(B, chainBytes), stride, gpus_[j].s));
    syncBounded(j, gpus_[j].s);
  }
  columnHeader(n);
  for (int i = 0; i < n; ++i) {
    fmt::print("  {:>6}", fmt::format("GPU{}", i));
    FB_CUDA_CHECK(cudaSetDevice(i));
    DeviceBuffer sink(8);
    for (int j = 0; j < n; ++j) {
      if (i != j && !peerOk(i, j)) {
        fmt::print(" {:>14}", "no P2P");
        continue;
      }
      cudaStream_t s = gpus_[i].s;
      auto op = [&] {
        FB_CUDA_CHECK(kernels::chasePointers(bufs[j].get(), o_.latencyHops,
                                             static_cast<unsigned long long*>(sink.get()), s));
      };
      timeOnStream(s, 1, op);
      double sec = timeOnStream(s, 3, op);
      double ns = sec / 3 / o_.latencyHops * 1e9;
      fmt::print(" {:>14.0f}", ns);
      emit("matrix_latency", fmt::format("GPU{}->GPU{} sm-load", i, j), 8, ns * 1e-9, o_.latencyHops * 3, -1,
           {{"latency_ns", fmt::format("{:.0f}", ns)}});
    }
    fmt::print("\n");
  }
}

}  // namespace fb::peer

// fabricbench-peer: one GPU's tests, host memory copies and the reduce kernel's bandwidth.
#include "benchmarks/peer/peer_tests_impl.h"

namespace fb::peer {

void PeerBench::hostCopies(int d) {
  const std::size_t B = bytes_;
  fmt::print("\n## Pinned host <-> GPU {}, {} per copy\n", d, formatSize(B) + "B");
  fmt::print("  {:<44} {:>12} {:>10} {:>7}\n", "what", "time/copy us", "GB/s", "wrong");
  FB_CUDA_CHECK(cudaSetDevice(d));
  void* h1 = nullptr;
  void* h2 = nullptr;
  FB_CUDA_CHECK(cudaMallocHost(&h1, B));
  FB_CUDA_CHECK(cudaMallocHost(&h2, B));
  DeviceBuffer dev1(B), dev2(B);
  FB_CUDA_CHECK(ipc::fillPattern(kernels::ElemType::kFloat32, dev1.get(), B / 4, 7, kPatternSeed, gpus_[d].s));
  syncBounded(d, gpus_[d].s);
  FB_CUDA_CHECK(cudaMemcpy(h1, dev1.get(), B, cudaMemcpyDeviceToHost));  // host copy of pattern(7)
  cudaStream_t s = gpus_[d].s;
  auto h2d = [&] { FB_CUDA_CHECK(cudaMemcpyAsync(dev2.get(), h1, B, cudaMemcpyHostToDevice, s)); };
  auto d2h = [&] { FB_CUDA_CHECK(cudaMemcpyAsync(h2, dev1.get(), B, cudaMemcpyDeviceToHost, s)); };
  auto report = [&](const std::string& what, const std::string& path, double sec, std::int64_t wrong,
                    std::size_t moved) {
    fmt::print("  {:<44} {:>12.1f} {:>10} {:>7}\n", what, sec / o_.iters * 1e6,
               gbps(double(moved) * o_.iters, sec), wrong);
    emit("host_copy", path, moved, sec / o_.iters, o_.iters, wrong);
  };
  FB_CUDA_CHECK(ipc::fillValue(kernels::ElemType::kFloat32, dev2.get(), B / 4, NAN, s));
  timeOnStream(s, o_.warmup, h2d);
  double sec = timeOnStream(s, o_.iters, h2d);
  report(fmt::format("host -> GPU {} (pinned)", d), fmt::format("host->GPU{} pinned", d), sec,
         countWrongPattern(d, s, dev2.get(), B, 7), B);
  std::memset(h2, 0xff, B);
  timeOnStream(s, o_.warmup, d2h);
  sec = timeOnStream(s, o_.iters, d2h);
  // Verify on the GPU: copy the host result back with cudaMemcpy and count there.
  FB_CUDA_CHECK(cudaMemcpy(dev2.get(), h2, B, cudaMemcpyHostToDevice));
  report(fmt::format("GPU {} -> host (pinned)", d), fmt::format("GPU{}->host pinned", d), sec,
         countWrongPattern(d, s, dev2.get(), B, 7), B);
  // Both directions at once (two streams).
  cudaStream_t s2 = gpus_[d].s2;
  DeviceBuffer dev3(B);
  FB_CUDA_CHECK(ipc::fillValue(kernels::ElemType::kFloat32, dev3.get(), B / 4, NAN, s));
  syncBounded(d, s);
  auto t0 = Clock::now();
  for (int i = 0; i < o_.iters; ++i) {
    FB_CUDA_CHECK(cudaMemcpyAsync(dev3.get(), h1, B, cudaMemcpyHostToDevice, s));
    FB_CUDA_CHECK(cudaMemcpyAsync(h2, dev1.get(), B, cudaMemcpyDeviceToHost, s2));
  }
  syncBounded(d, s);
  syncBounded(d, s2);
  sec = std::chrono::duration<double>(Clock::now() - t0).count();
  report(fmt::format("host <-> GPU {} both ways at once (sum)", d), fmt::format("host<->GPU{} pinned", d), sec,
         countWrongPattern(d, s, dev3.get(), B, 7), 2 * B);
  cudaFreeHost(h1);
  cudaFreeHost(h2);
}

void PeerBench::reduce(int d) {
  const std::size_t B = bytes_;
  fmt::print("\n## Reduce kernel vs device-to-device copy on GPU {}, {} per buffer (GB/s = bytes read + written)\n",
             d, formatSize(B) + "B");
  fmt::print("  {:<44} {:>12} {:>10} {:>7}\n", "what", "time/op us", "GB/s", "wrong");
  FB_CUDA_CHECK(cudaSetDevice(d));
  cudaStream_t s = gpus_[d].s;
  DeviceBuffer x(B), y(B), out(B);
  // D2D copy references: cudaMemcpy (copy engine or driver kernel) and our SM copy kernel.
  FB_CUDA_CHECK(ipc::fillPattern(kernels::ElemType::kFloat32, x.get(), B / 4, 0, kPatternSeed, s));
  auto memcpyOp = [&] { FB_CUDA_CHECK(cudaMemcpyAsync(out.get(), x.get(), B, cudaMemcpyDeviceToDevice, s)); };
  timeOnStream(s, o_.warmup, memcpyOp);
  double secCopy = timeOnStream(s, o_.iters, memcpyOp);
  std::int64_t wrongCopy = countWrongPattern(d, s, out.get(), B, 0);
  // Local copies: cg loads (3335 GB/s on H200 against 3027 with the peer-tuned cs default).
  auto kernelOp = [&] {
    FB_CUDA_CHECK(kernels::copyBytes(out.get(), x.get(), B, s, 0, 1024, 4, kernels::CopyLoad::kCg));
  };
  timeOnStream(s, o_.warmup, kernelOp);
  double secKernel = timeOnStream(s, o_.iters, kernelOp);
  std::int64_t wrongKernel = countWrongPattern(d, s, out.get(), B, 0);
  double copyBw = 2.0 * B * o_.iters / secCopy, kernelBw = 2.0 * B * o_.iters / secKernel;
  fmt::print("  {:<44} {:>12.1f} {:>10.1f} {:>7}\n", "D2D cudaMemcpyAsync (read + write)", secCopy / o_.iters * 1e6,
             copyBw / 1e9, wrongCopy);
  emit("d2d_copy", fmt::format("GPU{} cudaMemcpy", d), 2 * B, secCopy / o_.iters, o_.iters, wrongCopy);
  fmt::print("  {:<44} {:>12.1f} {:>10.1f} {:>7}\n", "D2D copy kernel (read + write)", secKernel / o_.iters * 1e6,
             kernelBw / 1e9, wrongKernel);
  emit("d2d_copy", fmt::format("GPU{} copy kernel", d), 2 * B, secKernel / o_.iters, o_.iters, wrongKernel);
  const double ref = std::max(copyBw, kernelBw);
  for (auto t : {kernels::ElemType::kFloat32, kernels::ElemType::kFloat16, kernels::ElemType::kBFloat16}) {
    std::size_t count = B / kernels::elemSize(t);
    const char* name = t == kernels::ElemType::kFloat32 ? "float32" : t == kernels::ElemType::kFloat16 ? "float16"
                                                                                                       : "bfloat16";
    FB_CUDA_CHECK(ipc::fillPattern(t, x.get(), count, 0, kPatternSeed, s));
    FB_CUDA_CHECK(ipc::fillPattern(t, y.get(), count, 1, kPatternSeed, s));
    FB_CUDA_CHECK(ipc::fillValue(t, out.get(), count, NAN, s));
    const void* ins[2] = {x.get(), y.get()};
    auto op = [&] { FB_CUDA_CHECK(kernels::reduceSum(t, out.get(), ins, 2, count, s)); };
    timeOnStream(s, o_.warmup, op);
    double sec = timeOnStream(s, o_.iters, op);
    // out = pattern(0) + pattern(1) = the 2-rank AllReduce expectation.
    DeviceBuffer counter(8);
    auto* c = static_cast<unsigned long long*>(counter.get());
    FB_CUDA_CHECK(cudaMemsetAsync(c, 0, 8, s));
    ipc::ExpectSpec spec{ipc::Expect::kAllReduce, 2, 0, 0, kPatternSeed, 0};
    FB_CUDA_CHECK(ipc::countWrong(t, out.get(), count, spec, c, s));
    unsigned long long wrong = 0;
    FB_CUDA_CHECK(cudaMemcpyAsync(&wrong, c, 8, cudaMemcpyDeviceToHost, s));
    syncBounded(d, s);
    double bw = 3.0 * B * o_.iters / sec;
    fmt::print("  {:<44} {:>12.1f} {:>10.1f} {:>7}   {:.1f}% of the faster D2D copy\n",
               fmt::format("reduce 2 in -> 1 out, {} (2 reads + 1 write)", name), sec / o_.iters * 1e6, bw / 1e9,
               wrong, 100.0 * bw / ref);
    emit("reduce_kernel", fmt::format("GPU{} reduce 2->1", d), 3 * B, sec / o_.iters, o_.iters,
         static_cast<std::int64_t>(wrong), {{"pct_of_d2d_copy", fmt::format("{:.1f}", 100.0 * bw / ref)}}, name);
  }
}

}  // namespace fb::peer

// fabricbench-peer: copies between two GPUs (copy engine, SM loads/stores, both directions, and
// the bulk-copy unit against the copy engine).
#include "benchmarks/peer/peer_tests_impl.h"

namespace fb::peer {

void PeerBench::peerCopies(int a, int b, bool ce, bool sm, bool bidir) {
  const std::size_t B = bytes_;
  fmt::print("\n## Peer copies GPU {} <-> GPU {}, {} per copy (GB/s = bytes moved one way / time)\n", a, b,
             formatSize(B) + "B");
  fmt::print("  {:<44} {:>12} {:>10} {:>7}\n", "what", "time/copy us", "GB/s", "wrong");
  // Buffers: src/dst on each GPU; sources hold pattern(gpu).
  FB_CUDA_CHECK(cudaSetDevice(a));
  DeviceBuffer srcA(B), dstA(B);
  FB_CUDA_CHECK(ipc::fillPattern(kernels::ElemType::kFloat32, srcA.get(), B / 4, a, kPatternSeed, gpus_[a].s));
  FB_CUDA_CHECK(cudaSetDevice(b));
  DeviceBuffer srcB(B), dstB(B);
  FB_CUDA_CHECK(ipc::fillPattern(kernels::ElemType::kFloat32, srcB.get(), B / 4, b, kPatternSeed, gpus_[b].s));
  syncBounded(a, gpus_[a].s);
  syncBounded(b, gpus_[b].s);
  auto poison = [&](int dev, void* p) {
    FB_CUDA_CHECK(cudaSetDevice(dev));
    FB_CUDA_CHECK(ipc::fillValue(kernels::ElemType::kFloat32, p, B / 4, NAN, gpus_[dev].s));
    syncBounded(dev, gpus_[dev].s);
  };
  auto row = [&](const std::string& what, const std::string& coll, const std::string& path, double sec, int iters,
                 std::int64_t wrong, std::size_t movedPerIter) {
    fmt::print("  {:<44} {:>12.1f} {:>10} {:>7}\n", what, sec / iters * 1e6, gbps(double(movedPerIter) * iters, sec),
               wrong);
    emit(coll, path, movedPerIter, sec / iters, iters, wrong);
  };
  auto one = [&](int from, int to, const void* src, void* dst, const std::string& how) {
    int drive = how == "sm-read" ? to : from;  // who runs the copy
    cudaStream_t s = gpus_[drive].s;
    poison(to, dst);
    FB_CUDA_CHECK(cudaSetDevice(drive));
    auto op = [&] {
      if (how == "ce") FB_CUDA_CHECK(cudaMemcpyPeerAsync(dst, to, src, from, B, s));
      else FB_CUDA_CHECK(kernels::copyBytes(dst, src, B, s));
    };
    timeOnStream(s, o_.warmup, op);
    double sec = timeOnStream(s, o_.iters, op);
    std::int64_t wrong = countWrongPattern(to, gpus_[to].s, dst, B, from);
    std::string label = fmt::format("GPU{}->GPU{} {}", from, to, how);
    std::string what = how == "ce" ? "copy engine" : how == "sm-write" ? "SM copy, kernel on source writes"
                                                                        : "SM copy, kernel on destination reads";
    row(fmt::format("{} -> {} {}", from, to, what), "peer_copy", label, sec, o_.iters, wrong, B);
    return B * static_cast<double>(o_.iters) / sec;
  };
  double ceAB = 0, ceBA = 0, smBest = 0;
  if (ce) {
    ceAB = one(a, b, srcA.get(), dstB.get(), "ce");
    ceBA = one(b, a, srcB.get(), dstA.get(), "ce");
  }
  if (sm) {
    smBest = std::max(smBest, one(a, b, srcA.get(), dstB.get(), "sm-write"));
    smBest = std::max(smBest, one(a, b, srcA.get(), dstB.get(), "sm-read"));
    smBest = std::max(smBest, one(b, a, srcB.get(), dstA.get(), "sm-write"));
    smBest = std::max(smBest, one(b, a, srcB.get(), dstA.get(), "sm-read"));
  }
  if (bidir) {
    for (std::string how : {"ce", "sm-write"}) {
      poison(a, dstA.get());
      poison(b, dstB.get());
      auto opA = [&] {
        FB_CUDA_CHECK(cudaSetDevice(a));
        if (how == "ce") FB_CUDA_CHECK(cudaMemcpyPeerAsync(dstB.get(), b, srcA.get(), a, B, gpus_[a].s));
        else FB_CUDA_CHECK(kernels::copyBytes(dstB.get(), srcA.get(), B, gpus_[a].s));
      };
      auto opB = [&] {
        FB_CUDA_CHECK(cudaSetDevice(b));
        if (how == "ce") FB_CUDA_CHECK(cudaMemcpyPeerAsync(dstA.get(), a, srcB.get(), b, B, gpus_[b].s));
        else FB_CUDA_CHECK(kernels::copyBytes(dstA.get(), srcB.get(), B, gpus_[b].s));
      };
      for (int i = 0; i < o_.warmup; ++i) {
        opA();
        opB();
      }
      syncBounded(a, gpus_[a].s);
      syncBounded(b, gpus_[b].s);
      auto t0 = Clock::now();
      for (int i = 0; i < o_.iters; ++i) {
        opA();
        opB();
      }
      syncBounded(a, gpus_[a].s);
      syncBounded(b, gpus_[b].s);
      double sec = std::chrono::duration<double>(Clock::now() - t0).count();
      std::int64_t wrong = countWrongPattern(b, gpus_[b].s, dstB.get(), B, a) +
                           countWrongPattern(a, gpus_[a].s, dstA.get(), B, b);
      row(fmt::format("{} <-> {} both ways at once, {} (sum)", a, b, how == "ce" ? "copy engine" : "SM writes"),
          "peer_copy_bidir", fmt::format("GPU{}<->GPU{} {}", a, b, how), sec, o_.iters, wrong, 2 * B);
    }
  }
  std::string bestCfg = "default launch (2 blocks per SM x 1024 threads, unroll 4, cs loads)";
  if (sm && o_.smSweep) {
    // Launch shapes and load forms for the SM copy, one direction (a -> b), read and write.
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, a);
    const std::pair<kernels::CopyLoad, const char*> loads[] = {
        {kernels::CopyLoad::kCg, "cg"},
        {kernels::CopyLoad::kCgPrefetch256, "cg+L2::256B"},
        {kernels::CopyLoad::kNoAllocPrefetch256, "nc+no_allocate+L2::256B"},
        {kernels::CopyLoad::kStreaming, "cs"},
        {kernels::CopyLoad::kStreamingLoadStore, "cs+st.cs"}};
    fmt::print("  SM copy launch sweep, {} -> {} (GB/s):\n  {:>24} {:>7} {:>8} {:>7} {:>10} {:>10}\n", a, b, "load",
               "blocks", "threads", "unroll", "sm-write", "sm-read");
    for (const auto& [load, loadName] : loads)
      for (int mult : {1, 2, 4})
        for (int threads : {512, 1024})
          for (int unroll : {4, 8, 16}) {
            if (unroll * threads > 8192) continue;  // 16 loads x 1024 threads: not enough registers
            int blocks = sms * mult;
            double bw[2];
            for (int k = 0; k < 2; ++k) {
              int drive = k == 0 ? a : b;
              cudaStream_t s = gpus_[drive].s;
              FB_CUDA_CHECK(cudaSetDevice(drive));
              poison(b, dstB.get());
              FB_CUDA_CHECK(cudaSetDevice(drive));
              auto op = [&] {
                FB_CUDA_CHECK(kernels::copyBytes(dstB.get(), srcA.get(), B, s, blocks, threads, unroll, load));
              };
              timeOnStream(s, 1, op);
              double sec = timeOnStream(s, o_.iters, op);
              bw[k] = B * static_cast<double>(o_.iters) / sec;
              std::int64_t wrong = countWrongPattern(b, gpus_[b].s, dstB.get(), B, a);
              emit("peer_copy_sweep", fmt::format("GPU{}->GPU{} {}", a, b, k == 0 ? "sm-write" : "sm-read"), B,
                   sec / o_.iters, o_.iters, wrong,
                   {{"load", loadName},
                    {"blocks", std::to_string(blocks)},
                    {"threads", std::to_string(threads)},
                    {"unroll", std::to_string(unroll)}});
              if (wrong == 0 && bw[k] > smBest) {
                smBest = bw[k];
                bestCfg = fmt::format("{} ({} loads, {} blocks x {} threads, unroll {})",
                                      k == 0 ? "sm-write" : "sm-read", loadName, blocks, threads, unroll);
              }
            }
            fmt::print("  {:>24} {:>7} {:>8} {:>7} {:>10.1f} {:>10.1f}\n", loadName, blocks, threads, unroll,
                       bw[0] / 1e9, bw[1] / 1e9);
          }
  }
  if (ce && sm)
    fmt::print("  => best SM copy {:.1f} GB/s = {:.1f}% of the copy engine (mean of both directions: {:.1f} GB/s); "
               "best: {}\n",
               smBest / 1e9, 100.0 * smBest / ((ceAB + ceBA) / 2), (ceAB + ceBA) / 2 / 1e9, bestCfg);
}

void PeerBench::bulkCopies(int a, int b) {
  const std::size_t B = bytes_;
  fmt::print("\n## Peer copies through the SM bulk-copy unit (cp.async.bulk), {} -> {}, {} per copy\n", a, b,
             formatSize(B) + "B");
  FB_CUDA_CHECK(cudaSetDevice(a));
  DeviceBuffer srcA(B);
  FB_CUDA_CHECK(ipc::fillPattern(kernels::ElemType::kFloat32, srcA.get(), B / 4, a, kPatternSeed, gpus_[a].s));
  syncBounded(a, gpus_[a].s);
  FB_CUDA_CHECK(cudaSetDevice(b));
  DeviceBuffer dstB(B);
  auto op = [&] { FB_CUDA_CHECK(cudaMemcpyPeerAsync(dstB.get(), b, srcA.get(), a, B, gpus_[a].s)); };
  FB_CUDA_CHECK(cudaSetDevice(a));
  timeOnStream(gpus_[a].s, o_.warmup, op);
  double ceSec = timeOnStream(gpus_[a].s, o_.iters, op);
  double ce = B * static_cast<double>(o_.iters) / ceSec;
  fmt::print("  copy engine {} -> {}: {:.1f} GB/s (reference for this table)\n", a, b, ce / 1e9);
  fmt::print("  {:>7} {:>9} {:>7} {:>12} {:>12} {:>7}\n", "blocks", "chunk", "stages", "bulk-write", "bulk-read",
             "wrong");
  double best = 0;
  std::string bestCfg;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, a);
  for (int mult : {1, 2})
    for (int chunk : {16 << 10, 32 << 10})
      for (int stages : {2, 4}) {
        double bw[2];
        std::int64_t wrongSum = 0;
        for (int k = 0; k < 2; ++k) {
          int drive = k == 0 ? a : b;
          cudaStream_t s = gpus_[drive].s;
          FB_CUDA_CHECK(cudaSetDevice(b));
          FB_CUDA_CHECK(ipc::fillValue(kernels::ElemType::kFloat32, dstB.get(), B / 4, NAN, gpus_[b].s));
          syncBounded(b, gpus_[b].s);
          FB_CUDA_CHECK(cudaSetDevice(drive));
          DeviceBuffer failed(sizeof(int));
          FB_CUDA_CHECK(cudaMemset(failed.get(), 0, sizeof(int)));
          auto bop = [&] {
            FB_CUDA_CHECK(kernels::bulkCopyBytes(dstB.get(), srcA.get(), B, s, sms * mult, chunk, stages,
                                                 static_cast<int*>(failed.get())));
          };
          timeOnStream(s, 1, bop);
          double sec = timeOnStream(s, o_.iters, bop);
          int f = 0;
          FB_CUDA_CHECK(cudaMemcpy(&f, failed.get(), sizeof(int), cudaMemcpyDeviceToHost));
          if (f) FB_THROW(Error, "bulk copy kernel reported failure ", f, " (stage did not arrive in time)");
          bw[k] = B * static_cast<double>(o_.iters) / sec;
          std::int64_t wrong = countWrongPattern(b, gpus_[b].s, dstB.get(), B, a);
          wrongSum += wrong;
          emit("peer_copy_bulk", fmt::format("GPU{}->GPU{} {}", a, b, k == 0 ? "bulk-write" : "bulk-read"), B,
               sec / o_.iters, o_.iters, wrong,
               {{"blocks", std::to_string(sms * mult)}, {"chunk", std::to_string(chunk)},
                {"stages", std::to_string(stages)}, {"pct_of_ce", fmt::format("{:.1f}", 100.0 * bw[k] / ce)}});
          if (bw[k] > best) {
            best = bw[k];
            bestCfg = fmt::format("{} ({} blocks, {} B chunks, {} stages)", k == 0 ? "bulk-write" : "bulk-read",
                                  sms * mult, chunk, stages);
          }
        }
        fmt::print("  {:>7} {:>9} {:>7} {:>12.1f} {:>12.1f} {:>7}\n", sms * mult, chunk, stages, bw[0] / 1e9,
                   bw[1] / 1e9, wrongSum);
      }
  fmt::print("  => best bulk SM copy {:.1f} GB/s = {:.1f}% of the copy engine; best: {}\n", best / 1e9,
             100.0 * best / ce, bestCfg);
}

}  // namespace fb::peer

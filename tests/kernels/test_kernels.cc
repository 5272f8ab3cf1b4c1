// GPU kernels (kernels/reduce.cu, kernels/copy.cu) against host references: odd sizes,
// unaligned offsets, every dtype, and the bounded spins. Exits 77 with the reason when no GPU
// is visible.
#include <catch2/catch.hpp>

#include "catch_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "collectives/spec.h"
#include "core/dtype.h"
#include "kernels/copy.h"
#include "kernels/fill_verify.h"
#include "kernels/reduce.h"

namespace {

using fb::DataType;
using fb::kernels::ElemType;
namespace ipc = fb::kernels::ipc;

#define CUDA_OK(expr) REQUIRE((expr) == cudaSuccess)

DataType toDataType(ElemType t) {
  return t == ElemType::kFloat32 ? DataType::kFloat32 : t == ElemType::kFloat16 ? DataType::kFloat16
                                                                                : DataType::kBFloat16;
}

// Round a float to the element type (host side, round to nearest even), as the kernels do.
float roundTo(ElemType t, float v) {
  if (t == ElemType::kFloat16) return fb::halfToFloat(fb::floatToHalf(v));
  if (t == ElemType::kBFloat16) return fb::bf16ToFloat(fb::floatToBf16(v));
  return v;
}

struct Dev {
  void* p = nullptr;
  explicit Dev(std::size_t bytes) { REQUIRE(cudaMalloc(&p, bytes ? bytes : 1) == cudaSuccess); }
  ~Dev() { cudaFree(p); }
  char* c() const { return static_cast<char*>(p); }
};

// Host values that exercise rounding: not small integers.
double hostValue(int input, std::size_t i) {
  return std::fmod(static_cast<double>(i) * 0.3721 + input * 1.618, 17.0) - 8.5;
}

}  // namespace

TEST_CASE("reduceSum matches the host reference for odd sizes, unaligned offsets, 1..8 inputs") {
  const std::vector<std::size_t> counts = {1, 3, 7, 63, 64, 65, 1000, 4097, (1u << 20) + 5};
  struct Off { std::size_t out, a, b; };
  const std::vector<Off> offsets = {{0, 0, 0}, {1, 1, 1}, {0, 1, 2}, {3, 0, 1}, {8, 8, 8}};
  const std::vector<int> inputCounts = {1, 2, 3, 8};
  for (ElemType t : {ElemType::kFloat32, ElemType::kFloat16, ElemType::kBFloat16}) {
    const std::size_t es = fb::kernels::elemSize(t);
    const DataType dt = toDataType(t);
    for (std::size_t count : counts) {
      for (const Off& off : offsets) {
        for (int nIn : inputCounts) {
          const std::size_t pad = 16;
          std::vector<Dev*> ins;
          std::vector<std::vector<unsigned char>> hostIn(nIn, std::vector<unsigned char>((count + pad) * es));
          std::vector<const void*> ptrs;
          for (int k = 0; k < nIn; ++k) {
            std::size_t o = k == 0 ? off.a : off.b + (k > 1 ? k % 3 : 0);
            for (std::size_t i = 0; i < count; ++i) fb::storeElement(hostIn[k].data() + o * es, dt, i, hostValue(k, i));
            ins.push_back(new Dev((count + pad) * es));
            CUDA_OK(cudaMemcpy(ins.back()->p, hostIn[k].data(), (count + pad) * es, cudaMemcpyHostToDevice));
            ptrs.push_back(ins.back()->c() + o * es);
          }
          Dev out((count + pad) * es);
          CUDA_OK(cudaMemset(out.p, 0x7f, (count + pad) * es));  // guard bytes
          CUDA_OK(fb::kernels::reduceSum(t, out.c() + off.out * es, ptrs.data(), nIn, count, nullptr));
          CUDA_OK(cudaDeviceSynchronize());
          std::vector<unsigned char> got((count + pad) * es);
          CUDA_OK(cudaMemcpy(got.data(), out.p, got.size(), cudaMemcpyDeviceToHost));
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < count; ++i) {
            float expect = static_cast<float>(fb::loadElement(hostIn[0].data() + off.a * es, dt, i));
            for (int k = 1; k < nIn; ++k) {
              std::size_t o = off.b + (k > 1 ? k % 3 : 0);
              expect = roundTo(t, expect + static_cast<float>(fb::loadElement(hostIn[k].data() + o * es, dt, i)));
            }
            double g = fb::loadElement(got.data() + off.out * es, dt, i);
            if (g != static_cast<double>(roundTo(t, expect))) ++wrong;
          }
          // Nothing written outside [off.out, off.out + count).
          std::size_t guard = 0;
          for (std::size_t b = 0; b < off.out * es; ++b) guard += got[b] != 0x7f;
          for (std::size_t b = (off.out + count) * es; b < got.size(); ++b) guard += got[b] != 0x7f;
          INFO("type " << static_cast<int>(t) << " count " << count << " offsets " << off.out << "/" << off.a << "/"
                       << off.b << " inputs " << nIn);
          CHECK(wrong == 0);
          CHECK(guard == 0);
          for (auto* d : ins) delete d;
        }
      }
    }
  }
}

TEST_CASE("copyBytes copies exactly, any size and alignment") {
  const std::vector<std::size_t> sizes = {1, 15, 16, 17, 63, 64, 100, 4099, (1u << 20) + 3};
  const std::vector<std::pair<std::size_t, std::size_t>> offs = {{0, 0}, {1, 1}, {3, 5}, {15, 0}, {0, 7}};
  using fb::kernels::CopyLoad;
  for (CopyLoad load : {CopyLoad::kCg, CopyLoad::kCgPrefetch256, CopyLoad::kNoAllocPrefetch256, CopyLoad::kStreaming,
                        CopyLoad::kStreamingLoadStore})
  for (int unroll : {4, 8, 16})
  for (std::size_t n : sizes) {
    for (auto [od, os] : offs) {
      std::vector<unsigned char> src(n + 32), got(n + 32);
      for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
      Dev s(n + 32), d(n + 32);
      CUDA_OK(cudaMemcpy(s.p, src.data(), src.size(), cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemset(d.p, 0xa5, n + 32));
      CUDA_OK(fb::kernels::copyBytes(d.c() + od, s.c() + os, n, nullptr, 0, 256, unroll, load));
      CUDA_OK(cudaDeviceSynchronize());
      CUDA_OK(cudaMemcpy(got.data(), d.p, got.size(), cudaMemcpyDeviceToHost));
      std::size_t wrong = 0, guard = 0;
      for (std::size_t i = 0; i < n; ++i) wrong += got[od + i] != src[os + i];
      for (std::size_t i = 0; i < od; ++i) guard += got[i] != 0xa5;
      for (std::size_t i = od + n; i < got.size(); ++i) guard += got[i] != 0xa5;
      INFO("bytes " << n << " dst+" << od << " src+" << os << " load form " << static_cast<int>(load) << " unroll "
                    << unroll);
      CHECK(wrong == 0);
      CHECK(guard == 0);
    }
  }
}

TEST_CASE("fillPattern reproduces fb::patternValue for every dtype") {
  for (ElemType t : {ElemType::kFloat32, ElemType::kFloat16, ElemType::kBFloat16}) {
    const std::size_t es = fb::kernels::elemSize(t);
    for (std::size_t count : {std::size_t{1}, std::size_t{9}, std::size_t{1001}, std::size_t{65537}}) {
      for (int rank : {0, 3, 7}) {
        for (int seed : {0, 1, 5, -2}) {
          Dev d(count * es + es);
          // Start one element in (not 16-byte aligned).
          CUDA_OK(ipc::fillPattern(t, d.c() + es, count, rank, seed, nullptr));
          CUDA_OK(cudaDeviceSynchronize());
          std::vector<unsigned char> got(count * es);
          CUDA_OK(cudaMemcpy(got.data(), d.c() + es, got.size(), cudaMemcpyDeviceToHost));
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < count; ++i)
            wrong += fb::loadElement(got.data(), toDataType(t), i) != fb::patternValue(rank, i, seed);
          INFO("type " << static_cast<int>(t) << " count " << count << " rank " << rank << " seed " << seed);
          CHECK(wrong == 0);
        }
      }
    }
  }
}

TEST_CASE("countWrong (kernels/fill_verify, the descriptors' rules) agrees with the host countWrong") {
  for (ElemType t : {ElemType::kFloat32, ElemType::kFloat16, ElemType::kBFloat16}) {
    const DataType dt = toDataType(t);
    const std::size_t es = fb::kernels::elemSize(t);
    for (fb::CollKind kind : fb::allCollKinds()) {
      for (int n : {1, 2, 3, 8}) {
        for (int rank : {0, n - 1}) {
          fb::CollShape shape = fb::makeShape(kind, dt, 1000 * es * n + 6 * es, n, false);
          const int seed = 4;
          std::vector<unsigned char> host(shape.recvCount * es);
          for (std::size_t j = 0; j < shape.recvCount; ++j)
            fb::storeElement(host.data(), dt, j, fb::expectedValue(shape, rank, j, seed));
          // Inject errors: first, last and one in the middle; one NaN.
          std::vector<std::size_t> bad = {0, shape.recvCount / 2, shape.recvCount - 1};
          for (std::size_t j : bad) fb::storeElement(host.data(), dt, j, fb::expectedValue(shape, rank, j, seed) + 1);
          fb::storeElement(host.data(), dt, 1, std::nan(""));
          const std::int64_t hostWrong = fb::countWrong(shape, host.data(), rank, seed);
          Dev d(host.size());
          CUDA_OK(cudaMemcpy(d.p, host.data(), host.size(), cudaMemcpyHostToDevice));
          Dev c(8);
          CUDA_OK(cudaMemset(c.p, 0, 8));
          CUDA_OK(fb::kernels::countWrong(d.p, fb::verifySpec(shape, rank, seed), static_cast<unsigned long long*>(c.p),
                                          nullptr));
          unsigned long long gpuWrong = 0;
          CUDA_OK(cudaMemcpy(&gpuWrong, c.p, 8, cudaMemcpyDeviceToHost));
          INFO("type " << static_cast<int>(t) << " kind " << fb::collName(kind) << " n " << n << " rank " << rank);
          CHECK(hostWrong == 4);
          CHECK(static_cast<std::int64_t>(gpuWrong) == hostWrong);
        }
      }
    }
  }
}

TEST_CASE("ring program without peers runs its steps in order (local reduce, copy, second copy)") {
  const std::size_t count = 12345;
  for (ElemType t : {ElemType::kFloat32, ElemType::kFloat16, ElemType::kBFloat16}) {
    const std::size_t es = fb::kernels::elemSize(t);
    // x holds the step-0 result at an offset of 2 elements (unaligned), then a guard of 2 elements
    // that no step may write (compute-sanitizer memcheck found the old size, count * es + 4, 4 bytes short).
    const std::size_t xBytes = (count + 4) * es, guardAt = (count + 2) * es;
    Dev a(count * es), b(count * es), x(xBytes), y(count * es), sync(8 * ipc::kMaxBlocks);
    CUDA_OK(cudaMemset(sync.p, 0, 8 * ipc::kMaxBlocks));
    CUDA_OK(cudaMemset(x.p, 0xAB, xBytes));
    CUDA_OK(ipc::fillPattern(t, a.p, count, 0, 1, nullptr));
    CUDA_OK(ipc::fillPattern(t, b.p, count, 1, 1, nullptr));
    ipc::RingProgram p{};
    p.type = t;
    p.counters = static_cast<unsigned long long*>(sync.p);
    // step 0: x(+2 elements, unaligned) = a + b; step 1: y = x, plus a second copy a -> b.
    p.steps[0] = ipc::RingStep{x.c() + 2 * es, a.p, b.p, count, nullptr, nullptr, 0};
    p.steps[1] = ipc::RingStep{y.p, x.c() + 2 * es, nullptr, count, b.p, a.p, count};
    p.nSteps = 2;
    for (int blocks : {1, 7, 64}) {
      CUDA_OK(ipc::launchRing(p, blocks, 256, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
    }
    Dev c(16);
    CUDA_OK(cudaMemset(c.p, 0, 16));
    auto* cnt = static_cast<unsigned long long*>(c.p);
    ipc::ExpectSpec sum{ipc::Expect::kAllReduce, 2, 0, 0, 1, 0};
    ipc::ExpectSpec pat0{ipc::Expect::kPattern, 1, 0, 0, 1, 0};
    // After the first launch b == a, so later sums are 2a; check the final copy semantics:
    // y = a + b(at that launch) = 2 * pattern(0) for launches 2 and 3. Check b == a instead and y == 2a.
    CUDA_OK(ipc::countWrong(t, b.p, count, pat0, cnt, nullptr));
    unsigned long long w = 0;
    CUDA_OK(cudaMemcpy(&w, cnt, 8, cudaMemcpyDeviceToHost));
    CHECK(w == 0);
    // y must equal 2 * pattern(0): compare with a reduce of a + a on the side.
    Dev ref(count * es);
    const void* ins[2] = {a.p, a.p};
    CUDA_OK(fb::kernels::reduceSum(t, ref.p, ins, 2, count, nullptr));
    std::vector<unsigned char> hy(count * es), hr(count * es);
    CUDA_OK(cudaMemcpy(hy.data(), y.p, hy.size(), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(hr.data(), ref.p, hr.size(), cudaMemcpyDeviceToHost));
    CHECK(std::memcmp(hy.data(), hr.data(), hy.size()) == 0);
    std::vector<unsigned char> guard(xBytes - guardAt);
    CUDA_OK(cudaMemcpy(guard.data(), x.c() + guardAt, guard.size(), cudaMemcpyDeviceToHost));
    CHECK(std::count(guard.begin(), guard.end(), 0xAB) == static_cast<std::ptrdiff_t>(guard.size()));
    (void)sum;
    // Counters advanced by 2 steps per launch for the blocks that ran (block 0 ran 3 times).
    unsigned long long c0 = 0;
    CUDA_OK(cudaMemcpy(&c0, sync.p, 8, cudaMemcpyDeviceToHost));
    CHECK(c0 == 6);
  }
}

TEST_CASE("a ring kernel whose peer never signals gives up at its time-out and says so") {
  Dev sync(8 * 4 * ipc::kMaxBlocks), a(4096), b(4096);
  CUDA_OK(cudaMemset(sync.p, 0, 8 * 4 * ipc::kMaxBlocks));
  auto* words = static_cast<unsigned long long*>(sync.p);
  ipc::KernelStatus* status = nullptr;
  ipc::KernelStatus* statusDev = nullptr;
  CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&status), sizeof(*status), cudaHostAllocMapped));
  CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&statusDev), status, 0));
  std::memset(status, 0, sizeof(*status));
  ipc::RingProgram p{};
  p.type = ElemType::kFloat32;
  p.nSteps = 1;
  p.steps[0] = ipc::RingStep{a.p, b.p, nullptr, 1024, nullptr, nullptr, 0};
  p.counters = words;
  p.fromLeft = words + ipc::kMaxBlocks;
  p.fromRight = words + 2 * ipc::kMaxBlocks;
  p.toLeft = words + 3 * ipc::kMaxBlocks;  // a sink nobody reads
  p.toRight = words + 3 * ipc::kMaxBlocks;
  p.leftRank = 5;
  p.rightRank = 6;
  p.status = statusDev;
  p.timeoutNs = 50'000'000;  // 50 ms
  // Counter 1 means "step 1 next": needs fromLeft >= 1, which never comes.
  const unsigned long long one = 1;
  CUDA_OK(cudaMemcpy(words, &one, 8, cudaMemcpyHostToDevice));
  auto t0 = std::chrono::steady_clock::now();
  CUDA_OK(ipc::launchRing(p, 1, 128, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(status->code == 1);
  CHECK(status->peer == 5);
  CHECK(status->step == 1);
  CHECK(ms >= 45);
  CHECK(ms < 5000);
  cudaFreeHost(status);
}

TEST_CASE("spinUntil gives up at its time-out; returns at once when the flag is set") {
  Dev flag(8), out(8);
  CUDA_OK(cudaMemset(flag.p, 0, 8));
  CUDA_OK(cudaMemset(out.p, 0, 8));
  CUDA_OK(fb::kernels::spinUntil(static_cast<unsigned long long*>(flag.p), 1, 20'000'000,
                                 static_cast<int*>(out.p), nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  int timedOut = 0;
  CUDA_OK(cudaMemcpy(&timedOut, out.p, 4, cudaMemcpyDeviceToHost));
  CHECK(timedOut == 1);
  const unsigned long long one = 1;
  CUDA_OK(cudaMemcpy(flag.p, &one, 8, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(out.p, 0, 8));
  CUDA_OK(fb::kernels::spinUntil(static_cast<unsigned long long*>(flag.p), 1, 20'000'000'000ull,
                                 static_cast<int*>(out.p), nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(&timedOut, out.p, 4, cudaMemcpyDeviceToHost));
  CHECK(timedOut == 0);
}

TEST_CASE("pointer chase follows the chain") {
  const std::size_t bytes = 1 << 20, stride = 4096;
  Dev buf(bytes), sink(8);
  CUDA_OK(fb::kernels::buildPointerChain(buf.p, bytes, stride, nullptr));
  const int hops = 1000;  // 256 nodes: ends at node hops % 256
  CUDA_OK(fb::kernels::chasePointers(buf.p, hops, static_cast<unsigned long long*>(sink.p), nullptr));
  unsigned long long end = 0;
  CUDA_OK(cudaMemcpy(&end, sink.p, 8, cudaMemcpyDeviceToHost));
  CHECK(end == reinterpret_cast<unsigned long long>(buf.c() + (hops % (bytes / stride)) * stride));
}

int main(int argc, char** argv) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    const char* vis = std::getenv("CUDA_VISIBLE_DEVICES");
    std::printf("SKIP: no CUDA GPU visible (%s; CUDA_VISIBLE_DEVICES=%s): GPU kernel tests run on the GPU host\n",
                e == cudaSuccess ? "0 devices" : cudaGetErrorString(e), vis ? vis : "(unset)");
    return 77;
  }
  return fb::test::runCatchSession(argc, argv);
}

// fabricbench-peer's tests: the run (which tests on which GPUs), the rows and their nominal
// rates, the P2P sanity check; the tests themselves in peer_copies.cc, peer_single.cc and
// peer_matrix.cc.
#include "benchmarks/peer/peer_tests.h"
#include "benchmarks/peer/peer_tests_impl.h"

namespace fb::peer {

std::string gbps(double bytes, double sec) { return sec > 0 ? fmt::format("{:.1f}", bytes / sec / 1e9) : "-"; }

double timeOnStream(cudaStream_t s, int iters, const std::function<void()>& fn) {
  cudaEvent_t a, b;
  FB_CUDA_CHECK(cudaEventCreate(&a));
  FB_CUDA_CHECK(cudaEventCreate(&b));
  FB_CUDA_CHECK(cudaEventRecord(a, s));
  for (int i = 0; i < iters; ++i) fn();
  FB_CUDA_CHECK(cudaEventRecord(b, s));
  if (!cudaipc::waitEvent(b, Deadline::in(std::chrono::seconds(120))))
    FB_THROW(TimeoutError, "a timed batch did not finish within 120 s");
  float ms = 0;
  FB_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms * 1e-3;
}

void syncBounded(int dev, cudaStream_t s) {
  FB_CUDA_CHECK(cudaSetDevice(dev));
  if (!cudaipc::waitStream(s, Deadline::in(std::chrono::seconds(120))))
    FB_THROW(TimeoutError, "GPU ", dev, " did not finish within 120 s");
}

std::int64_t countWrongPattern(int dev, cudaStream_t s, const void* buf, std::size_t bytes, int srcTag) {
  FB_CUDA_CHECK(cudaSetDevice(dev));
  DeviceBuffer counter(sizeof(unsigned long long));
  auto* c = static_cast<unsigned long long*>(counter.get());
  FB_CUDA_CHECK(cudaMemsetAsync(c, 0, sizeof(*c), s));
  ipc::ExpectSpec spec{ipc::Expect::kPattern, 1, 0, srcTag, kPatternSeed, 0};
  FB_CUDA_CHECK(ipc::countWrong(kernels::ElemType::kFloat32, buf, bytes / 4, spec, c, s));
  unsigned long long host = 0;
  FB_CUDA_CHECK(cudaMemcpyAsync(&host, c, sizeof(host), cudaMemcpyDeviceToHost, s));
  syncBounded(dev, s);
  return static_cast<std::int64_t>(host);
}

int PeerBench::run() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    cudaGetLastError();
    fmt::print(stderr, "fabricbench-peer: no CUDA GPU visible ({}; CUDA_VISIBLE_DEVICES={})\n",
               e == cudaSuccess ? "0 devices" : cudaGetErrorString(e), cudaipc::visibleDevicesEnv());
    return kExitNoGpu;
  }
  n_ = n;
  // --gpus and the sizes were checked before the result folder was made (realMain).
  bytes_ = parseSize(o_.size);
  matrixBytes_ = parseSize(o_.matrixSize);

  fmt::print("# fabricbench-peer: {} GPU(s) visible (CUDA_VISIBLE_DEVICES={}); GB = 1e9 bytes; times are CUDA "
             "events over {} iterations after {} warm-up\n",
             n, cudaipc::visibleDevicesEnv(), o_.iters, o_.warmup);
  for (int d = 0; d < n; ++d) fmt::print("#   GPU {}: {} {}\n", d, cudaipc::deviceName(d), cudaipc::pciBusId(d));
  gpus_.resize(n);
  for (int d = 0; d < n; ++d) {
    FB_CUDA_CHECK(cudaSetDevice(d));
    gpus_[d].dev = d;
    FB_CUDA_CHECK(cudaStreamCreateWithFlags(&gpus_[d].s, cudaStreamNonBlocking));
    FB_CUDA_CHECK(cudaStreamCreateWithFlags(&gpus_[d].s2, cudaStreamNonBlocking));
  }
  // Peer access, unless the user wants to see the sanity check flag it.
  if (!o_.noPeerAccess) {
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) {
        if (a == b) continue;
        int can = 0;
        FB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
        if (!can) continue;
        FB_CUDA_CHECK(cudaSetDevice(a));
        cudaError_t pe = cudaDeviceEnablePeerAccess(b, 0);
        if (pe != cudaSuccess && pe != cudaErrorPeerAccessAlreadyEnabled)
          fmt::print("# warning: cudaDeviceEnablePeerAccess({} -> {}): {}\n", a, b, cudaGetErrorString(pe));
        cudaGetLastError();
      }
  }
  auto want = [&](const char* t) { return std::find(o_.tests.begin(), o_.tests.end(), t) != o_.tests.end(); };
  bool pair = o_.gpus.size() == 2 && o_.gpus[0] != o_.gpus[1] && n >= 2;
  if (want("sanity")) sanity();
  if (pair && (want("ce") || want("sm") || want("bidir"))) {
    if (!peerOk(o_.gpus[0], o_.gpus[1]) || !peerOk(o_.gpus[1], o_.gpus[0]))
      fmt::print("# peer copies skipped: GPUs {} and {} cannot use P2P in this process (see the sanity check)\n",
                 o_.gpus[0], o_.gpus[1]);
    else
      peerCopies(o_.gpus[0], o_.gpus[1], want("ce"), want("sm"), want("bidir"));
  } else if (want("ce") || want("sm") || want("bidir")) {
    fmt::print("# peer copies skipped: they need two distinct GPUs (--gpus a,b; {} visible)\n", n);
  }
  if (want("bulk")) {
    if (pair && peerOk(o_.gpus[0], o_.gpus[1]) && peerOk(o_.gpus[1], o_.gpus[0]))
      bulkCopies(o_.gpus[0], o_.gpus[1]);
    else
      fmt::print("# bulk copies skipped: they need two GPUs with P2P (--gpus a,b)\n");
  }
  if (want("host")) hostCopies(o_.gpus[0]);
  if (want("reduce")) reduce(o_.gpus[0]);
  if (want("matrix")) matrix();
  return 0;
}

std::string PeerBench::busOf(int dev) {
  char bus[64] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), dev) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  return bus;
}

void PeerBench::addNominal(Sample& s) {
  if (s.coll == "matrix_latency") return;
  static const std::regex kPair(R"(GPU(\d+)<?->GPU(\d+))"), kOne(R"(GPU(\d+))");
  std::smatch m;
  topo::LinkNominal n;
  if (std::regex_search(s.path, m, kPair)) {
    n = topo::gpuPeerNominal(topo::localTopology(), busOf(std::stoi(m[1])), {busOf(std::stoi(m[2]))});
  } else if (s.coll == "host_copy" && std::regex_search(s.path, m, kOne)) {
    n = topo::gpuPeerNominal(topo::localTopology(), busOf(std::stoi(m[1])), {});
  } else {
    return;  // local copies and reductions: HBM, no link
  }
  if (s.path.find("<->") != std::string::npos && n.gbps > 0) {  // both directions at once: twice the link
    n.gbps *= 2;
    n.basis += ", both directions";
  }
  if (n.gbps > 0) s.pctNominal = 100.0 * s.busBwGBps / n.gbps;
  s.extra.emplace_back("nominal_basis", n.basis);
}

void PeerBench::sanity() {
  cudaipc::P2PCheckOptions po;
  po.timeout = std::chrono::milliseconds(o_.sanityTimeoutMs);
  po.enablePeerAccess = !o_.noPeerAccess;
  po.injectHang = o_.injectHang;
  auto t0 = Clock::now();
  cudaipc::P2PReport r = cudaipc::checkLocalPairs(po);
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  fmt::print("\n## P2P sanity check ({} B per pair, time-out {} ms per pair; took {:.0f} ms)\n", po.bytes,
             o_.sanityTimeoutMs, ms);
  for (auto& p : r.pairs) fmt::print("  {} {}\n", p.ok ? "ok  " : "FAIL", p.message);
  fmt::print("  => {}\n", r.summary);
  sanityOk_ = r.ok;
}

}  // namespace fb::peer

namespace fb {

PeerOutcome runPeerTests(const Opts& o, RunRecorder& recorder) {
  peer::PeerBench bench(o, recorder);
  PeerOutcome out;
  out.rc = bench.run();
  out.badRows = bench.badRows_;
  out.sanityOk = bench.sanityOk_;
  return out;
}

}  // namespace fb

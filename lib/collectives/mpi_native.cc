// The reference row: MPI's own collectives on MPI_COMM_WORLD, the number OSU/IMB users know.
//   allreduce     MPI_Allreduce                 (MPI_IN_PLACE when in-place)
//   allgather     MPI_Allgather                 (MPI_IN_PLACE: own block already at rank·count)
//   reducescatter MPI_Reduce_scatter_block      (MPI_IN_PLACE: MPI leaves the result at offset 0,
//                                                 not at rank·count as NCCL does; checked there)
//   p2pring       MPI_Sendrecv right/left       (MPI_Sendrecv_replace when in-place)
//   alltoall      MPI_Alltoall                  (out-of-place only)
//   broadcast     MPI_Bcast from --root         (out of place: the root copies its input first)
// Operators: MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX (-o); avg is declined (MPI has none).
// float16/bfloat16 travel as MPI_UINT16_T with user-defined operators.
// MPI calls block without a deadline of their own; a lost peer is handled by the MPI runtime
// (mpirun kills the job and names the process that died).
#include <mpi.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "bootstrap/mpi_bootstrap.h"
#include "collectives/collective.h"
#include "core/error.h"
#include "topology/nic_rate.h"

namespace fb {
namespace {

// float16/bfloat16 reductions as MPI user operators (MPI has no 16-bit float types): through
// float, rounded to the type after every operation, as the host rings do.
template <ReduceOp Op, float (*Load)(std::uint16_t), std::uint16_t (*Store)(float)>
void op16(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = Load(a[i]), y = Load(b[i]);
    float r = Op == ReduceOp::kProd ? x * y : Op == ReduceOp::kMin ? std::min(x, y) : Op == ReduceOp::kMax ? std::max(x, y) : x + y;
    b[i] = Store(r);
  }
}
template <float (*Load)(std::uint16_t), std::uint16_t (*Store)(float)>
MPI_User_function* op16For(ReduceOp op) {
  switch (op) {
    case ReduceOp::kProd: return op16<ReduceOp::kProd, Load, Store>;
    case ReduceOp::kMin: return op16<ReduceOp::kMin, Load, Store>;
    case ReduceOp::kMax: return op16<ReduceOp::kMax, Load, Store>;
    default: return op16<ReduceOp::kSum, Load, Store>;
  }
}

MPI_Op builtinOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    default: return MPI_SUM;
  }
}

class MpiCollective final : public Collective {
 public:
  explicit MpiCollective(CollKind kind) : kind_(kind) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    nominal_ = interconnectNominal();
  }
  ~MpiCollective() override {
    std::free(a_);
    std::free(b_);
    if (op_ != MPI_OP_NULL) MPI_Op_free(&op_);
  }
  std::string impl() const override { return "mpi"; }
  PathInfo path() const override {
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(v, &len);
    std::string s(v, len);
    s = s.substr(0, s.find_first_of("\n,"));
    PathInfo p{"mpi (" + s + ")", {{"library", s}}};
    if (auto w = mpiWaitPolicy(); !w.empty()) p.details.push_back({"progress", w});
    p.setNominal(nominal_.gbps, nominal_.basis);
    return p;
  }

  // The interconnect MPI uses, where it can be known: every rank on one node = shared memory (no
  // link rate); across nodes, only when Open MPI is restricted to its tcp BTL (OMPI_MCA_btl) on a
  // named interface (OMPI_MCA_btl_tcp_if_include), that NIC's rate; other MPIs: not known.
  // Collective (MPI_COMM_WORLD).
  static topo::NicRate interconnectNominal() {
    MPI_Comm local;
    int localSize = 0, worldSize = 0, minLocal = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &localSize);
    MPI_Comm_free(&local);
    MPI_Allreduce(&localSize, &minLocal, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (minLocal == worldSize) return {-1, "same host (MPI shared memory), no nominal rate"};
#if !defined(OMPI_MAJOR_VERSION)
    // MPICH-family libraries choose among their netmods (UCX, OFI) themselves; nothing in the
    // environment names one NIC the way Open MPI's tcp BTL settings do.
    return {-1, "the interconnect this MPI (not Open MPI) chose is not known here, no nominal rate"};
#else
    auto env = [](const char* k) { const char* v = std::getenv(k); return std::string(v ? v : ""); };
    std::string btl = env("OMPI_MCA_btl"), ifs = env("OMPI_MCA_btl_tcp_if_include"), pml = env("OMPI_MCA_pml");
    bool tcpOnly = btl.find("tcp") != std::string::npos && btl.find('^') == std::string::npos &&
                   btl.find("openib") == std::string::npos && btl.find("uct") == std::string::npos &&
                   btl.find("ofi") == std::string::npos && (pml.empty() || pml == "ob1");
    if (tcpOnly && !ifs.empty() && ifs.find(',') == std::string::npos && ifs.find('/') == std::string::npos) {
      auto r = topo::nicRate(ifs);
      r.basis = "Open MPI tcp BTL on " + r.basis;
      return r;
    }
    return {-1, "the interconnect Open MPI chose is not known here (set OMPI_MCA_btl=self,vader,tcp and "
                "OMPI_MCA_btl_tcp_if_include=<nic> to pin it), no nominal rate"};
#endif
  }

  void prepare(const CollShape& shape) override {
    s_ = shape;
    elt_ = dtypeSize(s_.dtype);
    FB_ENFORCE(s_.sendCount < (1ull << 31) && s_.recvCount < (1ull << 31),
               "MPI counts are int: ", s_.recvCount, " elements is too many");
    switch (s_.dtype) {
      case DataType::kFloat32: type_ = MPI_FLOAT; break;
      case DataType::kFloat64: type_ = MPI_DOUBLE; break;
      case DataType::kInt32: type_ = MPI_INT32_T; break;
      case DataType::kFloat16:
      case DataType::kBFloat16: type_ = MPI_UINT16_T; break;
    }
    if (op_ != MPI_OP_NULL) MPI_Op_free(&op_);
    op_ = MPI_OP_NULL;
    FB_ENFORCE(s_.op != ReduceOp::kAvg, "MPI has no average operator (the backend table declines it)");
    if (s_.dtype == DataType::kFloat16) FB_MPI_CHECK(MPI_Op_create(op16For<halfToFloat, floatToHalf>(s_.op), 1, &op_));
    if (s_.dtype == DataType::kBFloat16) FB_MPI_CHECK(MPI_Op_create(op16For<bf16ToFloat, floatToBf16>(s_.op), 1, &op_));
    std::free(a_);
    std::free(b_);
    std::size_t bytesA = std::max<std::size_t>(std::max(s_.sendCount, s_.recvCount) * elt_, 64);
    a_ = static_cast<std::byte*>(std::aligned_alloc(64, (bytesA + 63) / 64 * 64));
    b_ = static_cast<std::byte*>(std::aligned_alloc(64, (bytesA + 63) / 64 * 64));
    FB_ENFORCE(a_ && b_, "out of host memory");
    std::memset(a_, 0, bytesA);
    std::memset(b_, 0, bytesA);
    fillInput(1);
  }

  double runBatch(int iters, Deadline) override {
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) runOnce();
    return MPI_Wtime() - t0;
  }

  std::int64_t check(int seed, Deadline) override {
    fillInput(seed);
    runOnce();
    std::byte* out = resultPtr();
    if (corrupt_ && *corrupt_ < s_.recvCount)
      storeElement(out, s_.dtype, *corrupt_, loadElement(out, s_.dtype, *corrupt_) + 1000);
    corrupt_.reset();
    return countWrong(s_, out, rank_, seed);
  }

 private:
  topo::NicRate nominal_;
  MPI_Op op() const { return op_ != MPI_OP_NULL ? op_ : builtinOp(s_.op); }
  // Where this rank's input lives.
  std::byte* inputPtr() const {
    if (!s_.inPlace) return a_;
    if (kind_ == CollKind::kAllGather) return b_ + s_.sendInPlaceOffset(rank_) * elt_;
    return b_;
  }
  std::byte* resultPtr() const { return b_; }  // MPI in-place RS leaves the result at offset 0
  void fillInput(int seed) { fillPattern(inputPtr(), s_.dtype, s_.sendCount, rank_, seed, s_.op); }

  void runOnce() {
    const int n = size_;
    const void* send = s_.inPlace ? MPI_IN_PLACE : static_cast<const void*>(a_);
    int count = static_cast<int>(s_.paramCount);
    switch (kind_) {
      case CollKind::kAllReduce:
        FB_MPI_CHECK(MPI_Allreduce(send, b_, count, type_, op(), MPI_COMM_WORLD));
        break;
      case CollKind::kAllGather:
        FB_MPI_CHECK(MPI_Allgather(send, count, type_, b_, count, type_, MPI_COMM_WORLD));
        break;
      case CollKind::kReduceScatter:
        FB_MPI_CHECK(MPI_Reduce_scatter_block(send, b_, count, type_, op(), MPI_COMM_WORLD));
        break;
      case CollKind::kAllToAll:
        FB_MPI_CHECK(MPI_Alltoall(a_, count, type_, b_, count, type_, MPI_COMM_WORLD));
        break;
      case CollKind::kBroadcast:
        // Out of place, the root's output gets its input first (as NCCL's ncclBroadcast does).
        if (!s_.inPlace && rank_ == s_.root && count) std::memcpy(b_, a_, static_cast<std::size_t>(count) * elt_);
        FB_MPI_CHECK(MPI_Bcast(b_, count, type_, s_.root, MPI_COMM_WORLD));
        break;
      case CollKind::kP2PRing: {
        int right = (rank_ + 1) % n, left = (rank_ - 1 + n) % n;
        if (s_.inPlace)
          FB_MPI_CHECK(MPI_Sendrecv_replace(b_, count, type_, right, 7, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        else
          FB_MPI_CHECK(MPI_Sendrecv(a_, count, type_, right, 7, b_, count, type_, left, 7, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
        break;
      }
    }
  }

  CollKind kind_;
  int rank_ = 0, size_ = 1;
  CollShape s_{};
  std::size_t elt_ = 4;
  MPI_Datatype type_ = MPI_FLOAT;
  MPI_Op op_ = MPI_OP_NULL;
  std::byte* a_ = nullptr;  // send buffer (out-of-place)
  std::byte* b_ = nullptr;  // receive buffer, and the only buffer in place
};

}  // namespace

std::unique_ptr<Collective> makeMpiCollective(CollKind kind) { return std::make_unique<MpiCollective>(kind); }

}  // namespace fb

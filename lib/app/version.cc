// --version: the build's versions (fabricbench, the git revision, NCCL, CUDA, MPI, rdma-core).
#include <mpi.h>

#include <fmt/format.h>

#include "app/options.h"
#include "core/config.h"

namespace fb {

std::string versionText() {
  auto orNot = [](const char* v, const std::string& why) { return *v ? std::string(v) : why; };
#if defined(OMPI_MAJOR_VERSION)
  std::string mpi = fmt::format("Open MPI {}.{}.{}", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
  std::string mpi = std::string("MPICH ") + MPICH_VERSION;
#else
  std::string mpi = fmt::format("MPI {}.{} (library unknown)", MPI_VERSION, MPI_SUBVERSION);
#endif
  std::string rdma = FB_BUILD_RDMA_VERSION;
  if (!rdma.empty()) {
    // libibverbs.pc says 1.14.<rdma-core major>.<minor>
    auto p = rdma.find('.', rdma.find('.') + 1);
    rdma = (p == std::string::npos ? rdma : rdma.substr(p + 1)) + " (libibverbs " + rdma + ")";
  }
  return fmt::format(
      "fabricbench {}\n"
      "git revision: {} (when the build was configured)\n"
      "built with:\n"
      "  NCCL       {}\n"
      "  CUDA       {}\n"
      "  CUDA arch  {}\n"
      "  MPI        {}\n"
      "  rdma-core  {}\n"
      "  compiler   {}\n",
      FB_VERSION, orNot(FB_GIT_REV_CONFIGURED, "unknown (not built from a git checkout)"),
      orNot(FB_BUILD_NCCL_VERSION, std::string("not built (") + FB_BUILD_NCCL_WHY + ")"),
      orNot(FB_BUILD_CUDA_VERSION, std::string("not built (") + FB_BUILD_CUDA_WHY + ")"),
      orNot(FB_BUILD_CUDA_ARCH, "none (built without CUDA)"), mpi,
      rdma.empty() ? std::string("not built (") + FB_BUILD_VERBS_WHY + ")" : rdma, FB_CXX_COMPILER);
}

}  // namespace fb

// A GPU's PCI bus id as CUDA gives it, for both GPU backends (cuda_ipc and the nccl collective,
// whose headers each define their own FB_CUDA_CHECK and so cannot include one another).
#pragma once
#include <cctype>
#include <string>

#include <cuda_runtime_api.h>

namespace fb::gpu {

// "0000:19:00.0" (lower case) for a device ordinal; "" when CUDA cannot say (the error is cleared).
inline std::string pciBusId(int device) {
  char buf[64] = {0};
  if (cudaDeviceGetPCIBusId(buf, sizeof(buf), device) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  std::string s(buf);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace fb::gpu

// Element conversions shared by the reduction and IPC kernels (reduce.cu, ipc_fill_verify.cu):
// float32, float16 and bfloat16 loaded, stored and added as float. Device code only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace fb::kernels {
namespace {

template <int T> struct Conv;
template <> struct Conv<0> {  // float32: one element per 32-bit word
  static constexpr int kSize = 4;
  __device__ __forceinline__ static float load(const char* p) { return *reinterpret_cast<const float*>(p); }
  __device__ __forceinline__ static float loadCg(const char* p) { return __ldcg(reinterpret_cast<const float*>(p)); }
  __device__ __forceinline__ static void store(char* p, float v) { *reinterpret_cast<float*>(p) = v; }
  __device__ __forceinline__ static float roundTo(float v) { return v; }
  __device__ __forceinline__ static unsigned addWord(unsigned a, unsigned b) {
    return __float_as_uint(__uint_as_float(a) + __uint_as_float(b));
  }
};
// The two 16-bit types differ only in their bit conversions (Bits::fromBits / Bits::toBits).
template <class Bits> struct Conv16 {
  static constexpr int kSize = 2;
  __device__ __forceinline__ static float load(const char* p) { return Bits::fromBits(*reinterpret_cast<const unsigned short*>(p)); }
  __device__ __forceinline__ static float loadCg(const char* p) {
    return Bits::fromBits(__ldcg(reinterpret_cast<const unsigned short*>(p)));
  }
  __device__ __forceinline__ static void store(char* p, float v) { *reinterpret_cast<unsigned short*>(p) = Bits::toBits(v); }
  __device__ __forceinline__ static float roundTo(float v) { return Bits::fromBits(Bits::toBits(v)); }
  __device__ __forceinline__ static unsigned addWord(unsigned a, unsigned b) {
    float lo = Bits::fromBits(a & 0xffffu) + Bits::fromBits(b & 0xffffu);
    float hi = Bits::fromBits(a >> 16) + Bits::fromBits(b >> 16);
    return static_cast<unsigned>(Bits::toBits(lo)) | (static_cast<unsigned>(Bits::toBits(hi)) << 16);
  }
};
struct HalfBits {
  __device__ __forceinline__ static float fromBits(unsigned short b) { return __half2float(__ushort_as_half(b)); }
  __device__ __forceinline__ static unsigned short toBits(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
struct Bf16Bits {
  __device__ __forceinline__ static float fromBits(unsigned short b) { return __uint_as_float(static_cast<unsigned>(b) << 16); }
  __device__ __forceinline__ static unsigned short toBits(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
};
template <> struct Conv<1> : Conv16<HalfBits> {};  // float16
template <> struct Conv<2> : Conv16<Bf16Bits> {};  // bfloat16

template <int T>
__device__ __forceinline__ uint4 addVec(uint4 a, uint4 b) {
  return make_uint4(Conv<T>::addWord(a.x, b.x), Conv<T>::addWord(a.y, b.y), Conv<T>::addWord(a.z, b.z),
                    Conv<T>::addWord(a.w, b.w));
}

}  // namespace
}  // namespace fb::kernels

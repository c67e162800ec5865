// kh_kernel/pointwise_cuda.cuh: the CUDA spelling (sm80, sm90a) of the primitives the
// element-wise kernels are written against (the activation and rotary packages): element types
// and their fp32 conversions, loads and stores of 2- to 16-byte words with a cache hint, and
// the runtime's names for the host side. The text written once for CUDA and HIP follows:
// pointwise_packs.inl (packs of elements) and pointwise_launch.inl (a launch on the tensors'
// device and the caller's stream). Its HIP counterpart is pointwise_hip.hpp.
//
// Build: included by the packages' cuda/*.cu files (nvcc); see their cuda/CMakeLists.txt.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kh/kernel_abi.h"

#define KH_PW_DEV __device__ __forceinline__
#define KH_PW_API(name) cuda##name

namespace kh_pointwise {

using F16 = __half;
using Bf16 = __nv_bfloat16;

KH_PW_DEV float to_f32(float v) { return v; }
KH_PW_DEV float to_f32(__half v) { return __half2float(v); }
KH_PW_DEV float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

// Two floats as one word of two 16-bit values (lo in the low half), each rounded to nearest
// even: one cvt.rn.{bf16x2,f16x2}.f32 on sm80 and later.
template <typename T>
KH_PW_DEV uint32_t pack2_from_f32(float lo, float hi) {
  uint32_t w;
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&w, &v, 4);
  } else {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&w, &v, 4);
  }
  return w;
}
template <typename T>
KH_PW_DEV T from_f32(float v);
template <>
KH_PW_DEV float from_f32<float>(float v) { return v; }
template <>
KH_PW_DEV __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <>
KH_PW_DEV __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// 2^x and 1/x on the special-function unit (MUFU.EX2, MUFU.RCP), 1-2 ulp; subnormal results
// flush to zero, 2^-inf = 0 and 1/inf = 0.
KH_PW_DEV float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
KH_PW_DEV float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The 8- and 16-byte words pointwise_packs.inl moves data in (2 and 4 bytes: plain integers).
using Raw8 = uint2;
using Raw16 = uint4;

// STREAM: data each element of which one thread reads once (ld.global.cs, evict-first: the
// caches keep what is read again). Otherwise data many threads read (rotary's cos/sin rows,
// positions): the read-only path (ld.global.nc), kept in L1.
template <bool STREAM, typename W>
KH_PW_DEV W load_word(const void* p) {
  if constexpr (STREAM) return __ldcs(static_cast<const W*>(p));
  else return __ldg(static_cast<const W*>(p));
}
// Outputs are written once and not read again by the op: st.global.cs.
template <typename W>
KH_PW_DEV void store_word(void* p, W w) {
  __stcs(static_cast<W*>(p), w);
}

// The runtime's bound on a grid's x dimension: 2^31 - 1 blocks.
constexpr int64_t kMaxGridBlocks = 0x7fffffff;

// A CUDA error becomes KH_ERROR_DEVICE with the runtime's message.
constexpr kh_status device_status(cudaError_t) { return KH_ERROR_DEVICE; }
constexpr const char* kDeviceErrorFormat = "CUDA error on device %d: %s (%s)";

}  // namespace kh_pointwise

#include "kh_kernel/pointwise_packs.inl"
#include "kh_kernel/pointwise_launch.inl"

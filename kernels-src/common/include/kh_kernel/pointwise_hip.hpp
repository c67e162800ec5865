// kh_kernel/pointwise_hip.hpp: the HIP spelling (gfx942) of the primitives the element-wise
// kernels are written against (the activation and rotary packages), as pointwise_cuda.cuh is
// for CUDA: element types (bf16 as its 16 bits: HIP 5.2 has no hip_bf16.h; fp16 as _Float16)
// and their fp32 conversions, 2- to 16-byte words with a cache hint (global_load/store with
// the "nt" bit for streamed data), the runtime's names for the host side. Then the shared text:
// pointwise_packs.inl and, on a real HIP build, pointwise_launch.inl.
//
// tests/hip/emulate/ compiles the kernels on the host with a SIMT emulator in place of the HIP
// headers (KH_GFX942_EMULATION), without the runtime calls of pointwise_launch.inl.
#pragma once

#include <hip/hip_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kh/kernel_abi.h"

#define KH_PW_DEV __device__ __forceinline__
#define KH_PW_API(name) hip##name

namespace kh_pointwise {

using F16 = _Float16;
struct Bf16 {
  uint16_t bits;
};

KH_PW_DEV float to_f32(float v) { return v; }
KH_PW_DEV float to_f32(_Float16 v) { return static_cast<float>(v); }
KH_PW_DEV float to_f32(Bf16 v) { return __builtin_bit_cast(float, static_cast<uint32_t>(v.bits) << 16); }

// float -> bf16 bits, round to nearest even; a NaN stays a quiet NaN of its sign.
KH_PW_DEV uint32_t bf16_bits_rn(float v) {
  const uint32_t u = __builtin_bit_cast(uint32_t, v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

// Two floats as one word of two 16-bit values (lo in the low half), each rounded to nearest even.
template <typename T>
KH_PW_DEV uint32_t pack2_from_f32(float lo, float hi) {
  if constexpr (std::is_same_v<T, Bf16>) return bf16_bits_rn(lo) | (bf16_bits_rn(hi) << 16);
  else  // v_cvt_f16_f32 rounds to nearest even
    return static_cast<uint32_t>(__builtin_bit_cast(uint16_t, static_cast<_Float16>(lo))) |
           (static_cast<uint32_t>(__builtin_bit_cast(uint16_t, static_cast<_Float16>(hi))) << 16);
}
template <typename T>
KH_PW_DEV T from_f32(float v);
template <>
KH_PW_DEV float from_f32<float>(float v) { return v; }
template <>
KH_PW_DEV _Float16 from_f32<_Float16>(float v) { return static_cast<_Float16>(v); }
template <>
KH_PW_DEV Bf16 from_f32<Bf16>(float v) { return Bf16{static_cast<uint16_t>(bf16_bits_rn(v))}; }

// 2^x and 1/x on the transcendental unit (v_exp_f32, v_rcp_f32), about 1 ulp; the host
// emulator uses the C library.
#if !defined(KH_GFX942_EMULATION)
KH_PW_DEV float exp2_approx(float x) { return __builtin_amdgcn_exp2f(x); }
KH_PW_DEV float rcp_approx(float x) { return __builtin_amdgcn_rcpf(x); }
#else
inline float exp2_approx(float x) { return exp2f(x); }
inline float rcp_approx(float x) { return 1.f / x; }
#endif

// The 8- and 16-byte words pointwise_packs.inl moves data in (2 and 4 bytes: plain integers).
typedef uint32_t Raw8 __attribute__((ext_vector_type(2)));
typedef uint32_t Raw16 __attribute__((ext_vector_type(4)));

// STREAM: data each element of which one thread reads once: a non-temporal load (the
// counterpart of CUDA's ld.global.cs). Otherwise data many threads read: a plain load.
template <bool STREAM, typename W>
KH_PW_DEV W load_word(const void* p) {
  if constexpr (STREAM) return __builtin_nontemporal_load(static_cast<const W*>(p));
  else return *static_cast<const W*>(p);
}
template <typename W>
KH_PW_DEV void store_word(void* p, W w) {
  __builtin_nontemporal_store(w, static_cast<W*>(p));
}

// HIP bounds a dimension's work-items (grid x block) by 2^32 - 1: blocks of up to 256 threads.
constexpr int64_t kMaxGridBlocks = int64_t(UINT32_MAX) / 256;

// A HIP error becomes KH_ERROR_DEVICE (KH_ERROR_OUT_OF_MEMORY when it is one) with the
// runtime's message.
#if !defined(KH_GFX942_EMULATION)
constexpr kh_status device_status(hipError_t e) {
  return e == hipErrorOutOfMemory ? KH_ERROR_OUT_OF_MEMORY : KH_ERROR_DEVICE;
}
constexpr const char* kDeviceErrorFormat = "HIP error on ROCm device %d: %s (%s)";
#endif

}  // namespace kh_pointwise

#include "kh_kernel/pointwise_packs.inl"
#if !defined(KH_GFX942_EMULATION)
#include "kh_kernel/pointwise_launch.inl"
#endif

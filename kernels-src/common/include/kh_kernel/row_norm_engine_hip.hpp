// row_norm_engine_hip.hpp: RMS norm and layer norm (each with an optional fused residual add)
// over the last dimension of a row-strided 2-D view, for AMD CDNA3 (gfx942, wavefront 64).
//
// The CUDA engine (row_norm_engine.cuh, verified on an H200) with a wavefront of 64 lanes in
// place of a warp of 32: the algorithm (what is computed and how, the two kernels, the launch
// and dispatch code) is the same text, row_norm_kernels.inl and row_norm_launch.inl, included
// below once the primitives they use are defined. This file holds what is gfx942's own:
//  - T is float, _Float16 or Bf16 (bf16 as raw bits: HIP 5.2 has no hip_bf16.h).
//  - 16-byte accesses are global_load_dwordx4 / global_store_dwordx4; rows touched once are
//    non-temporal. The streaming kernel's second read mostly hits L2 (MI300: 4 MB per XCD) or
//    the 256 MB Infinity Cache.
//  - Reductions are over wavefronts of 64 (__shfl_xor), block reductions over workgroups.
//  - No minimum of resident workgroups in the launch bounds and more packs in flight than on
//    CUDA: a lane keeps 128 VGPRs even in a 1024-thread workgroup; the row-size ladder.
// Not run on a GPU yet (no AMD GPU is reachable from the build machines): see hip/NOTES.md.
//
// Shared by the rms-norm and layer-norm packages (kernels-src/common/include), as the CUDA
// engine is.
//
// Build: included by one .hip per (package, dtype); see the package's kernel.json (build.backends.hip)
// (cmake/KhHipGfx942.cmake compiles it with clang -x hip --offload-arch=gfx942).
#pragma once

#include <hip/hip_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kh_kernel/args.hpp"
#include "kh_kernel/norm_args.hpp"
#include "kh_kernel/tensor.hpp"

namespace kh_row_norm {

// ---- the primitives row_norm_kernels.inl is written against ------------------------------------

// Lanes of a wavefront on CDNA (gfx9): the lock-step group whose lanes reduce with shuffles.
constexpr int kLanes = 64;

// bfloat16 as its 16 bits; converted by hand below.
struct Bf16 {
  uint16_t bits;
};

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(_Float16 v) { return static_cast<float>(v); }
__device__ __forceinline__ float to_f32(Bf16 v) { return __builtin_bit_cast(float, static_cast<uint32_t>(v.bits) << 16); }
template <typename T>
constexpr bool kIsBf16 = std::is_same_v<T, Bf16>;

template <typename T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <>
__device__ __forceinline__ _Float16 from_f32<_Float16>(float v) { return static_cast<_Float16>(v); }  // v_cvt_f16_f32: RNE
// Round to nearest even, as __float2bfloat16_rn; NaN stays a (quiet) NaN of the same sign.
template <>
__device__ __forceinline__ Bf16 from_f32<Bf16>(float v) {
  uint32_t u = __builtin_bit_cast(uint32_t, v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return Bf16{static_cast<uint16_t>((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return Bf16{static_cast<uint16_t>(u >> 16)};
}

// Row data the register kernel touches once goes through non-temporal accesses (the "nt"
// bit), the counterpart of CUDA's ld/st.cs there, so the caches keep weight and bias.
typedef uint32_t U32x4 __attribute__((ext_vector_type(4)));
using Raw16 = U32x4;
__device__ __forceinline__ Raw16 load16_once(const void* p) {
  return __builtin_nontemporal_load(static_cast<const U32x4*>(p));
}
__device__ __forceinline__ void store16_once(void* p, Raw16 u) {
  __builtin_nontemporal_store(u, static_cast<U32x4*>(p));
}

__device__ __forceinline__ float lane_xor(float v, int o) { return __shfl_xor(v, o, kLanes); }

// NT alone: no minimum of resident workgroups (CUDA uses one to cap registers a thread; a
// 1024-thread workgroup on gfx942 still leaves a lane 128 VGPRs).
#define KH_ROW_NORM_LAUNCH_BOUNDS(NT) __launch_bounds__(NT)

// Packs per input in flight per streaming step, HEAVY or not: 2 x 16 B per thread is 32 KB per
// CU for one 1024-thread workgroup. (CUDA needed 1 for some dtypes under a 64-register cap.)
template <typename T, bool HEAVY>
__host__ __device__ constexpr int stream_unroll() {
  return 2;
}

}  // namespace kh_row_norm

#include "kh_kernel/row_norm_kernels.inl"

// The host side below. tests/hip/emulate/ compiles the kernels above alone, on the host, with a
// SIMT emulator in place of the HIP headers (KH_GFX942_EMULATION), and checks them against a
// float64 reference: there is no AMD GPU to run them on.
#if !defined(KH_GFX942_EMULATION)

namespace kh_row_norm {

// ---- host: the HIP runtime for row_norm_launch.inl -----------------------------------------------

#define KH_RN_API(name) hip##name

inline hipError_t unit_count(int device, int* cus) {
  const hipError_t e = hipDeviceGetAttribute(cus, hipDeviceAttributeMultiprocessorCount, device);
  *cus = std::max(1, *cus);
  return e;
}

// HIP bounds a dimension's work-items (grid x block) by 2^32 - 1.
template <int NT>
constexpr int64_t clamp_grid(int64_t blocks) {
  return std::min<int64_t>(blocks, int64_t(UINT32_MAX) / NT);
}

// A HIP error becomes KH_ERROR_DEVICE (KH_ERROR_OUT_OF_MEMORY when it is one) with the
// runtime's message.
constexpr kh_status device_status(hipError_t e) {
  return e == hipErrorOutOfMemory ? KH_ERROR_OUT_OF_MEMORY : KH_ERROR_DEVICE;
}
constexpr const char* kDeviceErrorFormat = "HIP error on ROCm device %d: %s (%s)";

}  // namespace kh_row_norm

#include "kh_kernel/row_norm_launch.inl"

namespace kh_row_norm {

// Threads per workgroup when a wavefront owns a row: four rows, one wavefront per SIMD of a CU.
constexpr int kWaveRowCtaThreads = 256;
// Packs a thread holds in the register kernel at most: 4 x 16 B in flight a thread, as the CUDA
// engine; the fused add keeps 4 too (gfx942 has 128 VGPRs a lane even at 1024 threads).
constexpr int kMaxItems = 4;

// Rows of up to 4 packs per lane get a wavefront; beyond, a workgroup of up to 1024 threads
// (512 for 16-bit layer norm and fused adds) keeps 2-4 packs per thread; rows too large for
// that are read twice by the streaming kernel.
template <NormKind K, typename T, int VEC, bool FUSED>
hipError_t launch_for_width(const RowNormArgs& a, hipStream_t s) {
  const int64_t packs = a.hidden / VEC;
  constexpr int kW = kWaveRowCtaThreads;
  constexpr int kI = kMaxItems;
  if (packs <= kLanes * 1) return launch_registers<K, T, VEC, kW, kLanes, 1, FUSED>(a, s);
  if (packs <= kLanes * 2) return launch_registers<K, T, VEC, kW, kLanes, 2, FUSED>(a, s);
  if (packs <= kLanes * kI) return launch_registers<K, T, VEC, kW, kLanes, kI, FUSED>(a, s);
  if (packs <= 256 * 2) return launch_registers<K, T, VEC, 256, 256, 2, FUSED>(a, s);
  if (packs <= 256 * kI) return launch_registers<K, T, VEC, 256, 256, kI, FUSED>(a, s);
  if (packs <= 512 * kI) return launch_registers<K, T, VEC, 512, 512, kI, FUSED>(a, s);
  // A 1024-thread workgroup leaves a lane 128 VGPRs: 16-bit layer norm and fused adds spilled
  // 20-58 VGPRs to scratch there (clang-19), so their rows past 512 x 4 packs stream instead.
  if constexpr (!(sizeof(T) == 2 && (FUSED || K == NormKind::kLayer))) {
    if (packs <= 1024 * kI) return launch_registers<K, T, VEC, 1024, 1024, kI, FUSED>(a, s);
  }
  return launch_rows<row_norm_streaming<K, T, VEC, kStreamThreads, FUSED>, kStreamThreads, 1>(a, s);
}

}  // namespace kh_row_norm

#undef KH_RN_API

#endif  // !KH_GFX942_EMULATION

#undef KH_ROW_NORM_LAUNCH_BOUNDS

// row_norm_engine.cuh: RMS norm and layer norm (each with an optional fused residual add)
// over the last dimension of a row-strided 2-D view, for CUDA sm80 and sm90a.
//
// This file holds what is CUDA's own: the element types (T is float, __half or
// __nv_bfloat16), evict-first 16-byte accesses, warp shuffles, the launch bounds and unroll
// counts that keep the kernels under a 64-register cap, and the ladder of kernel
// configurations per row size. The algorithm (what is computed and how, the two kernels,
// the launch and dispatch code) is shared with the HIP engine (row_norm_engine_hip.hpp):
// row_norm_kernels.inl and row_norm_launch.inl, included below once the primitives they
// use are defined.
//
// Shared by the rms-norm and layer-norm packages (kernels-src/common/include). Measurements
// and versions (v5 and v6 were measured and dropped): kernels-src/rms-norm/cuda/NOTES.md and
// kernels-src/layer-norm/cuda/NOTES.md.
//
// Build: included by one .cu per (package, dtype); see the package's kernel.json (build.backends.cuda).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kh_kernel/args.hpp"
#include "kh_kernel/norm_args.hpp"
#include "kh_kernel/tensor.hpp"

namespace kh_row_norm {

// ---- the primitives row_norm_kernels.inl is written against ------------------------------------

// Threads of a warp: the lock-step group whose lanes reduce with shuffles.
constexpr int kLanes = 32;

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
// bf16 is the top half of an fp32 (row_norm_kernels.inl converts packed pairs by hand).
template <typename T>
constexpr bool kIsBf16 = std::is_same_v<T, __nv_bfloat16>;

template <typename T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Row data the register kernel touches once goes through evict-first accesses (ld/st.cs),
// so L1/L2 keep weight and bias rather than rows nobody reads again. On the H200 this took
// fused_add_rms_norm bf16 65536x1024 from 0.76x to 0.90x of copy bandwidth, 4096x16384
// from 0.86x to 0.94x; plain norms moved within noise.
using Raw16 = uint4;
__device__ __forceinline__ Raw16 load16_once(const void* p) { return __ldcs(static_cast<const uint4*>(p)); }
__device__ __forceinline__ void store16_once(void* p, Raw16 u) { __stcs(static_cast<uint4*>(p), u); }

__device__ __forceinline__ float lane_xor(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }

// Every kernel is compiled for at least this many resident threads per SM, which caps it at
// 64 registers a thread: half the register file then holds rows (up to 64 KB of bf16 per SM
// in flight), and a CTA that waits at a barrier leaves others running. Without the cap the
// fused layer norm took 110 registers, one 512-thread CTA per SM, and nothing overlapped.
constexpr int kMinThreadsPerSm = 1024;
constexpr int min_ctas_per_sm(int nt) { return nt >= kMinThreadsPerSm ? 1 : kMinThreadsPerSm / nt; }
#define KH_ROW_NORM_LAUNCH_BOUNDS(NT) __launch_bounds__(NT, min_ctas_per_sm(NT))

// Packs in flight per thread and streaming step: 2 x 16 B (32 KB per SM at one 1024-thread
// CTA) covers DRAM latency. 4 spilled under the 64-register cap for fp32 weights; with 16-bit
// inputs, the HEAVY passes (the fused add: two input streams; layer norm: weight and bias
// beside the row in pass 2) spilled even at 2, so they take 1.
template <typename T, bool HEAVY>
__host__ __device__ constexpr int stream_unroll() {
  return sizeof(T) == 2 && HEAVY ? 1 : 2;
}

}  // namespace kh_row_norm

#include "kh_kernel/row_norm_kernels.inl"

namespace kh_row_norm {

// ---- host: the CUDA runtime for row_norm_launch.inl ----------------------------------------------

#define KH_RN_API(name) cuda##name

inline cudaError_t unit_count(int device, int* sms) {
  return cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device);
}

// A grid of resident-blocks x waves stays far below CUDA's 2^31 - 1 blocks.
template <int NT>
constexpr int64_t clamp_grid(int64_t blocks) {
  return blocks;
}

// A CUDA error becomes KH_ERROR_DEVICE with the runtime's message.
constexpr kh_status device_status(cudaError_t) { return KH_ERROR_DEVICE; }
constexpr const char* kDeviceErrorFormat = "CUDA error on device %d: %s (%s)";

}  // namespace kh_row_norm

#include "kh_kernel/row_norm_launch.inl"

namespace kh_row_norm {

// Threads per CTA when a warp owns a row: 4 rows per CTA keeps CTAs small, so the last wave
// of a short batch is spread over every SM.
constexpr int kWarpRowCtaThreads = 128;

// Packs a thread may hold in the register kernel under the 64-register cap. The fused add of
// 16-bit inputs keeps both x and residual in flight and the sums as fp32: at 4 packs ptxas
// spilled 100-180 bytes a thread, at 2 it spills nothing (nvcc 13.0, -Xptxas -v).
template <typename T, bool FUSED>
__host__ __device__ constexpr int max_items() {
  return FUSED && sizeof(T) == 2 ? 2 : 4;
}

// Rows of up to ITEMS packs per lane get a warp; beyond, a CTA of up to 1024 threads keeps
// ITEMS packs per thread (64 B of bf16 each: four 16-byte loads in flight a thread); rows
// too large for that are read twice by the streaming kernel.
template <NormKind K, typename T, int VEC, bool FUSED>
cudaError_t launch_for_width(const RowNormArgs& a, cudaStream_t s) {
  const int64_t packs = a.hidden / VEC;
  constexpr int kW = kWarpRowCtaThreads;
  constexpr int kItems = max_items<T, FUSED>();
  if (packs <= 32 * 1) return launch_registers<K, T, VEC, kW, 32, 1, FUSED>(a, s);
  if (packs <= 32 * 2) return launch_registers<K, T, VEC, kW, 32, 2, FUSED>(a, s);
  if constexpr (kItems == 4) {
    if (packs <= 32 * 4) return launch_registers<K, T, VEC, kW, 32, 4, FUSED>(a, s);
    if (packs <= 128 * 2) return launch_registers<K, T, VEC, 128, 128, 2, FUSED>(a, s);
  } else {
    // Two warps a row where one warp's registers no longer fit it: without this step a
    // fused 1024-wide bf16 row took a 128-thread CTA with half its packs idle (0.62x copy).
    if (packs <= 64 * 2) return launch_registers<K, T, VEC, 64, 64, 2, FUSED>(a, s);
  }
  if (packs <= 128 * kItems) return launch_registers<K, T, VEC, 128, 128, kItems, FUSED>(a, s);
  if (packs <= 256 * kItems) return launch_registers<K, T, VEC, 256, 256, kItems, FUSED>(a, s);
  if (packs <= 512 * kItems) return launch_registers<K, T, VEC, 512, 512, kItems, FUSED>(a, s);
  if (packs <= 1024 * kItems) return launch_registers<K, T, VEC, 1024, 1024, kItems, FUSED>(a, s);
  return launch_rows<row_norm_streaming<K, T, VEC, kStreamThreads, FUSED>, kStreamThreads, 1>(a, s);
}

}  // namespace kh_row_norm

#undef KH_RN_API
#undef KH_ROW_NORM_LAUNCH_BOUNDS

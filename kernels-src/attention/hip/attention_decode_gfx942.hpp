// attention_decode_gfx942.hpp: the HIP (gfx942, 64-lane wavefronts) spelling of the decode
// kernels' platform hooks, the shared kernel bodies (../src/attention_decode_kernel.inl, the
// same algorithm as the CUDA build: lane groups of at most 32 lanes sit inside a wavefront,
// and every shuffle is an xor below the group width) and their launchers. Included by
// attention_decode_gfx942_<dtype>.hip and attention_decode_hip.hip.
#pragma once

#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdint>

#if !defined(KH_GFX942_EMULATION)
#include "attention_decode_gfx942_launch.hpp"
#else
#include "attention_decode_params.hpp"
namespace kh_attention {
namespace decode {
struct Bf16Tag;
struct F16Tag;
}  // namespace decode
}  // namespace kh_attention
#endif

#define KH_DEC_DEV __device__ __forceinline__
// No waves-per-EU demand: the merge buffer in LDS (16-32 KiB a CTA of 2 wavefronts, 64 KiB a
// CU) already limits a CU to 1-3 CTAs, fewer waves than any register cap would allow.
#define KH_DEC_SPLIT_BOUNDS(ROWS) __launch_bounds__(kThreads)

namespace kh_attention {
namespace decode {

KH_DEC_DEV float kh_dec_shfl_xor(float v, int mask) { return __shfl_xor(v, mask, 64); }

KH_DEC_DEV float kh_dec_exp2(float x) {
#if __has_builtin(__builtin_amdgcn_exp2f)
  return __builtin_amdgcn_exp2f(x);  // v_exp_f32; exp2(-inf) = 0
#else
  return exp2f(x);
#endif
}

// K and V are read once per call: a non-temporal load keeps them from displacing q.
typedef uint32_t KhDecU32x4 __attribute__((ext_vector_type(4)));
KH_DEC_DEV uint4 kh_dec_ld16(const void* ptr) {
  const KhDecU32x4 v = __builtin_nontemporal_load(static_cast<const KhDecU32x4*>(ptr));
  return make_uint4(v.x, v.y, v.z, v.w);
}

KH_DEC_DEV float2 kh_dec_f16x2_to_float2(uint32_t bits) {
  const _Float16 lo = __builtin_bit_cast(_Float16, static_cast<uint16_t>(bits & 0xffffu));
  const _Float16 hi = __builtin_bit_cast(_Float16, static_cast<uint16_t>(bits >> 16));
  return make_float2(static_cast<float>(lo), static_cast<float>(hi));
}

KH_DEC_DEV uint16_t kh_dec_float_to_f16(float f) { return __builtin_bit_cast(uint16_t, static_cast<_Float16>(f)); }

}  // namespace decode
}  // namespace kh_attention

#include "attention_decode_kernel.inl"

// The launchers: real HIP only. tests/hip/emulate/decode_emulate.cpp runs the kernels above on
// the host SIMT emulator in place of the HIP headers (KH_GFX942_EMULATION).
#if !defined(KH_GFX942_EMULATION)
namespace kh_attention {
namespace decode {

template <typename Tag, int TPR>
hipError_t run_decode_split(const DecodeParams& p, int rows, int row_tiles, int num_splits, hipStream_t stream) {
  const dim3 grid(static_cast<unsigned>(num_splits), static_cast<unsigned>(p.heads_kv * row_tiles),
                  static_cast<unsigned>(p.batch));
  if (rows == 4)
    decode_split_kernel<Tag, TPR, 4><<<grid, kThreads, 0, stream>>>(p, row_tiles, num_splits);
  else
    decode_split_kernel<Tag, TPR, 8><<<grid, kThreads, 0, stream>>>(p, row_tiles, num_splits);
  return hipGetLastError();
}

// attention_decode_paged_fp8 (1.2): the same kernel over e4m3 caches (E4m3Kv).
template <typename Tag, int TPR>
hipError_t run_decode_split_fp8(const DecodeParams& p, int rows, int row_tiles, int num_splits, hipStream_t stream) {
  const dim3 grid(static_cast<unsigned>(num_splits), static_cast<unsigned>(p.heads_kv * row_tiles),
                  static_cast<unsigned>(p.batch));
  if (rows == 4)
    decode_split_kernel<Tag, TPR, 4, E4m3Kv><<<grid, kThreads, 0, stream>>>(p, row_tiles, num_splits);
  else
    decode_split_kernel<Tag, TPR, 8, E4m3Kv><<<grid, kThreads, 0, stream>>>(p, row_tiles, num_splits);
  return hipGetLastError();
}

template <typename Tag, int TPR>
int decode_split_occupancy(int rows) {
  int blocks = 0;
  const hipError_t err =
      rows == 4 ? hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, decode_split_kernel<Tag, TPR, 4>, kThreads, 0)
                : hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, decode_split_kernel<Tag, TPR, 8>, kThreads, 0);
  return err == hipSuccess && blocks > 0 ? blocks : 1;
}

// The launch/combine translation unit declares the instantiations extern: each split kernel
// is compiled once, in its own translation unit.
#define KH_DECODE_EXTERN(Tag, TPR)                                                                           \
  extern template hipError_t run_decode_split<Tag, TPR>(const DecodeParams&, int, int, int, hipStream_t); \
  extern template int decode_split_occupancy<Tag, TPR>(int);
#define KH_DECODE_EXTERN_ALL(Tag) \
  KH_DECODE_EXTERN(Tag, 4) KH_DECODE_EXTERN(Tag, 8) KH_DECODE_EXTERN(Tag, 16) KH_DECODE_EXTERN(Tag, 32)

#define KH_DECODE_FP8_EXTERN_ALL(Tag)                                                                          \
  extern template hipError_t run_decode_split_fp8<Tag, 4>(const DecodeParams&, int, int, int, hipStream_t);  \
  extern template hipError_t run_decode_split_fp8<Tag, 8>(const DecodeParams&, int, int, int, hipStream_t);  \
  extern template hipError_t run_decode_split_fp8<Tag, 16>(const DecodeParams&, int, int, int, hipStream_t); \
  extern template hipError_t run_decode_split_fp8<Tag, 32>(const DecodeParams&, int, int, int, hipStream_t);
#define KH_DECODE_FP8_INSTANTIATE(Tag, TPR) \
  template hipError_t run_decode_split_fp8<Tag, TPR>(const DecodeParams&, int, int, int, hipStream_t);

#define KH_DECODE_INSTANTIATE(Tag, TPR)                                                                  \
  template hipError_t run_decode_split<Tag, TPR>(const DecodeParams&, int, int, int, hipStream_t); \
  template int decode_split_occupancy<Tag, TPR>(int);

}  // namespace decode
}  // namespace kh_attention
#endif  // !KH_GFX942_EMULATION

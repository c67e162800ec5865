// attention_decode.cuh: the CUDA spelling of the decode kernels' platform hooks, the shared
// kernel bodies (../src/attention_decode_kernel.inl) and their launchers. Included by one
// translation unit per (dtype, lane-group width): attention_decode_<dtype>_tpr<N>.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "attention_decode.hpp"

#define KH_DEC_DEV __device__ __forceinline__
// 4 CTAs an SM for 4 rows (caps registers at 128: 160 unbounded), 2 for 8 rows.
#define KH_DEC_SPLIT_BOUNDS(ROWS) __launch_bounds__(kThreads, (ROWS) <= 4 ? 4 : 2)
// Programmatic dependent launch (sm90+): griddepcontrol is PTX ISA 7.8 for sm_90 and newer, so
// the compute_80 PTX of the sm80 build leaves it out (its combine is an ordinary launch).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KH_DEC_LAUNCH_DEPENDENTS() asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory")
#define KH_DEC_WAIT_PRIOR_GRID() asm volatile("griddepcontrol.wait;\n" ::: "memory")
#endif

namespace kh_attention {
namespace decode {

KH_DEC_DEV float kh_dec_shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }

// 2^x by MUFU.EX2; ex2.approx(-inf) = +0, which the online softmax relies on.
KH_DEC_DEV float kh_dec_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// K and V are read once per call: keep them out of L1.
KH_DEC_DEV uint4 kh_dec_ld16(const void* ptr) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(ptr));
  return r;
}

KH_DEC_DEV float2 kh_dec_f16x2_to_float2(uint32_t bits) {
  __half2 h;
  *reinterpret_cast<uint32_t*>(&h) = bits;
  return __half22float2(h);
}

KH_DEC_DEV uint16_t kh_dec_float_to_f16(float f) { return __half_as_ushort(__float2half_rn(f)); }

}  // namespace decode
}  // namespace kh_attention

#include "attention_decode_kernel.inl"
#include "attention_decode_mma.cuh"
#include "attention_decode_tma.cuh"
#include "attention_decode_staged.cuh"
#include "attention_decode_balanced.cuh"

namespace kh_attention {
namespace decode {

// Sets the dynamic shared memory limit of a kernel once (the staged kernel's ring needs 64 KiB
// at head dim 128); a host-side attribute, not a stream operation: safe during graph capture.
template <typename Kernel>
cudaError_t allow_smem(Kernel kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
}

template <typename Tag, int TPR, int ROWS>
cudaError_t launch_mma(const DecodeParams& p, int row_tiles, int num_splits, const dim3& grid, cudaStream_t stream) {
  constexpr size_t bytes = decode_mma_smem_bytes<ROWS>();
  static const cudaError_t ready = allow_smem(decode_mma_kernel<Tag, TPR, ROWS>, bytes);
  if (ready != cudaSuccess) return ready;
  decode_mma_kernel<Tag, TPR, ROWS><<<grid, kThreads, bytes, stream>>>(p, row_tiles, num_splits);
  return cudaGetLastError();
}

template <typename Tag, int DP, int ROWS, int WARPS, bool TMA>
cudaError_t launch_staged(const DecodeParams& p, int row_tiles, int num_splits, const dim3& grid, const DecodeTma& tma,
                          cudaStream_t stream) {
  constexpr size_t bytes = decode_staged_smem_bytes<DP, ROWS, WARPS, TMA>();
  static const cudaError_t ready = allow_smem(decode_staged_kernel<Tag, DP, ROWS, WARPS, TMA>, bytes);
  if (ready != cudaSuccess) return ready;
  decode_staged_kernel<Tag, DP, ROWS, WARPS, TMA><<<grid, WARPS * 32, bytes, stream>>>(p, row_tiles, num_splits, tma);
  return cudaGetLastError();
}

template <typename Tag, int DP, int ROWS, bool TMA>
cudaError_t launch_balanced(const DecodeParams& p, int grid, int slots, const DecodeTma& tma, cudaStream_t stream) {
  constexpr int kWarps = kWideWarps;
  static const cudaError_t ready = allow_smem(decode_balanced_kernel<Tag, DP, ROWS, kWarps, TMA>,
                                              decode_balanced_smem_bytes<DP, ROWS, kWarps, TMA>(kBalancedMaxBatch));
  if (ready != cudaSuccess) return ready;
  decode_balanced_kernel<Tag, DP, ROWS, kWarps, TMA>
      <<<grid, kWarps * 32, decode_balanced_smem_bytes<DP, ROWS, kWarps, TMA>(p.batch), stream>>>(p, slots, tma);
  return cudaGetLastError();
}

// Resident CTAs an SM of a kernel of `threads` threads with `bytes` of dynamic shared memory; 0
// where it does not fit (the wide CTA's 192 KiB on an A100-class part).
template <typename Kernel>
int occupancy_of(Kernel kernel, size_t bytes, int threads = kThreads) {
  int blocks = 0;
  if (allow_smem(kernel, bytes) != cudaSuccess) return 0;
  const cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, bytes);
  return err == cudaSuccess && blocks > 0 ? blocks : 0;
}

// The staged kernel's head-dim bucket at lane-group width TPR: the width's own (32, 64, 128), and
// 192 at width 32. Head dims above 192 take the register kernel (tcpv's): a 16 KiB-a-stage ring
// leaves one CTA an SM (0.61 of the copy floor against the register kernel's 0.86, even with
// three stages: cuda/NOTES.md "Decode", head dims).
template <int TPR>
constexpr int kStagedDim = TPR < 32 ? TPR * 8 : 192;

template <int TPR>
constexpr bool staged_takes(int head_dim, int variant) {
  return variant == kVariantStaged && head_dim <= kStagedDim<TPR>;
}

// The wide CTA (kWideWarps) is built for the 128 bucket only (head dims 72-128): the issue's
// d128 shapes, and each instantiation costs CI compile time. Elsewhere a wide plan is never made.
template <int TPR>
constexpr bool wide_built = TPR == 16;

// The wide CTA's TMA-filled ring (attention_decode_tma.cuh) exists in the sm90a build only.
#if defined(KH_ATTENTION_SM90A)
constexpr bool kDecodeTmaBuilt = true;
#else
constexpr bool kDecodeTmaBuilt = false;
#endif

template <typename Tag, int DP, int WARPS, bool TMA>
cudaError_t launch_staged_rows(const DecodeParams& p, int rows, int row_tiles, int num_splits, const dim3& grid,
                               const DecodeTma& tma, cudaStream_t stream) {
  return rows == 4 ? launch_staged<Tag, DP, 4, WARPS, TMA>(p, row_tiles, num_splits, grid, tma, stream)
                   : launch_staged<Tag, DP, 8, WARPS, TMA>(p, row_tiles, num_splits, grid, tma, stream);
}

template <typename Tag, int DP, bool TMA>
cudaError_t launch_balanced_rows(const DecodeParams& p, int rows, int grid, int slots, const DecodeTma& tma,
                                 cudaStream_t stream) {
  return rows == 4 ? launch_balanced<Tag, DP, 4, TMA>(p, grid, slots, tma, stream)
                   : launch_balanced<Tag, DP, 8, TMA>(p, grid, slots, tma, stream);
}

// The balanced kernel's CTAs an SM with the shared memory of the largest batch (its tables).
template <typename Tag, int DP>
int balanced_occupancy(int rows) {
  constexpr int kThreadsWide = kWideWarps * 32;
  return rows == 4 ? occupancy_of(decode_balanced_kernel<Tag, DP, 4, kWideWarps, false>,
                                  decode_balanced_smem_bytes<DP, 4, kWideWarps, true>(kBalancedMaxBatch), kThreadsWide)
                   : occupancy_of(decode_balanced_kernel<Tag, DP, 8, kWideWarps, false>,
                                  decode_balanced_smem_bytes<DP, 8, kWideWarps, true>(kBalancedMaxBatch), kThreadsWide);
}

template <typename Tag, int DP, int WARPS>
int staged_occupancy(int rows) {
  return rows == 4 ? occupancy_of(decode_staged_kernel<Tag, DP, 4, WARPS, false>,
                                  decode_staged_smem_bytes<DP, 4, WARPS, false>(), WARPS * 32)
                   : occupancy_of(decode_staged_kernel<Tag, DP, 8, WARPS, false>,
                                  decode_staged_smem_bytes<DP, 8, WARPS, false>(), WARPS * 32);
}

// variant: kVariantStaged (the default: K/V through a shared-memory ring of whole lines, both
// products on the tensor cores, attention_decode_staged.cuh), kVariantTensorPv (K/V straight
// into fragments, attention_decode_mma.cuh), kVariantSimt (all CUDA cores,
// attention_decode_kernel.inl, the HIP kernel's design).
// wide: CTAs of kWideWarps warps (staged, where wide_built), else of kThreads threads; tma
// (the wide CTA in the sm90a build): the maps its ring is filled through, or null (cp.async).
// balanced_grid > 0 (a wide plan): the length-balanced grid of that many CTAs
// (attention_decode_balanced.cuh), num_splits then the workspace's slots a row.
template <typename Tag, int TPR>
cudaError_t run_decode_split(const DecodeParams& p, int rows, int row_tiles, int num_splits, int variant, bool wide,
                             const DecodeTma* tma, int balanced_grid, cudaStream_t stream) {
  const unsigned splits = static_cast<unsigned>(num_splits), heads = static_cast<unsigned>(p.heads_kv * row_tiles);
  const dim3 grid(p.grid_heads_first ? heads : splits, p.grid_heads_first ? splits : heads,
                  static_cast<unsigned>(p.batch));
  if (variant == kVariantSimt) {
    if (rows == 4)
      decode_split_kernel<Tag, TPR, 4><<<grid, kThreads, 0, stream>>>(p, row_tiles, num_splits);
    else
      decode_split_kernel<Tag, TPR, 8><<<grid, kThreads, 0, stream>>>(p, row_tiles, num_splits);
    return cudaGetLastError();
  }
  if (staged_takes<TPR>(p.head_dim, variant)) {
    constexpr int kDim = kStagedDim<TPR>;
    if constexpr (wide_built<TPR>) {
      if (wide && balanced_grid > 0) {
        if constexpr (kDecodeTmaBuilt) {
          if (tma != nullptr) return launch_balanced_rows<Tag, kDim, true>(p, rows, balanced_grid, num_splits, *tma, stream);
        }
        return launch_balanced_rows<Tag, kDim, false>(p, rows, balanced_grid, num_splits, DecodeTma{}, stream);
      }
      if constexpr (kDecodeTmaBuilt) {
        if (wide && tma != nullptr)
          return launch_staged_rows<Tag, kDim, kWideWarps, true>(p, rows, row_tiles, num_splits, grid, *tma, stream);
      }
      if (wide)
        return launch_staged_rows<Tag, kDim, kWideWarps, false>(p, rows, row_tiles, num_splits, grid, DecodeTma{}, stream);
    }
    return launch_staged_rows<Tag, kDim, kThreads / 32, false>(p, rows, row_tiles, num_splits, grid, DecodeTma{}, stream);
  }
  return rows == 4 ? launch_mma<Tag, TPR, 4>(p, row_tiles, num_splits, grid, stream)
                   : launch_mma<Tag, TPR, 8>(p, row_tiles, num_splits, grid, stream);
}

// 0 for a wide plan where the wide CTA is not built or does not fit, and for a balanced one
// (wide CTAs on the balanced grid, with its tables) likewise.
template <typename Tag, int TPR>
int decode_split_occupancy(int rows, int head_dim, int variant, bool wide, bool balanced) {
  if (balanced) {
    if constexpr (wide_built<TPR>) {
      if (staged_takes<TPR>(head_dim, variant)) return balanced_occupancy<Tag, kStagedDim<TPR>>(rows);
    }
    return 0;
  }
  if (wide) {
    if constexpr (wide_built<TPR>) {
      if (staged_takes<TPR>(head_dim, variant)) return staged_occupancy<Tag, kStagedDim<TPR>, kWideWarps>(rows);
    }
    return 0;
  }
  if (variant == kVariantSimt)
    return rows == 4 ? occupancy_of(decode_split_kernel<Tag, TPR, 4>, 0) : occupancy_of(decode_split_kernel<Tag, TPR, 8>, 0);
  if (staged_takes<TPR>(head_dim, variant)) return staged_occupancy<Tag, kStagedDim<TPR>, kThreads / 32>(rows);
  return rows == 4 ? occupancy_of(decode_mma_kernel<Tag, TPR, 4>, decode_mma_smem_bytes<4>())
                   : occupancy_of(decode_mma_kernel<Tag, TPR, 8>, decode_mma_smem_bytes<8>());
}

// The launch/combine translation unit declares the instantiations extern: each split kernel
// is compiled once, in its own translation unit.
#define KH_DECODE_EXTERN(Tag, TPR)                                                                     \
  extern template cudaError_t run_decode_split<Tag, TPR>(const DecodeParams&, int, int, int, int, bool, \
                                                         const DecodeTma*, int, cudaStream_t);          \
  extern template int decode_split_occupancy<Tag, TPR>(int, int, int, bool, bool);
#define KH_DECODE_EXTERN_ALL(Tag) \
  KH_DECODE_EXTERN(Tag, 4) KH_DECODE_EXTERN(Tag, 8) KH_DECODE_EXTERN(Tag, 16) KH_DECODE_EXTERN(Tag, 32)

#define KH_DECODE_INSTANTIATE(Tag, TPR)                                                                  \
  template cudaError_t run_decode_split<Tag, TPR>(const DecodeParams&, int, int, int, int, bool, const DecodeTma*, \
                                                  int, cudaStream_t);                                             \
  template int decode_split_occupancy<Tag, TPR>(int, int, int, bool, bool);

}  // namespace decode
}  // namespace kh_attention

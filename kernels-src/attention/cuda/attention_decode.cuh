// attention_decode.cuh: the CUDA spelling of the decode kernels' platform hooks, the shared
// kernel bodies (../src/attention_decode_kernel.inl) and their launchers. Included by one
// translation unit per (dtype, lane-group width): attention_decode_<dtype>_tpr<N>.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

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

namespace kh_attention {
namespace decode {

// Sets the dynamic shared memory limit of a kernel once (the cp.async variant needs up to
// 128 KiB); a host-side attribute, not a stream operation: safe during graph capture.
template <typename Kernel>
cudaError_t allow_smem(Kernel kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
}

template <typename Tag, int TPR, int ROWS, int MODE>
cudaError_t launch_mma(const DecodeParams& p, int row_tiles, int num_splits, const dim3& grid, cudaStream_t stream) {
  constexpr size_t bytes = decode_mma_smem_bytes<TPR, ROWS, MODE>();
  static const cudaError_t ready = allow_smem(decode_mma_kernel<Tag, TPR, ROWS, MODE>, bytes);
  if (ready != cudaSuccess) return ready;
  decode_mma_kernel<Tag, TPR, ROWS, MODE><<<grid, kThreads, bytes, stream>>>(p, row_tiles, num_splits);
  return cudaGetLastError();
}

template <typename Tag, int TPR, int ROWS, int MODE>
int mma_occupancy() {
  constexpr size_t bytes = decode_mma_smem_bytes<TPR, ROWS, MODE>();
  int blocks = 0;
  if (allow_smem(decode_mma_kernel<Tag, TPR, ROWS, MODE>, bytes) != cudaSuccess) return 1;
  const cudaError_t err =
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, decode_mma_kernel<Tag, TPR, ROWS, MODE>, kThreads, bytes);
  return err == cudaSuccess && blocks > 0 ? blocks : 1;
}

// The decode_mma_kernel mode of a split-kernel variant (not kVariantSimt).
constexpr int mma_mode(int variant) {
  return variant == kVariantAsync ? kModeAsync : variant == kVariantTensorPv ? kModeTensorPv : kModeRegs;
}

template <typename Tag, int TPR, int MODE>
cudaError_t launch_mode(const DecodeParams& p, int rows, int row_tiles, int num_splits, const dim3& grid,
                        cudaStream_t stream) {
  return rows == 4 ? launch_mma<Tag, TPR, 4, MODE>(p, row_tiles, num_splits, grid, stream)
                   : launch_mma<Tag, TPR, 8, MODE>(p, row_tiles, num_splits, grid, stream);
}

// variant: kVariantRegs (tensor-core scores, K/V through registers), kVariantTensorPv (the
// same with P V on the tensor cores too), kVariantAsync (scores on the tensor cores, a cp.async
// shared-memory ring), kVariantSimt (all CUDA cores, attention_decode_kernel.inl).
template <typename Tag, int TPR>
cudaError_t run_decode_split(const DecodeParams& p, int rows, int row_tiles, int num_splits, int variant,
                             cudaStream_t stream) {
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
  switch (mma_mode(variant)) {
    case kModeAsync: return launch_mode<Tag, TPR, kModeAsync>(p, rows, row_tiles, num_splits, grid, stream);
    case kModeTensorPv: return launch_mode<Tag, TPR, kModeTensorPv>(p, rows, row_tiles, num_splits, grid, stream);
    default: return launch_mode<Tag, TPR, kModeRegs>(p, rows, row_tiles, num_splits, grid, stream);
  }
}

template <typename Tag, int TPR>
int decode_split_occupancy(int rows, int variant) {
  if (variant == kVariantSimt) {
    int blocks = 0;
    const cudaError_t err =
        rows == 4 ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, decode_split_kernel<Tag, TPR, 4>, kThreads, 0)
                  : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, decode_split_kernel<Tag, TPR, 8>, kThreads, 0);
    return err == cudaSuccess && blocks > 0 ? blocks : 1;
  }
  switch (mma_mode(variant)) {
    case kModeAsync: return rows == 4 ? mma_occupancy<Tag, TPR, 4, kModeAsync>() : mma_occupancy<Tag, TPR, 8, kModeAsync>();
    case kModeTensorPv:
      return rows == 4 ? mma_occupancy<Tag, TPR, 4, kModeTensorPv>() : mma_occupancy<Tag, TPR, 8, kModeTensorPv>();
    default: return rows == 4 ? mma_occupancy<Tag, TPR, 4, kModeRegs>() : mma_occupancy<Tag, TPR, 8, kModeRegs>();
  }
}

// The launch/combine translation unit declares the instantiations extern: each split kernel
// is compiled once, in its own translation unit.
#define KH_DECODE_EXTERN(Tag, TPR)                                                                           \
  extern template cudaError_t run_decode_split<Tag, TPR>(const DecodeParams&, int, int, int, int, cudaStream_t); \
  extern template int decode_split_occupancy<Tag, TPR>(int, int);
#define KH_DECODE_EXTERN_ALL(Tag) \
  KH_DECODE_EXTERN(Tag, 4) KH_DECODE_EXTERN(Tag, 8) KH_DECODE_EXTERN(Tag, 16) KH_DECODE_EXTERN(Tag, 32)

#define KH_DECODE_INSTANTIATE(Tag, TPR)                                                                   \
  template cudaError_t run_decode_split<Tag, TPR>(const DecodeParams&, int, int, int, int, cudaStream_t); \
  template int decode_split_occupancy<Tag, TPR>(int, int);

}  // namespace decode
}  // namespace kh_attention

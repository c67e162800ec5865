// attention_decode_tma.cuh: the decode kernels' TMA tile loads (sm90a): each warp's ring stage is
// filled by tensor copies of K and V (16 cache rows each: two 64-dim boxes of a bf16/fp16 cache,
// one 128-dim box of an e4m3 one) whose completion one mbarrier of the stage counts, instead of
// 16 (8) cp.async a lane. Included by attention_decode_staged.cuh and attention_decode_fp8.cuh; the
// maps are built on the host per call (encode_cache_maps, attention_decode_cuda.cu) and reach the
// kernel as a __grid_constant__ parameter.
#pragma once

#include <cuda.h>  // CUtensorMap (a plain struct; no driver library is linked)

#include <cstdint>

#include "attention_cuda_common.cuh"  // mbar_wait

namespace kh_attention {
namespace decode {

// 4-D maps of the K and V caches: (head_dim, heads_kv, block_size, num_blocks), boxes of
// kTmaBoxCols dims (kTmaFp8BoxCols for e4m3) x 1 head x kTmaBoxRows rows x 1 block, 128-byte
// swizzle (a box row is one 128-byte line). Dims past the head dim come in as zeros.
struct DecodeTma {
  CUtensorMap k, v;
};
constexpr int kTmaBoxCols = 64, kTmaFp8BoxCols = 128, kTmaBoxRows = 16;
constexpr uint32_t kTmaBoxBytes = kTmaBoxCols * 2 * kTmaBoxRows;
static_assert(kTmaFp8BoxCols * kTmaBoxRows == kTmaBoxBytes, "an e4m3 box is a 16-bit box's 128-byte lines");

// Where chunk `chunk` (16 bytes) of key row `key` of a tile lands, in 16-byte units: the box of
// its 64 dims, then the row, then the chunk XORed with the row (TMA's 128-byte swizzle), so the
// 8 rows one ldmatrix reads hit 8 bank groups.
__device__ __forceinline__ int tma_tile_slot(int key, int chunk) {
  return (chunk >> 3) * (kTmaBoxBytes / 16) + key * 8 + ((chunk & 7) ^ (key & 7));
}

// The PTX below is sm_90's; the sm80 build never instantiates the TMA kernel, and these trap if
// it ever did.
__device__ __forceinline__ void tma_bar_init(uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar));
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  (void)bar;
  __trap();
#endif
}

// Lane 0 of the warp: expect the tile's bytes on bar, then its boxes: BOXES of K and as many of V,
// each kTmaBoxRows rows from `row` of cache block `block` (bf16/fp16: 2, dims 0-63 and 64-127;
// e4m3: 1, dims 0-127).
template <int BOXES>
__device__ __forceinline__ void tma_load_kv_tile(uint32_t kdst, uint32_t vdst, const DecodeTma& tma, uint32_t bar,
                                                 int head, int row, int block, uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(2 * BOXES * kTmaBoxBytes)
               : "memory");
  const CUtensorMap* maps[2] = {&tma.k, &tma.v};
  const uint32_t dst[2] = {kdst, vdst};
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int b = 0; b < BOXES; ++b)
      asm volatile(
          "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint "
          "[%0], [%1, {%2, %3, %4, %5}], [%6], %7;\n" ::"r"(dst[m] + b * kTmaBoxBytes),
          "l"(reinterpret_cast<uint64_t>(maps[m])), "r"(b * kTmaBoxCols), "r"(head), "r"(row), "r"(block), "r"(bar),
          "l"(policy)
          : "memory");
#else
  (void)kdst, (void)vdst, (void)tma, (void)bar, (void)head, (void)row, (void)block, (void)policy;
  __trap();
#endif
}

// Orders this thread's generic-proxy shared-memory writes before later TMA writes there.
__device__ __forceinline__ void tma_fence_generic_writes() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

}  // namespace decode
}  // namespace kh_attention

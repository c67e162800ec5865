// attention_cache_hip.hip: paged_kv_cache_write on gfx942 (compiled here, not run: no AMD GPU is
// reachable): one CTA a token, its threads walking the token's 16-byte chunks of key, then of value;
// a bf16/fp16 cache gets the chunk as is, an e4m3 cache its 8 bytes quantized with
// attention_fp8.hpp's rounding (x / scale in float32, nearest even, saturating), the CUDA build's
// bytes. A negative or out-of-range slot (read on the device) writes nothing.
#include <hip/hip_runtime.h>

#include <cstdint>

#include "attention_cache_gfx942.hpp"
#include "attention_fp8.hpp"

namespace kh_attention {
namespace {

constexpr int kCacheWriteThreads = 128;

__device__ __forceinline__ float to_float(uint16_t bits, bool bf16) {
  if (bf16) return __uint_as_float(static_cast<uint32_t>(bits) << 16);
  return static_cast<float>(__builtin_bit_cast(_Float16, bits));
}

template <bool BF16, bool FP8>
__global__ void __launch_bounds__(kCacheWriteThreads) cache_write_kernel(const CacheWriteParams p) {
  const int64_t t = blockIdx.x;
  const int64_t slot = p.slots_i64 ? static_cast<const int64_t*>(p.slots)[t * p.slot_stride]
                                   : static_cast<const int32_t*>(p.slots)[t * p.slot_stride];
  if (slot < 0 || slot >= p.num_blocks * p.block_size) return;
  const int64_t block = slot / p.block_size, row = slot - block * p.block_size;
  const int per_head = static_cast<int>(p.head_dim / 8);
  const int chunks = static_cast<int>(p.heads) * per_head;
  for (int i = threadIdx.x; i < 2 * chunks; i += kCacheWriteThreads) {
    const bool is_v = i >= chunks;
    const int ci = is_v ? i - chunks : i;
    const int h = ci / per_head, e0 = (ci - h * per_head) * 8;
    const uint16_t* src = static_cast<const uint16_t*>(is_v ? p.value : p.key) +
                          t * (is_v ? p.value_token_stride : p.key_token_stride) +
                          h * (is_v ? p.value_head_stride : p.key_head_stride) + e0;
    const int64_t dst_off = block * (is_v ? p.vc_block_stride : p.kc_block_stride) +
                            row * (is_v ? p.vc_row_stride : p.kc_row_stride) +
                            h * (is_v ? p.vc_head_stride : p.kc_head_stride) + e0;
    const uint4 raw = *reinterpret_cast<const uint4*>(src);
    if constexpr (FP8) {
      const float s = is_v ? p.v_scale[h * p.v_scale_stride] : p.k_scale[h * p.k_scale_stride];
      const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
      uint32_t out[2] = {0u, 0u};
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const uint16_t bits = static_cast<uint16_t>(k & 1 ? w[k / 2] >> 16 : w[k / 2] & 0xffffu);
        out[k / 4] |= static_cast<uint32_t>(float_to_e4m3(to_float(bits, BF16) / s)) << (8 * (k % 4));
      }
      *reinterpret_cast<uint2*>(static_cast<uint8_t*>(is_v ? p.v_cache : p.k_cache) + dst_off) =
          make_uint2(out[0], out[1]);
    } else {
      *reinterpret_cast<uint4*>(static_cast<uint16_t*>(is_v ? p.v_cache : p.k_cache) + dst_off) = raw;
    }
  }
}

template <bool BF16>
hipError_t launch_typed(const CacheWriteParams& p, hipStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.tokens));
  if (p.fp8)
    cache_write_kernel<BF16, true><<<grid, kCacheWriteThreads, 0, stream>>>(p);
  else
    cache_write_kernel<BF16, false><<<grid, kCacheWriteThreads, 0, stream>>>(p);
  return hipGetLastError();
}

}  // namespace

hipError_t launch_cache_write(const CacheWriteParams& p, hipStream_t stream) {
  return p.dtype == ElementType::kBF16 ? launch_typed<true>(p, stream) : launch_typed<false>(p, stream);
}

}  // namespace kh_attention

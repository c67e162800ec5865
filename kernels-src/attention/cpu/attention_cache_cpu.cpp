// attention_cache_cpu.cpp: the CPU backend of paged_kv_cache_write (1.2.0), also the test oracle:
// each mapped token's rows copied into the caches, or quantized to e4m3 (x / scale in float32,
// then attention_fp8.hpp's float_to_e4m3). slot_mapping is on the host here, so a slot past the
// caches refuses the call before anything is written (a GPU build skips such a token instead).
#include <cstring>

#include "attention_cache_args.hpp"
#include "attention_fp8.hpp"
#include "attention_ops.hpp"
#include "kh_kernel/args.hpp"
#include "kh_kernel/half.hpp"

namespace kh_attention {
namespace {

int64_t slot_of(const CacheWriteParams& p, int64_t t) {
  return p.slots_i64 ? static_cast<const int64_t*>(p.slots)[t * p.slot_stride]
                     : static_cast<const int32_t*>(p.slots)[t * p.slot_stride];
}

kh_status check_slots(const kh_kernels::OpContext& c, const CacheWriteParams& p) {
  for (int64_t t = 0; t < p.tokens; ++t) {
    const int64_t s = slot_of(p, t);
    if (s >= p.capacity())
      return kh_kernels::arg_error(c, "slot_mapping",
                                   "slot_mapping[%lld] = %lld is past the caches' %lld slots (num_blocks %lld x "
                                   "block_size %lld); nothing was written",
                                   (long long)t, (long long)s, (long long)p.capacity(), (long long)p.num_blocks,
                                   (long long)p.block_size);
  }
  return KH_OK;
}

// One token's heads of key (or value) into its cache row.
void write_rows(const CacheWriteParams& p, const unsigned char* src, int64_t src_token_stride, int64_t src_head_stride,
                unsigned char* cache, int64_t block_stride, int64_t row_stride, int64_t head_stride,
                const float* scale, int64_t scale_stride, int64_t t, int64_t slot) {
  const int64_t block = slot / p.block_size, row = slot % p.block_size;
  for (int64_t h = 0; h < p.heads; ++h) {
    const uint16_t* x = reinterpret_cast<const uint16_t*>(src) + t * src_token_stride + h * src_head_stride;
    if (!p.fp8) {
      uint16_t* dst = reinterpret_cast<uint16_t*>(cache) + block * block_stride + row * row_stride + h * head_stride;
      std::memcpy(dst, x, static_cast<size_t>(p.head_dim) * 2);
      continue;
    }
    uint8_t* dst = cache + block * block_stride + row * row_stride + h * head_stride;
    const float s = scale[h * scale_stride];
    for (int64_t e = 0; e < p.head_dim; ++e) {
      const float f = p.dtype == ElementType::kBF16 ? kh_kernels::bf16_bits_to_float(x[e])
                                                    : kh_kernels::half_bits_to_float(x[e]);
      dst[e] = float_to_e4m3(f / s);  // float32 IEEE division, as the GPU builds
    }
  }
}

}  // namespace

kh_status paged_kv_cache_write_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const kh_kernels::OpContext c{"paged_kv_cache_write", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&] {
    CacheWriteParams p;
    KH_KERNEL_TRY(parse_paged_kv_cache_write_args(args, nargs, ctx, &p));
    if (p.empty()) return KH_OK;
    KH_KERNEL_TRY(check_slots(c, p));
    for (int64_t t = 0; t < p.tokens; ++t) {
      const int64_t slot = slot_of(p, t);
      if (slot < 0) continue;
      write_rows(p, static_cast<const unsigned char*>(p.key), p.key_token_stride, p.key_head_stride,
                 static_cast<unsigned char*>(p.k_cache), p.kc_block_stride, p.kc_row_stride, p.kc_head_stride,
                 p.k_scale, p.k_scale_stride, t, slot);
      write_rows(p, static_cast<const unsigned char*>(p.value), p.value_token_stride, p.value_head_stride,
                 static_cast<unsigned char*>(p.v_cache), p.vc_block_stride, p.vc_row_stride, p.vc_head_stride,
                 p.v_scale, p.v_scale_stride, t, slot);
    }
    return KH_OK;
  });
}

}  // namespace kh_attention

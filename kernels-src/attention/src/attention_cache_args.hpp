// attention_cache_args.hpp: paged_kv_cache_write (1.2.0): its schema positions, what every backend
// takes (CacheWriteParams, plain C++: device code includes it) and the shared argument rules.
#pragma once

#include <cstdint>

#include "attention_fwd_params.hpp"  // ElementType
#include "kh/kernel_abi.h"

namespace kh_attention {

// paged_kv_cache_write(Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor key, Tensor value,
//     Tensor slot_mapping, Tensor? k_scale, Tensor? v_scale) -> ()
enum PagedKvCacheWriteArg : uint32_t {
  kCwKCache = 0,
  kCwVCache,
  kCwKey,
  kCwValue,
  kCwSlotMapping,
  kCwKScale,
  kCwVScale,
  kPagedKvCacheWriteNumArgs
};

// Head dims the op writes: multiples of kCacheWriteDimStep (16 for e4m3 caches: whole 16-byte
// chunks of the caches' rows) from kCacheWriteDimStep to kCacheWriteMaxDim.
constexpr int kCacheWriteDimStep = 8;
constexpr int kCacheWriteFp8DimStep = 16;
constexpr int64_t kCacheWriteMaxDim = 1024;

// A validated call: token t (slot s = slots[t] >= 0) goes to row s % block_size of block
// s / block_size, every head. Strides in elements of each tensor (bytes for e4m3 caches); last
// dims contiguous.
struct CacheWriteParams {
  void* k_cache = nullptr;  // (num_blocks, block_size, heads, head_dim)
  void* v_cache = nullptr;
  const void* key = nullptr;    // (tokens, heads, head_dim)
  const void* value = nullptr;
  const void* slots = nullptr;  // (tokens) int32 or int64
  bool slots_i64 = false;
  int64_t slot_stride = 1;
  int64_t kc_block_stride = 0, kc_row_stride = 0, kc_head_stride = 0;
  int64_t vc_block_stride = 0, vc_row_stride = 0, vc_head_stride = 0;
  int64_t key_token_stride = 0, key_head_stride = 0;
  int64_t value_token_stride = 0, value_head_stride = 0;
  int64_t tokens = 0, heads = 0, head_dim = 0, block_size = 0, num_blocks = 0;
  // e4m3 caches: byte = e4m3(x / scale[head * stride]) (attention_fp8.hpp's float_to_e4m3).
  bool fp8 = false;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  int64_t k_scale_stride = 0, v_scale_stride = 0;
  ElementType dtype = ElementType::kBF16;  // of key and value (and of bf16/fp16 caches)
  int device_id = 0;

  int64_t capacity() const { return num_blocks * block_size; }
  bool empty() const { return tokens == 0 || heads == 0; }
};

kh_status parse_paged_kv_cache_write_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                          CacheWriteParams* p);

}  // namespace kh_attention

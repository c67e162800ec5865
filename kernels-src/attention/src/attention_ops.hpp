// attention_ops.hpp: the op entry points of the attention package. module.cpp lists them in the
// op table; exactly one backend file per library defines each (cpu/, cuda/, hip/), starting
// with the op's parse function (attention_args.hpp, attention_decode_args.hpp).
#pragma once

#include <cstdint>

#include "kh/kernel_abi.h"

namespace kh_attention {

kh_status attention_fwd_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);
// attention_decode_paged (1.1.0): decode over a paged KV cache; parse_attention_decode_args() first.
kh_status attention_decode_paged_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);
// attention_varlen_fwd (1.1.0): packed variable-length prefill; parse_attention_varlen_fwd_args() first.
kh_status attention_varlen_fwd_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);
// 1.2.0, FP8: attention_decode_paged over e4m3 caches (parse_attention_decode_fp8_args first),
// attention_varlen_fwd with e4m3 k/v (and q) (parse_attention_varlen_fwd_fp8_args first), and the
// cache write (parse_paged_kv_cache_write_args first, attention_cache_args.hpp).
kh_status attention_decode_paged_fp8_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);
kh_status attention_varlen_fwd_fp8_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);
kh_status paged_kv_cache_write_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);

}  // namespace kh_attention

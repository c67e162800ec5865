// attention_ops.hpp: the op entry point of the attention package. module.cpp lists it in the
// op table; exactly one backend file per library defines it (cpu/attention_cpu.cpp,
// cuda/attention_cuda.cu, hip/...), starting with parse_attention_fwd_args().
#pragma once

#include <cstdint>

#include "kh/kernel_abi.h"

namespace kh_attention {

kh_status attention_fwd_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);
// attention_decode_paged (1.1.0): decode over a paged KV cache; parse_attention_decode_args() first.
kh_status attention_decode_paged_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);

}  // namespace kh_attention

// attention_decode_args.hpp: the backend-independent argument rules of attention_decode_paged.
// Every backend's entry calls parse_attention_decode_args() first and computes from the
// params only (attention_decode_params.hpp says what they mean).
#pragma once

#include <cstdint>

#include "attention_decode_params.hpp"
#include "kh/kernel_abi.h"

namespace kh_attention {

// Schema positions.
// attention_decode_paged(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k_cache,
//     Tensor v_cache, Tensor block_table, Tensor seq_lens, Tensor(c!) workspace, float scale,
//     int window_left, float softcap) -> ()
enum AttentionDecodeArg : uint32_t {
  kDecOut = 0,
  kDecLse,
  kDecQ,
  kDecKCache,
  kDecVCache,
  kDecBlockTable,
  kDecSeqLens,
  kDecWorkspace,
  kDecScale,
  kDecWindowLeft,
  kDecSoftcap,
  kAttentionDecodeNumArgs
};

// Head dims of the decode op: every multiple of 8 from 32 to 256 (attention_decode_params.hpp).
constexpr bool attention_decode_supports_head_dim(int64_t head_dim) {
  return head_dim >= kDecodeMinHeadDim && head_dim <= kDecodeMaxHeadDim && head_dim % 8 == 0;
}

kh_status parse_attention_decode_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                      DecodeParams* p);

}  // namespace kh_attention

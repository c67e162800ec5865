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

// attention_decode_paged_fp8 (1.2.0): the same with e4m3 caches and their descale factors.
// attention_decode_paged_fp8(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k_cache,
//     Tensor v_cache, Tensor k_scale, Tensor v_scale, Tensor block_table, Tensor seq_lens,
//     Tensor(c!) workspace, float scale, int window_left, float softcap) -> ()
enum AttentionDecodeFp8Arg : uint32_t {
  kDf8Out = 0,
  kDf8Lse,
  kDf8Q,
  kDf8KCache,
  kDf8VCache,
  kDf8KScale,
  kDf8VScale,
  kDf8BlockTable,
  kDf8SeqLens,
  kDf8Workspace,
  kDf8Scale,
  kDf8WindowLeft,
  kDf8Softcap,
  kAttentionDecodeFp8NumArgs
};

// Head dims of the decode op: every multiple of 8 from 32 to 256 (attention_decode_params.hpp).
constexpr bool attention_decode_supports_head_dim(int64_t head_dim) {
  return head_dim >= kDecodeMinHeadDim && head_dim <= kDecodeMaxHeadDim && head_dim % 8 == 0;
}

kh_status parse_attention_decode_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                      DecodeParams* p);
// attention_decode_paged_fp8: the same rules but uint8 (e4m3) caches, head dims in steps of 16,
// and k_scale / v_scale (p->kv_fp8, p->k_scale, p->v_scale).
kh_status parse_attention_decode_fp8_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                          DecodeParams* p);

// The ops' workspace-size queries (kh_op_workspace_fn): the bytes of float32 scratch a call
// with these arguments needs (decode_workspace_floats), the arguments checked as a call
// checks them except for data, which may be NULL, and the workspace, which may be absent.
kh_status attention_decode_paged_workspace(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                           uint64_t* bytes);
kh_status attention_decode_paged_fp8_workspace(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                               uint64_t* bytes);

}  // namespace kh_attention

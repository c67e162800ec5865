// attention_args.hpp: the backend-independent argument rules of attention_fwd. Every
// backend's entry function calls parse_attention_fwd_args() first and computes from the
// params only.
#pragma once

#include <cstdint>

#include "kh/kernel_abi.h"
#include "kh_kernel/args.hpp"
#include "kh_kernel/tensor.hpp"

namespace kh_attention {

// Schema positions.
// attention_fwd(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v, float scale,
//               bool causal) -> ()
enum AttentionFwdArg : uint32_t { kOut = 0, kLse, kQ, kK, kV, kScale, kCausal, kAttentionFwdNumArgs };

constexpr uint32_t kAttentionDtypes = KH_DTYPE_F16 | KH_DTYPE_BF16;

// Head dims every backend implements; others are refused with KH_ERROR_UNSUPPORTED.
constexpr bool attention_supports_head_dim(int64_t head_dim) {
  return head_dim == 64 || head_dim == 128 || head_dim == 256;
}

// A validated attention_fwd call:
//   out[b, i, h, :] = softmax_j(scale * q[b, i, h, :] . k[b, j, h / group, :]) @ v[b, j, h / group, :]
// with group = heads_q / heads_kv. causal: query i sees keys j <= i + seqlen_k - seqlen_q
// (bottom-right aligned, as FlashAttention-2); a row that sees no key gets out = 0 and
// lse = -inf. lse[b, h, i] = log(sum_j exp(s_ij)) in natural log of the scaled scores.
// Strides are in elements; each tensor's last dim is contiguous. out never overlaps q, k, v
// or lse.
struct AttentionParams {
  void* out = nullptr;      // (batch, seqlen_q, heads_q, head_dim), dtype
  float* lse = nullptr;     // (batch, heads_q, seqlen_q) fp32 contiguous, or NULL: not wanted
  const void* q = nullptr;  // (batch, seqlen_q, heads_q, head_dim), dtype
  const void* k = nullptr;  // (batch, seqlen_k, heads_kv, head_dim), dtype
  const void* v = nullptr;  // (batch, seqlen_k, heads_kv, head_dim), dtype

  int64_t q_batch_stride = 0, q_row_stride = 0, q_head_stride = 0;
  int64_t k_batch_stride = 0, k_row_stride = 0, k_head_stride = 0;
  int64_t v_batch_stride = 0, v_row_stride = 0, v_head_stride = 0;
  int64_t o_batch_stride = 0, o_row_stride = 0, o_head_stride = 0;
  int64_t lse_batch_stride = 0, lse_head_stride = 0, lse_row_stride = 0;  // contiguous: hq*sq, sq, 1

  int64_t batch = 0;
  int64_t seqlen_q = 0;  // may differ from seqlen_k; 0: nothing to do
  int64_t seqlen_k = 0;  // 0: every row is fully masked
  int64_t heads_q = 0;   // >= 1, a multiple of heads_kv
  int64_t heads_kv = 0;  // >= 1
  int64_t head_dim = 0;  // 64, 128 or 256
  double scale = 1.0;    // finite; any sign
  bool causal = false;
  kh_kernels::DType dtype = kh_kernels::DType::kUnknown;  // F16 or BF16, of q, k, v and out
  DLDevice device = {kDLCPU, 0};

  // Nothing to compute (empty output).
  bool empty() const { return batch == 0 || seqlen_q == 0; }
};

kh_status parse_attention_fwd_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                   AttentionParams* p);

// A tensor that must look like q (both attention ops check their k/v or caches and out so):
// four dimensions, q's device and dtype, the last dimension contiguous.
struct LikeQ {
  const char* name;
  const kh_kernels::TensorView* view;
};
template <size_t N>
kh_status check_like_q(const kh_kernels::OpContext& c, const kh_kernels::TensorView& q, const LikeQ (&others)[N]) {
  for (const LikeQ& t : others) {
    KH_KERNEL_TRY(kh_kernels::check_same_device(c, t.name, *t.view, "q", q));
    KH_KERNEL_TRY(kh_kernels::check_same_dtype(c, t.name, *t.view, "q", q));
    KH_KERNEL_TRY(kh_kernels::check_ndim(c, t.name, *t.view, 4, 4));
    KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, t.name, *t.view));
  }
  return KH_OK;
}

}  // namespace kh_attention

// attention_args.hpp: the backend-independent argument rules of the prefill ops attention_fwd
// and attention_varlen_fwd. Every backend's entry function calls parse_attention_fwd_args() or
// parse_attention_varlen_fwd_args() first and computes from the params only.
#pragma once

#include <cstdint>

#include "attention_fwd_params.hpp"
#include "kh/kernel_abi.h"
#include "kh_kernel/args.hpp"
#include "kh_kernel/tensor.hpp"

namespace kh_attention {

// Schema positions.
// attention_fwd(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v, float scale,
//               bool causal) -> ()
enum AttentionFwdArg : uint32_t { kOut = 0, kLse, kQ, kK, kV, kScale, kCausal, kAttentionFwdNumArgs };
// attention_varlen_fwd(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v,
//     Tensor cu_seqlens_q, Tensor cu_seqlens_k, int max_seqlen_q, int max_seqlen_k, float scale,
//     bool causal, int window_left, float softcap) -> ()
// (out, lse, q, k, v sit where attention_fwd has them.)
enum AttentionVarlenArg : uint32_t {
  kVarCuSeqlensQ = kV + 1,
  kVarCuSeqlensK,
  kVarMaxSeqlenQ,
  kVarMaxSeqlenK,
  kVarScale,
  kVarCausal,
  kVarWindowLeft,
  kVarSoftcap,
  kAttentionVarlenNumArgs
};

// attention_varlen_fwd_fp8(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v,
//     Tensor? q_scale, Tensor k_scale, Tensor v_scale, Tensor cu_seqlens_q, Tensor cu_seqlens_k,
//     int max_seqlen_q, int max_seqlen_k, float scale, bool causal, int window_left,
//     float softcap, Tensor(c!)? workspace) -> ()   (1.2.0; out, lse, q, k, v where attention_fwd
//     has them)
enum AttentionVarlenFp8Arg : uint32_t {
  kVf8QScale = kV + 1,
  kVf8KScale,
  kVf8VScale,
  kVf8CuSeqlensQ,
  kVf8CuSeqlensK,
  kVf8MaxSeqlenQ,
  kVf8MaxSeqlenK,
  kVf8Scale,
  kVf8Causal,
  kVf8WindowLeft,
  kVf8Softcap,
  kVf8Workspace,
  kAttentionVarlenFp8NumArgs
};

constexpr uint32_t kAttentionDtypes = KH_DTYPE_F16 | KH_DTYPE_BF16;

// Head dims every backend implements (others are refused with KH_ERROR_UNSUPPORTED): q and k
// any multiple of 8 from 32 to 256, v and out the same, or 128 with q and k at 192 (the
// "192/128" of multi-head latent attention prefill).
constexpr bool attention_supports_head_dim(int64_t head_dim) {
  return head_dim >= 32 && head_dim <= 256 && head_dim % 8 == 0;
}
constexpr bool attention_supports_head_dims(int64_t head_dim, int64_t head_dim_v) {
  return attention_supports_head_dim(head_dim) && (head_dim_v == head_dim || (head_dim == 192 && head_dim_v == 128));
}

// A validated prefill call, of either op:
//   out[b, i, h, :] = sum_j softmax_j(s_ij) v[b, j, h / group, :]  over the keys j row i sees,
//   s_ij = scale * q[b, i, h, :] . k[b, j, h / group, :], then softcap * tanh(s_ij / softcap)
//   when softcap > 0,
// with group = heads_q / heads_kv; row i sees the keys visible_keys() names
// (attention_visibility.hpp: causal bottom-right aligned, window to the left). A row that sees
// no key gets out = 0 and lse = -inf; lse = log(sum_j exp(s_ij)) (natural log of the scores as
// the softmax takes them). Strides are in elements; each tensor's last dim is contiguous. out
// and lse never overlap q, k, v, cu_seqlens or each other.
// attention_varlen_fwd: sequence b's rows come from cu_seqlens (seq_bounds), the batch
// strides are 0, seqlen_q / seqlen_k are max_seqlen_q / max_seqlen_k.
struct AttentionParams {
  void* out = nullptr;      // (batch, seqlen_q, heads_q, head_dim_v) / (total_q, heads_q, head_dim_v)
  float* lse = nullptr;     // (batch, heads_q, seqlen_q) / (heads_q, total_q) fp32 contiguous, or NULL
  const void* q = nullptr;  // (batch, seqlen_q, heads_q, head_dim) / (total_q, heads_q, head_dim)
  const void* k = nullptr;  // (batch, seqlen_k, heads_kv, head_dim) / (total_k, heads_kv, head_dim)
  const void* v = nullptr;  // (batch, seqlen_k, heads_kv, head_dim_v) / (total_k, heads_kv, head_dim_v)
  const int32_t* cu_seqlens_q = nullptr;  // varlen only: (batch + 1) int32
  const int32_t* cu_seqlens_k = nullptr;

  int64_t q_batch_stride = 0, q_row_stride = 0, q_head_stride = 0;
  int64_t k_batch_stride = 0, k_row_stride = 0, k_head_stride = 0;
  int64_t v_batch_stride = 0, v_row_stride = 0, v_head_stride = 0;
  int64_t o_batch_stride = 0, o_row_stride = 0, o_head_stride = 0;
  int64_t lse_batch_stride = 0, lse_head_stride = 0, lse_row_stride = 0;
  int64_t cu_seqlens_q_stride = 1, cu_seqlens_k_stride = 1;

  int64_t batch = 0;
  int64_t seqlen_q = 0;  // attention_fwd: may differ from seqlen_k; 0: nothing to do. varlen: max_seqlen_q
  int64_t seqlen_k = 0;  // attention_fwd: 0: every row is fully masked. varlen: max_seqlen_k
  int64_t total_q = 0;   // varlen: packed rows of q and out
  int64_t total_k = 0;   // varlen: packed rows of k and v
  int64_t heads_q = 0;   // >= 1, a multiple of heads_kv
  int64_t heads_kv = 0;  // >= 1
  int64_t head_dim = 0;    // of q and k: attention_supports_head_dims
  int64_t head_dim_v = 0;  // of v and out
  int64_t window_left = -1;  // -1: none; else >= 0
  double scale = 1.0;    // finite; any sign
  double softcap = 0.0;  // 0: none; else > 0
  bool causal = false;
  kh_kernels::DType dtype = kh_kernels::DType::kUnknown;  // F16 or BF16, of out (and of q, k, v but in FP8)
  // attention_varlen_fwd_fp8 (1.2): k and v hold e4m3 bytes (strides in bytes), and q too when
  // q_fp8; the dequantized values are e4m3 * <x>_scale[kv head * <x>_scale_stride] (stride 0: one
  // factor). The scales live on the tensors' device.
  bool kv_fp8 = false;
  bool q_fp8 = false;
  const float* q_scale = nullptr;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  int64_t q_scale_stride = 0, k_scale_stride = 0, v_scale_stride = 0;
  // attention_varlen_fwd_fp8's optional workspace (uint8, at least fp8_prefill_workspace_bytes when
  // q is e4m3), or null: where the sm90a build's FP8 prefill transposes V (attention_fp8_vt.hpp).
  void* workspace = nullptr;
  DLDevice device = {kDLCPU, 0};

  bool varlen() const { return cu_seqlens_q != nullptr; }
  // Nothing to compute (empty output).
  bool empty() const { return batch == 0 || seqlen_q == 0 || (varlen() && total_q == 0); }
};

kh_status parse_attention_fwd_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                   AttentionParams* p);
kh_status parse_attention_varlen_fwd_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                          AttentionParams* p);
kh_status parse_attention_varlen_fwd_fp8_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                              AttentionParams* p);

// The GPU kernels' view of a validated call (sizes narrowed to int: the GPU entries check the
// limits first).
FwdLaunchParams launch_params(const AttentionParams& a);

// The workspace attention_varlen_fwd_fp8 uses for a call: the transposed V of an FP8 prefill
// (e4m3 q) on the sm90a build where the pre-pass pays (vt_pays, attention_fp8_vt.hpp), else none
// (0 bytes: the CPU and sm80 builds, an FP8-KV call, a shape below vt_pays's bar). The launch uses
// the workspace exactly when this is not 0, so the size check and the launch cannot disagree.
int64_t fp8_prefill_workspace_bytes(const AttentionParams& a);
kh_status attention_varlen_fwd_fp8_workspace(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                             uint64_t* bytes);

// A tensor that must look like q (the attention ops check their k/v or caches and out so): q's
// rank, device and dtype, the last dimension contiguous.
struct LikeQ {
  const char* name;
  const kh_kernels::TensorView* view;
};
template <size_t N>
kh_status check_like_q(const kh_kernels::OpContext& c, const kh_kernels::TensorView& q, const LikeQ (&others)[N]) {
  for (const LikeQ& t : others) {
    KH_KERNEL_TRY(kh_kernels::check_same_device(c, t.name, *t.view, "q", q));
    KH_KERNEL_TRY(kh_kernels::check_same_dtype(c, t.name, *t.view, "q", q));
    KH_KERNEL_TRY(kh_kernels::check_ndim(c, t.name, *t.view, q.ndim, q.ndim));
    KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, t.name, *t.view));
  }
  return KH_OK;
}

}  // namespace kh_attention

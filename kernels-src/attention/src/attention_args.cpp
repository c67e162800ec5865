// attention_args.cpp: the rules of attention_fwd's arguments (shapes, dtypes, strides, head
// dims, memory overlap). KH_DEVICE_TYPE comes from the library's variant.
#include "attention_args.hpp"

#include "kh_kernel/args.hpp"

namespace kh_attention {

using kh_kernels::Alias;
using kh_kernels::arg_error;
using kh_kernels::Presence;
using kh_kernels::TensorView;

kh_status parse_attention_fwd_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                   AttentionParams* p) {
  *p = AttentionParams{};
  const kh_kernels::OpContext c{"attention_fwd", ctx, KH_DEVICE_TYPE};
  KH_KERNEL_TRY(kh_kernels::check_nargs(c, args, nargs, kAttentionFwdNumArgs));

  TensorView out, lse, q, k, v;
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kQ, "q", Presence::kRequired, &q));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, "q", q, kAttentionDtypes));
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, "q", q, 4, 4));
  KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, "q", q));
  const int64_t batch = q.size(0), seqlen_q = q.size(1), heads_q = q.size(2), head_dim = q.size(3);
  if (heads_q < 1) return arg_error(c, "q", "heads_q (dim 2) must be >= 1, got %lld", (long long)heads_q);
  if (!attention_supports_head_dim(head_dim))
    return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED,
                               "argument 'q': head_dim %lld is not supported (supported: 64, 128, 256)",
                               (long long)head_dim);

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kK, "k", Presence::kRequired, &k));
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kV, "v", Presence::kRequired, &v));
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kOut, "out", Presence::kRequired, &out));
  const LikeQ others[] = {{"k", &k}, {"v", &v}, {"out", &out}};
  KH_KERNEL_TRY(check_like_q(c, q, others));
  KH_KERNEL_TRY(kh_kernels::check_same_shape(c, "out", out, "q", q));
  const int64_t seqlen_k = k.size(1), heads_kv = k.size(2);
  if (k.size(0) != batch || k.size(3) != head_dim)
    return arg_error(c, "k", "shape %s does not fit q's shape %s: batch (dim 0) and head_dim (dim 3) must match",
                     kh_kernels::shape_string(k).c_str(), kh_kernels::shape_string(q).c_str());
  KH_KERNEL_TRY(kh_kernels::check_same_shape(c, "v", v, "k", k));
  if (heads_kv < 1) return arg_error(c, "k", "heads_kv (dim 2) must be >= 1, got %lld", (long long)heads_kv);
  if (heads_q % heads_kv != 0)
    return arg_error(c, "k", "heads_kv %lld does not divide q's heads_q %lld (GQA needs a whole group per kv head)",
                     (long long)heads_kv, (long long)heads_q);

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kLse, "lse", Presence::kOptional, &lse));
  if (lse.present()) {
    KH_KERNEL_TRY(kh_kernels::check_same_device(c, "lse", lse, "q", q));
    KH_KERNEL_TRY(kh_kernels::check_dtype(c, "lse", lse, KH_DTYPE_F32));
    if (lse.ndim != 3 || lse.shape[0] != batch || lse.shape[1] != heads_q || lse.shape[2] != seqlen_q)
      return arg_error(c, "lse", "shape %s does not match (batch, heads_q, seqlen_q) = [%lld, %lld, %lld]",
                       kh_kernels::shape_string(lse).c_str(), (long long)batch, (long long)heads_q,
                       (long long)seqlen_q);
    KH_KERNEL_TRY(kh_kernels::check_contiguous(c, "lse", lse));
  }

  double scale = 0;
  KH_KERNEL_TRY(kh_kernels::double_arg(c, args, kScale, "scale", &scale));
  KH_KERNEL_TRY(kh_kernels::check_finite(c, "scale", scale));
  bool causal = false;
  KH_KERNEL_TRY(kh_kernels::bool_arg(c, args, kCausal, "causal", &causal));

  // Outputs share no memory with anything: blocks of a GPU kernel read q, k and v while
  // others already write out.
  KH_KERNEL_TRY(kh_kernels::check_no_overlap(c, "out", out, "lse", lse, Alias::kForbidden));
  const struct {
    const char* name;
    const TensorView* view;
  } inputs[] = {{"q", &q}, {"k", &k}, {"v", &v}};
  for (const auto& in : inputs) {
    KH_KERNEL_TRY(kh_kernels::check_no_overlap(c, "out", out, in.name, *in.view, Alias::kForbidden));
    KH_KERNEL_TRY(kh_kernels::check_no_overlap(c, "lse", lse, in.name, *in.view, Alias::kForbidden));
  }

  p->out = out.data;
  p->lse = lse.present() ? lse.ptr<float>() : nullptr;
  p->q = q.data;
  p->k = k.data;
  p->v = v.data;
  p->q_batch_stride = q.strides[0], p->q_row_stride = q.strides[1], p->q_head_stride = q.strides[2];
  p->k_batch_stride = k.strides[0], p->k_row_stride = k.strides[1], p->k_head_stride = k.strides[2];
  p->v_batch_stride = v.strides[0], p->v_row_stride = v.strides[1], p->v_head_stride = v.strides[2];
  p->o_batch_stride = out.strides[0], p->o_row_stride = out.strides[1], p->o_head_stride = out.strides[2];
  p->lse_batch_stride = heads_q * seqlen_q, p->lse_head_stride = seqlen_q, p->lse_row_stride = 1;
  p->batch = batch;
  p->seqlen_q = seqlen_q;
  p->seqlen_k = seqlen_k;
  p->heads_q = heads_q;
  p->heads_kv = heads_kv;
  p->head_dim = head_dim;
  p->scale = scale;
  p->causal = causal;
  p->dtype = q.dtype;
  p->device = q.device;
  return KH_OK;
}

}  // namespace kh_attention

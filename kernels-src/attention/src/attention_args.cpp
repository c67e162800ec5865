// attention_args.cpp: the rules of the prefill ops' arguments (shapes, dtypes, strides, head
// dims, cu_seqlens, lengths, window, soft-cap, memory overlap), shared by attention_fwd and
// attention_varlen_fwd. KH_DEVICE_TYPE comes from the library's variant. Nothing here reads
// tensor data: cu_seqlens stay on the device, so a call needs no host synchronisation.
#include "attention_args.hpp"

#include <climits>
#include <string>

#include "attention_fp8_args.hpp"
#include "attention_fp8_vt.hpp"
#include "kh_kernel/args.hpp"

namespace kh_attention {

using kh_kernels::Alias;
using kh_kernels::arg_error;
using kh_kernels::OpContext;
using kh_kernels::Presence;
using kh_kernels::TensorView;

namespace {

struct Named {
  const char* name;
  const TensorView* view;
};

// q, k, v, out and lse of either op: rank 4 (batch, seqlen, heads, dim) for attention_fwd,
// rank 3 (total, heads, dim) for attention_varlen_fwd. lse is read and its kind checked here;
// its shape differs per op.
struct PrefillTensors {
  TensorView out, lse, q, k, v;
  int64_t heads_q = 0, heads_kv = 0, head_dim = 0, head_dim_v = 0;
};

// fp8 (attention_varlen_fwd_fp8): k and v are uint8 e4m3 bytes; q is bf16/fp16 (out then q's
// dtype) or e4m3 too (out bf16 or fp16); head dims in steps of 16, head_dim_v = head_dim.
kh_status check_prefill_tensors(const OpContext& c, const kh_value* args, uint32_t nargs, uint32_t expected_nargs,
                                int32_t rank, bool fp8, PrefillTensors* t) {
  KH_KERNEL_TRY(kh_kernels::check_nargs(c, args, nargs, expected_nargs));
  TensorView& q = t->q;
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kQ, "q", Presence::kRequired, &q));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, "q", q, fp8 ? kAttentionDtypes | KH_DTYPE_U8 : kAttentionDtypes));
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, "q", q, rank, rank));
  KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, "q", q));
  t->heads_q = q.size(rank - 2);
  t->head_dim = q.size(rank - 1);
  if (t->heads_q < 1)
    return arg_error(c, "q", "heads_q (dim %d) must be >= 1, got %lld", rank - 2, (long long)t->heads_q);
  if (!attention_supports_head_dim(t->head_dim) || (fp8 && t->head_dim % 16 != 0))
    return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED,
                                "argument 'q': head_dim %lld is not supported (supported: multiples of %d from 32 "
                                "to 256)",
                                (long long)t->head_dim, fp8 ? 16 : 8);

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kK, "k", Presence::kRequired, &t->k));
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kV, "v", Presence::kRequired, &t->v));
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kOut, "out", Presence::kRequired, &t->out));
  if (fp8) {
    const bool q_fp8 = q.dtype == kh_kernels::DType::kU8;
    for (const Named& x : {Named{"k", &t->k}, Named{"v", &t->v}, Named{"out", &t->out}}) {
      KH_KERNEL_TRY(kh_kernels::check_same_device(c, x.name, *x.view, "q", q));
      KH_KERNEL_TRY(kh_kernels::check_ndim(c, x.name, *x.view, q.ndim, q.ndim));
      KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, x.name, *x.view));
    }
    KH_KERNEL_TRY(check_e4m3(c, "k", t->k));
    KH_KERNEL_TRY(check_e4m3(c, "v", t->v));
    if (q_fp8) KH_KERNEL_TRY(kh_kernels::check_dtype(c, "out", t->out, kAttentionDtypes));
    else KH_KERNEL_TRY(kh_kernels::check_same_dtype(c, "out", t->out, "q", q));
  } else {
    const LikeQ others[] = {{"k", &t->k}, {"v", &t->v}, {"out", &t->out}};
    KH_KERNEL_TRY(check_like_q(c, q, others));
  }
  const TensorView &k = t->k, &v = t->v, &out = t->out;
  if ((rank == 4 && k.size(0) != q.size(0)) || k.size(rank - 1) != t->head_dim)
    return arg_error(c, "k", "shape %s does not fit q's shape %s: %shead_dim (last dim) must match",
                     kh_kernels::shape_string(k).c_str(), kh_kernels::shape_string(q).c_str(),
                     rank == 4 ? "batch (dim 0) and " : "");
  t->heads_kv = k.size(rank - 2);
  if (t->heads_kv < 1)
    return arg_error(c, "k", "heads_kv (dim %d) must be >= 1, got %lld", rank - 2, (long long)t->heads_kv);
  if (t->heads_q % t->heads_kv != 0)
    return arg_error(c, "k", "heads_kv %lld does not divide q's heads_q %lld (GQA needs a whole group per kv head)",
                     (long long)t->heads_kv, (long long)t->heads_q);
  for (int32_t d = 0; d + 1 < rank; ++d)
    if (v.size(d) != k.size(d))
      return arg_error(c, "v", "shape %s does not fit k's shape %s: every dim but the last (head_dim_v) must match",
                       kh_kernels::shape_string(v).c_str(), kh_kernels::shape_string(k).c_str());
  t->head_dim_v = v.size(rank - 1);
  if (!attention_supports_head_dims(t->head_dim, t->head_dim_v) || (fp8 && t->head_dim_v != t->head_dim))
    return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED,
                                "argument 'v': head_dim_v (last dim) %lld with head_dim %lld is not supported "
                                "(supported: head_dim_v equal to head_dim, or 128 with head_dim 192 but in the FP8 op)",
                                (long long)t->head_dim_v, (long long)t->head_dim);
  bool out_fits = out.size(rank - 1) == t->head_dim_v;
  for (int32_t d = 0; d + 1 < rank; ++d) out_fits = out_fits && out.size(d) == q.size(d);
  if (!out_fits)
    return arg_error(c, "out", "shape %s does not fit q's shape %s with v's last dim %lld",
                     kh_kernels::shape_string(out).c_str(), kh_kernels::shape_string(q).c_str(),
                     (long long)t->head_dim_v);

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kLse, "lse", Presence::kOptional, &t->lse));
  if (t->lse.present()) {
    KH_KERNEL_TRY(kh_kernels::check_same_device(c, "lse", t->lse, "q", q));
    KH_KERNEL_TRY(kh_kernels::check_dtype(c, "lse", t->lse, KH_DTYPE_F32));
  }
  return KH_OK;
}

// lse has exactly `shape` (named in `what` for the message) and is contiguous.
template <size_t N>
kh_status check_lse_shape(const OpContext& c, const TensorView& lse, const int64_t (&shape)[N], const char* what) {
  if (!lse.present()) return KH_OK;
  bool same = lse.ndim == static_cast<int32_t>(N);
  for (size_t d = 0; same && d < N; ++d) same = lse.shape[d] == shape[d];
  if (!same) {
    std::string want = "[";
    for (size_t d = 0; d < N; ++d) want += (d ? ", " : "") + std::to_string(shape[d]);
    return arg_error(c, "lse", "shape %s does not match %s = %s]", kh_kernels::shape_string(lse).c_str(), what,
                     want.c_str());
  }
  return kh_kernels::check_contiguous(c, "lse", lse);
}

// Outputs share no memory with any input or with each other: blocks of a GPU kernel read the
// inputs while others already write.
template <size_t NO, size_t NI>
kh_status check_outputs_apart(const OpContext& c, const Named (&outputs)[NO], const Named (&inputs)[NI]) {
  for (size_t i = 0; i < NO; ++i) {
    for (const Named& in : inputs)
      KH_KERNEL_TRY(kh_kernels::check_no_overlap(c, outputs[i].name, *outputs[i].view, in.name, *in.view,
                                                 Alias::kForbidden));
    for (size_t j = i + 1; j < NO; ++j)
      KH_KERNEL_TRY(kh_kernels::check_no_overlap(c, outputs[i].name, *outputs[i].view, outputs[j].name,
                                                 *outputs[j].view, Alias::kForbidden));
  }
  return KH_OK;
}

kh_status scale_and_causal(const OpContext& c, const kh_value* args, uint32_t scale_at, uint32_t causal_at,
                           AttentionParams* p) {
  KH_KERNEL_TRY(kh_kernels::double_arg(c, args, scale_at, "scale", &p->scale));
  KH_KERNEL_TRY(kh_kernels::check_finite(c, "scale", p->scale));
  return kh_kernels::bool_arg(c, args, causal_at, "causal", &p->causal);
}

// An int argument in [lo, hi]; `rule` says what is allowed, for the message.
kh_status bounded_int_arg(const OpContext& c, const kh_value* args, uint32_t index, const char* name, int64_t lo,
                          int64_t hi, const char* rule, int64_t* out) {
  const kh_value& v = args[index];
  if (v.kind != KH_VALUE_INT) return arg_error(c, name, "expected an int, got value kind %u", v.kind);
  if (v.u.i < lo || v.u.i > hi) return arg_error(c, name, "must be %s, got %lld", rule, (long long)v.u.i);
  *out = v.u.i;
  return KH_OK;
}

// A cu_seqlens tensor: int32, one dim, on q's device; its length is checked by the caller.
kh_status cu_seqlens_arg(const OpContext& c, const kh_value* args, uint32_t index, const char* name,
                         const TensorView& q, TensorView* t) {
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, index, name, Presence::kRequired, t));
  KH_KERNEL_TRY(kh_kernels::check_same_device(c, name, *t, "q", q));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, name, *t, KH_DTYPE_I32));
  return kh_kernels::check_ndim(c, name, *t, 1, 1);
}

// The tensors' pointers, strides and head counts: rank 4 (batch, row, head, dim), rank 3
// (row, head, dim) with batch strides 0.
void fill_tensors(const PrefillTensors& t, AttentionParams* p) {
  const int b = t.q.ndim == 4 ? 1 : 0;  // where the row dim is
  const struct {
    const TensorView& view;
    int64_t *batch, *row, *head;
  } strided[] = {{t.q, &p->q_batch_stride, &p->q_row_stride, &p->q_head_stride},
                 {t.k, &p->k_batch_stride, &p->k_row_stride, &p->k_head_stride},
                 {t.v, &p->v_batch_stride, &p->v_row_stride, &p->v_head_stride},
                 {t.out, &p->o_batch_stride, &p->o_row_stride, &p->o_head_stride}};
  for (const auto& x : strided) {
    *x.batch = b ? x.view.strides[0] : 0;
    *x.row = x.view.strides[b];
    *x.head = x.view.strides[b + 1];
  }
  p->out = t.out.data;
  p->lse = t.lse.present() ? t.lse.ptr<float>() : nullptr;
  p->q = t.q.data;
  p->k = t.k.data;
  p->v = t.v.data;
  p->heads_q = t.heads_q;
  p->heads_kv = t.heads_kv;
  p->head_dim = t.head_dim;
  p->head_dim_v = t.head_dim_v;
  p->dtype = t.q.dtype;
  p->device = t.q.device;
}

}  // namespace

kh_status parse_attention_fwd_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                   AttentionParams* p) {
  *p = AttentionParams{};
  const OpContext c{"attention_fwd", ctx, KH_DEVICE_TYPE};
  PrefillTensors t;
  KH_KERNEL_TRY(check_prefill_tensors(c, args, nargs, kAttentionFwdNumArgs, 4, false, &t));
  const TensorView &q = t.q, &k = t.k, &v = t.v, &out = t.out;
  const int64_t batch = q.size(0), seqlen_q = q.size(1);
  const int64_t lse_shape[] = {batch, t.heads_q, seqlen_q};
  KH_KERNEL_TRY(check_lse_shape(c, t.lse, lse_shape, "(batch, heads_q, seqlen_q)"));
  KH_KERNEL_TRY(scale_and_causal(c, args, kScale, kCausal, p));
  const Named outputs[] = {{"out", &out}, {"lse", &t.lse}};
  const Named inputs[] = {{"q", &q}, {"k", &k}, {"v", &v}};
  KH_KERNEL_TRY(check_outputs_apart(c, outputs, inputs));

  fill_tensors(t, p);
  p->lse_batch_stride = t.heads_q * seqlen_q, p->lse_head_stride = seqlen_q, p->lse_row_stride = 1;
  p->batch = batch;
  p->seqlen_q = seqlen_q;
  p->seqlen_k = k.size(1);
  return KH_OK;
}

namespace {

// Where attention_varlen_fwd's and attention_varlen_fwd_fp8's arguments after v sit.
struct VarlenArgAt {
  uint32_t cu_q, cu_k, max_q, max_k, scale, causal, window_left, softcap, nargs;
  uint32_t q_scale, k_scale, v_scale, workspace;  // fp8 only
};
constexpr VarlenArgAt kVarlenAt = {kVarCuSeqlensQ, kVarCuSeqlensK, kVarMaxSeqlenQ, kVarMaxSeqlenK, kVarScale,
                                   kVarCausal,     kVarWindowLeft, kVarSoftcap,    kAttentionVarlenNumArgs, 0, 0, 0, 0};
constexpr VarlenArgAt kVarlenFp8At = {kVf8CuSeqlensQ, kVf8CuSeqlensK, kVf8MaxSeqlenQ, kVf8MaxSeqlenK,
                                      kVf8Scale,      kVf8Causal,     kVf8WindowLeft, kVf8Softcap,
                                      kAttentionVarlenFp8NumArgs, kVf8QScale, kVf8KScale, kVf8VScale,
                                      kVf8Workspace};

kh_status parse_varlen(const OpContext& c, const kh_value* args, uint32_t nargs, const VarlenArgAt& at, bool fp8,
                       AttentionParams* p) {
  *p = AttentionParams{};
  PrefillTensors t;
  KH_KERNEL_TRY(check_prefill_tensors(c, args, nargs, at.nargs, 3, fp8, &t));
  const TensorView &q = t.q, &k = t.k, &v = t.v, &out = t.out;
  const int64_t total_q = q.size(0), total_k = k.size(0);
  TensorView qs, ks, vs;
  if (fp8) {
    p->q_fp8 = q.dtype == kh_kernels::DType::kU8;
    p->kv_fp8 = true;
    KH_KERNEL_TRY(fp8_scale_arg(c, args, at.q_scale, "q_scale", q, "q", t.heads_kv, Presence::kOptional, &p->q_scale,
                                &p->q_scale_stride, &qs));
    if (p->q_fp8 && !qs.present())
      return arg_error(c, "q_scale", "is required when q holds e4m3 bytes (uint8): its descale factor");
    if (!p->q_fp8 && qs.present())
      return arg_error(c, "q_scale", "must be None when q is %s (only an e4m3 q has a descale factor)",
                       kh_kernels::dtype_name(q.dtype));
    KH_KERNEL_TRY(fp8_scale_arg(c, args, at.k_scale, "k_scale", k, "k", t.heads_kv, Presence::kRequired, &p->k_scale,
                                &p->k_scale_stride, &ks));
    KH_KERNEL_TRY(fp8_scale_arg(c, args, at.v_scale, "v_scale", v, "v", t.heads_kv, Presence::kRequired, &p->v_scale,
                                &p->v_scale_stride, &vs));
  }

  TensorView cu_q, cu_k;
  KH_KERNEL_TRY(cu_seqlens_arg(c, args, at.cu_q, "cu_seqlens_q", q, &cu_q));
  if (cu_q.size(0) < 1)
    return arg_error(c, "cu_seqlens_q", "needs batch + 1 >= 1 entries (the first is 0), got shape %s",
                     kh_kernels::shape_string(cu_q).c_str());
  KH_KERNEL_TRY(cu_seqlens_arg(c, args, at.cu_k, "cu_seqlens_k", q, &cu_k));
  if (cu_k.size(0) != cu_q.size(0))
    return arg_error(c, "cu_seqlens_k", "shape %s does not match cu_seqlens_q's %s: both hold batch + 1 offsets",
                     kh_kernels::shape_string(cu_k).c_str(), kh_kernels::shape_string(cu_q).c_str());
  const int64_t batch = cu_q.size(0) - 1;

  int64_t max_q = 0, max_k = 0;
  KH_KERNEL_TRY(bounded_int_arg(c, args, at.max_q, "max_seqlen_q", 0, INT_MAX,
                                "a length in [0, 2^31) (the longest sequence of q)", &max_q));
  KH_KERNEL_TRY(bounded_int_arg(c, args, at.max_k, "max_seqlen_k", 0, INT_MAX,
                                "a length in [0, 2^31) (the longest sequence of k)", &max_k));
  const int64_t lse_shape[] = {t.heads_q, total_q};
  KH_KERNEL_TRY(check_lse_shape(c, t.lse, lse_shape, "(heads_q, total_q)"));
  KH_KERNEL_TRY(scale_and_causal(c, args, at.scale, at.causal, p));
  KH_KERNEL_TRY(bounded_int_arg(c, args, at.window_left, "window_left", -1, INT_MAX,
                                "-1 (no window) or a key count in [0, 2^31)", &p->window_left));
  KH_KERNEL_TRY(kh_kernels::double_arg(c, args, at.softcap, "softcap", &p->softcap));
  KH_KERNEL_TRY(kh_kernels::check_finite(c, "softcap", p->softcap));
  if (p->softcap < 0) return arg_error(c, "softcap", "must be 0 (none) or > 0, got %g", p->softcap);
  TensorView ws;
  // A size query (shapes_only) comes before the workspace exists: it is not read then.
  if (fp8 && !c.shapes_only) {
    KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, at.workspace, "workspace", Presence::kOptional, &ws));
    if (ws.present()) {
      KH_KERNEL_TRY(kh_kernels::check_same_device(c, "workspace", ws, "q", q));
      KH_KERNEL_TRY(kh_kernels::check_dtype(c, "workspace", ws, KH_DTYPE_U8));
      KH_KERNEL_TRY(kh_kernels::check_ndim(c, "workspace", ws, 1, 1));
      KH_KERNEL_TRY(kh_kernels::check_contiguous(c, "workspace", ws));
    }
  }
  const Named outputs[] = {{"out", &out}, {"lse", &t.lse}, {"workspace", &ws}};
  const Named inputs[] = {{"q", &q},          {"k", &k},           {"v", &v},         {"cu_seqlens_q", &cu_q},
                          {"cu_seqlens_k", &cu_k}, {"q_scale", &qs}, {"k_scale", &ks}, {"v_scale", &vs}};
  KH_KERNEL_TRY(check_outputs_apart(c, outputs, inputs));

  fill_tensors(t, p);
  p->cu_seqlens_q = cu_q.ptr<const int32_t>();
  p->cu_seqlens_k = cu_k.ptr<const int32_t>();
  p->cu_seqlens_q_stride = cu_q.strides[0];
  p->cu_seqlens_k_stride = cu_k.strides[0];
  p->lse_head_stride = total_q, p->lse_row_stride = 1;
  p->batch = batch;
  p->seqlen_q = max_q;
  p->seqlen_k = max_k;
  p->total_q = total_q;
  p->total_k = total_k;
  if (fp8) p->dtype = out.dtype;  // the output's: q may be e4m3
  if (ws.present()) {  // its size once the call's sizes are in p
    const int64_t need = fp8_prefill_workspace_bytes(*p);
    if (ws.numel() < need)
      return arg_error(c, "workspace",
                       "has %lld bytes; this call needs at least %lld (V transposed: heads_kv %lld x head_dim %lld x "
                       "(total_k %lld + batch %lld x %lld, rounded up to 128) bytes, and a header of (batch + 1) "
                       "int32 rounded up to 128); kh_op_workspace_size gives the size a call needs, or pass None",
                       (long long)ws.numel(), (long long)need, (long long)t.heads_kv, (long long)t.head_dim_v,
                       (long long)total_k, (long long)batch, (long long)(vt_key_block(t.head_dim_v) - 1));
    p->workspace = ws.ptr<void>();
  }
  return KH_OK;
}

}  // namespace

kh_status parse_attention_varlen_fwd_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                          AttentionParams* p) {
  return parse_varlen({"attention_varlen_fwd", ctx, KH_DEVICE_TYPE}, args, nargs, kVarlenAt, false, p);
}

kh_status parse_attention_varlen_fwd_fp8_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                              AttentionParams* p) {
  return parse_varlen({"attention_varlen_fwd_fp8", ctx, KH_DEVICE_TYPE}, args, nargs, kVarlenFp8At, true, p);
}

int64_t fp8_prefill_workspace_bytes(const AttentionParams& a) {
#if defined(KH_ATTENTION_SM90A)
  if (a.q_fp8 && vt_pays(a.head_dim_v, a.heads_q / a.heads_kv, a.seqlen_q, a.causal))
    return vt_workspace_bytes(a.total_k, a.batch, a.heads_kv, a.head_dim_v);
#endif
  (void)a;
  return 0;
}

kh_status attention_varlen_fwd_fp8_workspace(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                             uint64_t* bytes) {
  const OpContext c{"attention_varlen_fwd_fp8", ctx, KH_DEVICE_TYPE, true};
  return kh_kernels::guarded(c, [&] {
    AttentionParams p;
    KH_KERNEL_TRY(parse_varlen(c, args, nargs, kVarlenFp8At, true, &p));
    *bytes = static_cast<uint64_t>(fp8_prefill_workspace_bytes(p));
    return KH_OK;
  });
}


FwdLaunchParams launch_params(const AttentionParams& a) {
  FwdLaunchParams p;
  p.q = a.q;
  p.k = a.k;
  p.v = a.v;
  p.out = a.out;
  p.lse = a.lse;
  p.q_batch_stride = a.q_batch_stride, p.q_row_stride = a.q_row_stride, p.q_head_stride = a.q_head_stride;
  p.k_batch_stride = a.k_batch_stride, p.k_row_stride = a.k_row_stride, p.k_head_stride = a.k_head_stride;
  p.v_batch_stride = a.v_batch_stride, p.v_row_stride = a.v_row_stride, p.v_head_stride = a.v_head_stride;
  p.o_batch_stride = a.o_batch_stride, p.o_row_stride = a.o_row_stride, p.o_head_stride = a.o_head_stride;
  p.lse_batch_stride = a.lse_batch_stride, p.lse_head_stride = a.lse_head_stride;
  p.lse_row_stride = a.lse_row_stride;
  p.cu_seqlens_q = a.cu_seqlens_q;
  p.cu_seqlens_k = a.cu_seqlens_k;
  p.cu_seqlens_q_stride = a.cu_seqlens_q_stride;
  p.cu_seqlens_k_stride = a.cu_seqlens_k_stride;
  p.total_q = a.total_q;
  p.total_k = a.total_k;
  p.batch = static_cast<int>(a.batch);
  p.seqlen_q = static_cast<int>(a.seqlen_q);
  p.seqlen_k = static_cast<int>(a.seqlen_k);
  p.heads_q = static_cast<int>(a.heads_q);
  p.heads_kv = static_cast<int>(a.heads_kv);
  p.head_dim = static_cast<int>(a.head_dim);
  p.head_dim_v = static_cast<int>(a.head_dim_v);
  // A window at least as wide as both lengths sees every key: the same as none, and it keeps
  // pos - window_left inside int in the kernels (the GPU entries bound the lengths).
  p.window_left = a.window_left >= a.seqlen_q + a.seqlen_k ? -1 : static_cast<int>(a.window_left);
  p.scale = static_cast<float>(a.scale);
  p.softcap = static_cast<float>(a.softcap);
  if (a.softcap > 0) {
    p.softcap_log2 = static_cast<float>(a.softcap * 1.4426950408889634);
    p.scale_over_softcap = static_cast<float>(a.scale / a.softcap);
  }
  p.causal = a.causal;
  p.dtype = a.dtype == kh_kernels::DType::kBF16 ? ElementType::kBF16 : ElementType::kF16;
  p.fp8 = a.q_fp8;
  p.q_scale = a.q_scale, p.k_scale = a.k_scale, p.v_scale = a.v_scale;
  p.q_scale_stride = a.q_scale_stride, p.k_scale_stride = a.k_scale_stride, p.v_scale_stride = a.v_scale_stride;
  return p;
}

}  // namespace kh_attention

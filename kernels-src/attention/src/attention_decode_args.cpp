// attention_decode_args.cpp: the rules of attention_decode_paged's arguments (shapes, dtypes,
// strides, head dims, block size, the workspace's size, memory overlap). KH_DEVICE_TYPE comes
// from the library's variant. Nothing here reads tensor data: seq_lens and block_table stay
// on the device, so a call needs no host synchronisation and can be captured in a CUDA graph.
#include "attention_decode_args.hpp"

#include <climits>
#include <utility>

#include "attention_args.hpp"  // kAttentionDtypes
#include "attention_fp8_args.hpp"
#include "kh_kernel/args.hpp"

namespace kh_attention {

using kh_kernels::Alias;
using kh_kernels::arg_error;
using kh_kernels::Presence;
using kh_kernels::TensorView;

namespace {

kh_status int_arg(const kh_kernels::OpContext& c, const kh_value* args, uint32_t index, const char* name,
                  int64_t* out) {
  const kh_value& v = args[index];
  if (v.kind != KH_VALUE_INT) return arg_error(c, name, "expected an int, got value kind %u", v.kind);
  *out = v.u.i;
  return KH_OK;
}

bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

int log2_of(int64_t x) {
  int s = 0;
  while ((int64_t{1} << s) < x) ++s;
  return s;
}

// Where each argument sits: attention_decode_paged's schema, or attention_decode_paged_fp8's
// (k_scale and v_scale after the caches).
struct DecodeArgAt {
  uint32_t out, lse, q, k_cache, v_cache, block_table, seq_lens, workspace, scale, window_left, softcap, nargs;
  uint32_t k_scale, v_scale;  // fp8 only
};
constexpr DecodeArgAt kDecodeAt = {kDecOut,       kDecLse,        kDecQ,        kDecKCache,     kDecVCache,
                                   kDecBlockTable, kDecSeqLens,   kDecWorkspace, kDecScale,     kDecWindowLeft,
                                   kDecSoftcap,   kAttentionDecodeNumArgs, 0, 0};
constexpr DecodeArgAt kDecodeFp8At = {kDf8Out,        kDf8Lse,       kDf8Q,         kDf8KCache,    kDf8VCache,
                                      kDf8BlockTable, kDf8SeqLens,   kDf8Workspace, kDf8Scale,     kDf8WindowLeft,
                                      kDf8Softcap,    kAttentionDecodeFp8NumArgs, kDf8KScale, kDf8VScale};

// Both ops' rules; fp8: the caches are uint8 e4m3 bytes with descale factors, head dims in steps
// of 16.
kh_status parse_decode(const kh_kernels::OpContext& c, const kh_value* args, uint32_t nargs, const DecodeArgAt& at,
                       bool fp8, DecodeParams* p) {
  *p = DecodeParams{};
  KH_KERNEL_TRY(kh_kernels::check_nargs(c, args, nargs, at.nargs));

  TensorView out, lse, q, kc, vc, bt, sl, ws, ks, vs;
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, at.q, "q", Presence::kRequired, &q));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, "q", q, kAttentionDtypes));
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, "q", q, 4, 4));
  KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, "q", q));
  const int64_t batch = q.size(0), q_len = q.size(1), heads_q = q.size(2), head_dim = q.size(3);
  if (heads_q < 1) return arg_error(c, "q", "heads_q (dim 2) must be >= 1, got %lld", (long long)heads_q);
  if (!attention_decode_supports_head_dim(head_dim) || (fp8 && head_dim % kDecodeFp8HeadDimStep != 0))
    return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED,
                                "argument 'q': head_dim %lld is not supported (supported: multiples of %d "
                                "from 32 to 256)",
                                (long long)head_dim, fp8 ? kDecodeFp8HeadDimStep : 8);
  if (batch > INT_MAX || q_len > INT_MAX || heads_q > INT_MAX)
    return arg_error(c, "q", "shape %s is too large (each dim must be < 2^31)", kh_kernels::shape_string(q).c_str());

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, at.k_cache, "k_cache", Presence::kRequired, &kc));
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, at.v_cache, "v_cache", Presence::kRequired, &vc));
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, at.out, "out", Presence::kRequired, &out));
  if (fp8) {
    const LikeQ others[] = {{"out", &out}};
    KH_KERNEL_TRY(check_like_q(c, q, others));
    for (const auto& cache : {std::make_pair("k_cache", &kc), std::make_pair("v_cache", &vc)}) {
      KH_KERNEL_TRY(kh_kernels::check_same_device(c, cache.first, *cache.second, "q", q));
      KH_KERNEL_TRY(check_e4m3(c, cache.first, *cache.second));
      KH_KERNEL_TRY(kh_kernels::check_ndim(c, cache.first, *cache.second, 4, 4));
      KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, cache.first, *cache.second));
    }
  } else {
    const LikeQ others[] = {{"k_cache", &kc}, {"v_cache", &vc}, {"out", &out}};
    KH_KERNEL_TRY(check_like_q(c, q, others));
  }
  KH_KERNEL_TRY(kh_kernels::check_same_shape(c, "out", out, "q", q));
  const int64_t num_blocks = kc.size(0), block_size = kc.size(1), heads_kv = kc.size(2);
  if (kc.size(3) != head_dim)
    return arg_error(c, "k_cache", "shape %s does not fit q's shape %s: head_dim (dim 3) must match",
                     kh_kernels::shape_string(kc).c_str(), kh_kernels::shape_string(q).c_str());
  if (heads_kv < 1) return arg_error(c, "k_cache", "heads_kv (dim 2) must be >= 1, got %lld", (long long)heads_kv);
  if (heads_q % heads_kv != 0)
    return arg_error(c, "k_cache",
                     "heads_kv %lld does not divide q's heads_q %lld (GQA needs a whole group per kv head)",
                     (long long)heads_kv, (long long)heads_q);
  if (!is_pow2(block_size) || block_size > 1024)
    return arg_error(c, "k_cache", "block_size (dim 1) must be a power of two from 1 to 1024, got %lld",
                     (long long)block_size);
  if (num_blocks > INT_MAX)
    return arg_error(c, "k_cache", "num_blocks (dim 0) %lld is too large (< 2^31)", (long long)num_blocks);
  KH_KERNEL_TRY(kh_kernels::check_same_shape(c, "v_cache", vc, "k_cache", kc));
  if (fp8) {
    KH_KERNEL_TRY(fp8_scale_arg(c, args, at.k_scale, "k_scale", kc, "k_cache", heads_kv, Presence::kRequired,
                                &p->k_scale, &p->k_scale_stride, &ks));
    KH_KERNEL_TRY(fp8_scale_arg(c, args, at.v_scale, "v_scale", vc, "v_cache", heads_kv, Presence::kRequired,
                                &p->v_scale, &p->v_scale_stride, &vs));
    p->kv_fp8 = true;
  }

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, at.block_table, "block_table", Presence::kRequired, &bt));
  KH_KERNEL_TRY(kh_kernels::check_same_device(c, "block_table", bt, "q", q));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, "block_table", bt, KH_DTYPE_I32));
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, "block_table", bt, 2, 2));
  KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, "block_table", bt));
  if (bt.size(0) != batch)
    return arg_error(c, "block_table", "shape %s does not fit q's batch %lld: expected (batch, max_blocks_per_seq)",
                     kh_kernels::shape_string(bt).c_str(), (long long)batch);
  const int64_t max_blocks = bt.size(1);
  if (max_blocks > INT_MAX || max_blocks * block_size > INT_MAX)
    return arg_error(c, "block_table", "max_blocks_per_seq %lld x block_size %lld must be < 2^31 keys",
                     (long long)max_blocks, (long long)block_size);

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, at.seq_lens, "seq_lens", Presence::kRequired, &sl));
  KH_KERNEL_TRY(kh_kernels::check_same_device(c, "seq_lens", sl, "q", q));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, "seq_lens", sl, KH_DTYPE_I32));
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, "seq_lens", sl, 1, 1));
  if (sl.size(0) != batch)
    return arg_error(c, "seq_lens", "shape %s does not match q's batch %lld", kh_kernels::shape_string(sl).c_str(),
                     (long long)batch);

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, at.lse, "lse", Presence::kOptional, &lse));
  if (lse.present()) {
    KH_KERNEL_TRY(kh_kernels::check_same_device(c, "lse", lse, "q", q));
    KH_KERNEL_TRY(kh_kernels::check_dtype(c, "lse", lse, KH_DTYPE_F32));
    if (lse.ndim != 3 || lse.shape[0] != batch || lse.shape[1] != heads_q || lse.shape[2] != q_len)
      return arg_error(c, "lse", "shape %s does not match (batch, heads_q, q_len) = [%lld, %lld, %lld]",
                       kh_kernels::shape_string(lse).c_str(), (long long)batch, (long long)heads_q,
                       (long long)q_len);
    KH_KERNEL_TRY(kh_kernels::check_contiguous(c, "lse", lse));
  }

  const int64_t max_kv = max_blocks * block_size;
  const int64_t need = decode_workspace_floats(batch, q_len, heads_q, heads_kv, head_dim, max_kv);
  // A size query (shapes_only) is asked before the workspace exists: it is not read at all.
  if (!c.shapes_only) {
    KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, at.workspace, "workspace", Presence::kRequired, &ws));
    KH_KERNEL_TRY(kh_kernels::check_same_device(c, "workspace", ws, "q", q));
    KH_KERNEL_TRY(kh_kernels::check_dtype(c, "workspace", ws, KH_DTYPE_F32));
    KH_KERNEL_TRY(kh_kernels::check_ndim(c, "workspace", ws, 1, 1));
    KH_KERNEL_TRY(kh_kernels::check_contiguous(c, "workspace", ws));
    if (ws.numel() < need)
      return arg_error(c, "workspace",
                       "has %lld float32 elements; this call needs at least %lld = batch %lld x q_len %lld x heads_q "
                       "%lld x max_splits %lld x (head_dim %lld + 1) (max_splits = max(1, min(64, ceil(max_kv %lld / "
                       "128), ceil(4096 / (batch x heads_kv %lld))))); kh_op_workspace_size gives the size a call "
                       "needs",
                       (long long)ws.numel(), (long long)need, (long long)batch, (long long)q_len, (long long)heads_q,
                       (long long)decode_max_splits(batch, heads_kv, max_kv), (long long)head_dim, (long long)max_kv,
                       (long long)heads_kv);
  }

  double scale = 0, softcap = 0;
  int64_t window_left = -1;
  KH_KERNEL_TRY(kh_kernels::double_arg(c, args, at.scale, "scale", &scale));
  KH_KERNEL_TRY(kh_kernels::check_finite(c, "scale", scale));
  KH_KERNEL_TRY(int_arg(c, args, at.window_left, "window_left", &window_left));
  if (window_left < -1 || window_left > INT_MAX)
    return arg_error(c, "window_left", "must be -1 (no window) or a key count in [0, 2^31), got %lld",
                     (long long)window_left);
  KH_KERNEL_TRY(kh_kernels::double_arg(c, args, at.softcap, "softcap", &softcap));
  KH_KERNEL_TRY(kh_kernels::check_finite(c, "softcap", softcap));
  if (softcap < 0) return arg_error(c, "softcap", "must be 0 (none) or > 0, got %g", softcap);

  // Outputs share no memory with anything (GPU blocks read the inputs while others write).
  const struct {
    const char* name;
    const TensorView* view;
  } inputs[] = {{"q", &q},         {"k_cache", &kc},  {"v_cache", &vc}, {"block_table", &bt},
                {"seq_lens", &sl}, {"k_scale", &ks},  {"v_scale", &vs}};
  const struct {
    const char* name;
    const TensorView* view;
  } outputs[] = {{"out", &out}, {"lse", &lse}, {"workspace", &ws}};
  for (size_t i = 0; i < sizeof(outputs) / sizeof(outputs[0]); ++i) {
    for (const auto& in : inputs)
      KH_KERNEL_TRY(kh_kernels::check_no_overlap(c, outputs[i].name, *outputs[i].view, in.name, *in.view,
                                                 Alias::kForbidden));
    for (size_t j = i + 1; j < sizeof(outputs) / sizeof(outputs[0]); ++j)
      KH_KERNEL_TRY(kh_kernels::check_no_overlap(c, outputs[i].name, *outputs[i].view, outputs[j].name,
                                                 *outputs[j].view, Alias::kForbidden));
  }

  p->q = q.data;
  p->k = kc.data;
  p->v = vc.data;
  p->out = out.data;
  p->lse = lse.present() ? lse.ptr<float>() : nullptr;
  p->block_table = bt.ptr<const int32_t>();
  p->seq_lens = sl.ptr<const int32_t>();
  p->workspace = ws.ptr<float>();
  p->q_batch_stride = q.strides[0], p->q_row_stride = q.strides[1], p->q_head_stride = q.strides[2];
  p->o_batch_stride = out.strides[0], p->o_row_stride = out.strides[1], p->o_head_stride = out.strides[2];
  p->k_block_stride = kc.strides[0], p->k_row_stride = kc.strides[1], p->k_head_stride = kc.strides[2];
  p->v_block_stride = vc.strides[0], p->v_row_stride = vc.strides[1], p->v_head_stride = vc.strides[2];
  p->bt_batch_stride = bt.strides[0];
  p->seq_lens_stride = sl.strides[0];
  p->workspace_floats = ws.numel();
  p->batch = static_cast<int>(batch);
  p->q_len = static_cast<int>(q_len);
  p->heads_q = static_cast<int>(heads_q);
  p->heads_kv = static_cast<int>(heads_kv);
  p->head_dim = static_cast<int>(head_dim);
  p->block_size = static_cast<int>(block_size);
  p->block_shift = log2_of(block_size);
  p->max_blocks_per_seq = static_cast<int>(max_blocks);
  p->num_blocks = static_cast<int>(num_blocks);
  // A window at least as wide as the table sees every key: the same as none (and keeps
  // pos - window_left inside int in the kernels).
  p->window_left = window_left >= max_kv ? -1 : static_cast<int>(window_left);
  p->scale = static_cast<float>(scale);
  p->softcap = static_cast<float>(softcap);
  p->scale_f64 = scale;
  p->softcap_f64 = softcap;
  p->device_id = q.device.device_id;
  p->dtype = q.dtype == kh_kernels::DType::kBF16 ? ElementType::kBF16 : ElementType::kF16;
  return KH_OK;
}

}  // namespace

kh_status parse_attention_decode_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                      DecodeParams* p) {
  return parse_decode({"attention_decode_paged", ctx, KH_DEVICE_TYPE}, args, nargs, kDecodeAt, false, p);
}

kh_status parse_attention_decode_fp8_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                          DecodeParams* p) {
  return parse_decode({"attention_decode_paged_fp8", ctx, KH_DEVICE_TYPE}, args, nargs, kDecodeFp8At, true, p);
}

namespace {

// The workspace a call needs, in bytes: every argument checked as the call checks it, but
// for data and the workspace itself (the query comes before either exists).
kh_status decode_workspace_bytes(const char* op, const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                 const DecodeArgAt& at, bool fp8, uint64_t* bytes) {
  const kh_kernels::OpContext c{op, ctx, KH_DEVICE_TYPE, true};
  return kh_kernels::guarded(c, [&] {
    DecodeParams p;
    KH_KERNEL_TRY(parse_decode(c, args, nargs, at, fp8, &p));
    const int64_t floats = decode_workspace_floats(p.batch, p.q_len, p.heads_q, p.heads_kv, p.head_dim, p.max_kv());
    *bytes = static_cast<uint64_t>(floats) * sizeof(float);
    return KH_OK;
  });
}

}  // namespace

kh_status attention_decode_paged_workspace(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                           uint64_t* bytes) {
  return decode_workspace_bytes("attention_decode_paged", args, nargs, ctx, kDecodeAt, false, bytes);
}

kh_status attention_decode_paged_fp8_workspace(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                               uint64_t* bytes) {
  return decode_workspace_bytes("attention_decode_paged_fp8", args, nargs, ctx, kDecodeFp8At, true, bytes);
}

}  // namespace kh_attention

// attention_cache_args.cpp: the rules of paged_kv_cache_write's arguments (shapes, dtypes, the
// caches' dtype against key's, the descale factors of e4m3 caches, memory overlap). Nothing here
// reads tensor data: slot_mapping and the scales stay on the device, so a call needs no host
// synchronisation and can be captured in a CUDA graph.
#include "attention_cache_args.hpp"

#include <climits>

#include "attention_args.hpp"  // kAttentionDtypes
#include "attention_fp8_args.hpp"
#include "kh_kernel/args.hpp"

namespace kh_attention {

using kh_kernels::Alias;
using kh_kernels::arg_error;
using kh_kernels::Presence;
using kh_kernels::TensorView;

kh_status parse_paged_kv_cache_write_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                          CacheWriteParams* p) {
  *p = CacheWriteParams{};
  const kh_kernels::OpContext c{"paged_kv_cache_write", ctx, KH_DEVICE_TYPE};
  KH_KERNEL_TRY(kh_kernels::check_nargs(c, args, nargs, kPagedKvCacheWriteNumArgs));

  TensorView key, value, kc, vc, slots, ks, vs;
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kCwKey, "key", Presence::kRequired, &key));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, "key", key, kAttentionDtypes));
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, "key", key, 3, 3));
  KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, "key", key));
  const int64_t tokens = key.size(0), heads = key.size(1), head_dim = key.size(2);
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kCwValue, "value", Presence::kRequired, &value));
  const LikeQ like_key[] = {{"value", &value}};
  KH_KERNEL_TRY(check_like_q(c, key, like_key));
  KH_KERNEL_TRY(kh_kernels::check_same_shape(c, "value", value, "key", key));

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kCwKCache, "k_cache", Presence::kRequired, &kc));
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kCwVCache, "v_cache", Presence::kRequired, &vc));
  KH_KERNEL_TRY(kh_kernels::check_same_device(c, "k_cache", kc, "key", key));
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, "k_cache", kc, 4, 4));
  KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, "k_cache", kc));
  const bool fp8 = kc.dtype == kh_kernels::DType::kU8;
  if (!fp8) KH_KERNEL_TRY(kh_kernels::check_same_dtype(c, "k_cache", kc, "key", key));
  if (kc.size(2) != heads || kc.size(3) != head_dim)
    return arg_error(c, "k_cache",
                     "shape %s does not fit key's shape %s: expected (num_blocks, block_size, heads_kv %lld, "
                     "head_dim %lld)",
                     kh_kernels::shape_string(kc).c_str(), kh_kernels::shape_string(key).c_str(), (long long)heads,
                     (long long)head_dim);
  const int64_t num_blocks = kc.size(0), block_size = kc.size(1);
  if (block_size < 1) return arg_error(c, "k_cache", "block_size (dim 1) must be >= 1, got %lld", (long long)block_size);
  if (num_blocks > INT64_MAX / block_size)
    return arg_error(c, "k_cache", "num_blocks x block_size overflows int64");
  KH_KERNEL_TRY(kh_kernels::check_same_device(c, "v_cache", vc, "k_cache", kc));
  KH_KERNEL_TRY(kh_kernels::check_same_dtype(c, "v_cache", vc, "k_cache", kc));
  KH_KERNEL_TRY(kh_kernels::check_same_shape(c, "v_cache", vc, "k_cache", kc));
  KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, "v_cache", vc));

  const int step = fp8 ? kCacheWriteFp8DimStep : kCacheWriteDimStep;
  if (head_dim < step || head_dim > kCacheWriteMaxDim || head_dim % step != 0)
    return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED,
                                "argument 'key': head_dim %lld is not supported (supported: multiples of %d from %d "
                                "to %lld%s)",
                                (long long)head_dim, step, step, (long long)kCacheWriteMaxDim,
                                fp8 ? " for e4m3 caches" : "");

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kCwSlotMapping, "slot_mapping", Presence::kRequired, &slots));
  KH_KERNEL_TRY(kh_kernels::check_same_device(c, "slot_mapping", slots, "key", key));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, "slot_mapping", slots, KH_DTYPE_I32 | KH_DTYPE_I64));
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, "slot_mapping", slots, 1, 1));
  if (slots.size(0) != tokens)
    return arg_error(c, "slot_mapping", "shape %s does not match key's tokens %lld",
                     kh_kernels::shape_string(slots).c_str(), (long long)tokens);
  if (tokens > INT_MAX)
    return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED, "argument 'key': %lld tokens, more than 2^31 - 1",
                                (long long)tokens);

  if (fp8) {
    KH_KERNEL_TRY(fp8_scale_arg(c, args, kCwKScale, "k_scale", kc, "k_cache", heads, Presence::kRequired, &p->k_scale,
                                &p->k_scale_stride, &ks));
    KH_KERNEL_TRY(fp8_scale_arg(c, args, kCwVScale, "v_scale", vc, "v_cache", heads, Presence::kRequired, &p->v_scale,
                                &p->v_scale_stride, &vs));
  }

  const struct {
    const char* name;
    const TensorView* view;
  } inputs[] = {{"key", &key}, {"value", &value}, {"slot_mapping", &slots}, {"k_scale", &ks}, {"v_scale", &vs}};
  for (const auto* out : {&kc, &vc}) {
    const char* name = out == &kc ? "k_cache" : "v_cache";
    for (const auto& in : inputs)
      KH_KERNEL_TRY(kh_kernels::check_no_overlap(c, name, *out, in.name, *in.view, Alias::kForbidden));
  }
  KH_KERNEL_TRY(kh_kernels::check_no_overlap(c, "v_cache", vc, "k_cache", kc, Alias::kForbidden));

  p->k_cache = kc.data;
  p->v_cache = vc.data;
  p->key = key.data;
  p->value = value.data;
  p->slots = slots.data;
  p->slots_i64 = slots.dtype == kh_kernels::DType::kI64;
  p->slot_stride = slots.strides[0];
  p->kc_block_stride = kc.strides[0], p->kc_row_stride = kc.strides[1], p->kc_head_stride = kc.strides[2];
  p->vc_block_stride = vc.strides[0], p->vc_row_stride = vc.strides[1], p->vc_head_stride = vc.strides[2];
  p->key_token_stride = key.strides[0], p->key_head_stride = key.strides[1];
  p->value_token_stride = value.strides[0], p->value_head_stride = value.strides[1];
  p->tokens = tokens;
  p->heads = heads;
  p->head_dim = head_dim;
  p->block_size = block_size;
  p->num_blocks = num_blocks;
  p->fp8 = fp8;
  p->dtype = key.dtype == kh_kernels::DType::kBF16 ? ElementType::kBF16 : ElementType::kF16;
  p->device_id = key.device.device_id;
  return KH_OK;
}

}  // namespace kh_attention

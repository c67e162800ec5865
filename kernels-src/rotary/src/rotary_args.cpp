// rotary_args.cpp: the rules of rotary_embedding's arguments (shapes, dtypes, strides, the
// cache's rotary_dim, the positions' dtype and length, memory overlap). KH_DEVICE_TYPE comes
// from the library's variant. Nothing here reads tensor data: a GPU call needs no host
// synchronisation and can be captured in a CUDA graph.
#include "rotary_args.hpp"

#include <climits>

#include "kh_kernel/args.hpp"
#include "kh_kernel/pointwise_args.hpp"

namespace kh_rotary {

using kh_kernels::arg_error;
using kh_kernels::Presence;
using kh_kernels::TensorView;

namespace {

constexpr uint32_t kRotaryDtypes = KH_DTYPE_F32 | KH_DTYPE_F16 | KH_DTYPE_BF16;

// query's and key's common rules: (tokens, heads, head_size), last dim contiguous, every
// element at its own address (both are written).
kh_status check_rotated(const kh_kernels::OpContext& c, const char* name, const TensorView& t) {
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, name, t, 3, 3));
  KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, name, t));
  return kh_kernels::check_distinct_elements(c, name, t);
}

}  // namespace

kh_status parse_rotary_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx, RotaryParams* p) {
  *p = RotaryParams{};
  const kh_kernels::OpContext c{"rotary_embedding", ctx, KH_DEVICE_TYPE};
  KH_KERNEL_TRY(kh_kernels::check_nargs(c, args, nargs, kRotaryNumArgs));

  TensorView q, k, pos, cache;
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kQuery, "query", Presence::kRequired, &q));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, "query", q, kRotaryDtypes));
  KH_KERNEL_TRY(check_rotated(c, "query", q));
  const int64_t tokens = q.size(0), head_size = q.size(2);
  if (head_size > INT_MAX / 2)  // in-head offsets are 32-bit in the GPU kernels
    return arg_error(c, "query", "head_size %lld must be < 2^30", (long long)head_size);

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kKey, "key", Presence::kOptional, &k));
  if (k.present()) {
    KH_KERNEL_TRY(kh_kernels::check_same_device(c, "key", k, "query", q));
    KH_KERNEL_TRY(kh_kernels::check_same_dtype(c, "key", k, "query", q));
    KH_KERNEL_TRY(check_rotated(c, "key", k));
    if (k.size(0) != tokens || k.size(2) != head_size)
      return arg_error(c, "key", "shape %s does not fit query's shape %s: expected (tokens %lld, heads_kv, head_size "
                       "%lld)", kh_kernels::shape_string(k).c_str(), kh_kernels::shape_string(q).c_str(),
                       (long long)tokens, (long long)head_size);
  }
  const int64_t heads_q = q.size(1), heads_kv = k.present() ? k.size(1) : 0;
  if (heads_q + heads_kv > INT_MAX)
    return arg_error(c, "query", "heads_q %lld + heads_kv %lld must be < 2^31", (long long)heads_q,
                     (long long)heads_kv);

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kPositions, "positions", Presence::kRequired, &pos));
  KH_KERNEL_TRY(kh_kernels::check_same_device(c, "positions", pos, "query", q));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, "positions", pos, KH_DTYPE_I32 | KH_DTYPE_I64));
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, "positions", pos, 1, 1));
  if (pos.size(0) != tokens)
    return arg_error(c, "positions", "has %lld entries but query has %lld tokens (one position per token)",
                     (long long)pos.size(0), (long long)tokens);

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kCosSinCache, "cos_sin_cache", Presence::kRequired, &cache));
  KH_KERNEL_TRY(kh_kernels::check_same_device(c, "cos_sin_cache", cache, "query", q));
  if (cache.dtype != kh_kernels::DType::kF32 && cache.dtype != q.dtype)
    return arg_error(c, "cos_sin_cache", "dtype %s is not supported (expected float32 or query's dtype %s)",
                     kh_kernels::dtype_name(cache.dtype), kh_kernels::dtype_name(q.dtype));
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, "cos_sin_cache", cache, 2, 2));
  KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, "cos_sin_cache", cache));
  const int64_t max_position = cache.size(0), rotary_dim = cache.size(1);
  if (rotary_dim < 2 || rotary_dim % 2 != 0 || rotary_dim > head_size)
    return arg_error(c, "cos_sin_cache", "rotary_dim (dim 1) must be even and in [2, head_size = %lld], got %lld",
                     (long long)head_size, (long long)rotary_dim);
  if (max_position < 1)
    return arg_error(c, "cos_sin_cache", "max_position (dim 0) must be >= 1, got %lld", (long long)max_position);

  bool neox = true;
  KH_KERNEL_TRY(kh_kernels::bool_arg(c, args, kIsNeox, "is_neox", &neox));

  // The rotated tensors share no memory with each other or with what they are computed from.
  const struct {
    const char* name;
    const TensorView* view;
  } inputs[] = {{"key", &k}, {"positions", &pos}, {"cos_sin_cache", &cache}};
  for (const auto& in : inputs)
    KH_KERNEL_TRY(kh_kernels::check_no_overlap(c, "query", q, in.name, *in.view, kh_kernels::Alias::kForbidden));
  for (const auto& in : inputs)
    if (in.view != &k)
      KH_KERNEL_TRY(kh_kernels::check_no_overlap(c, "key", k, in.name, *in.view, kh_kernels::Alias::kForbidden));

  p->query = q.data;
  p->key = k.present() && k.numel() > 0 ? k.data : nullptr;
  p->positions = pos.data;
  p->cache = cache.data;
  p->tokens = tokens;
  p->heads_q = heads_q;
  p->heads_kv = p->key != nullptr ? heads_kv : 0;
  p->head_size = head_size;
  p->rotary_dim = rotary_dim;
  p->max_position = max_position;
  p->q_token_stride = q.strides[0];
  p->q_head_stride = q.strides[1];
  p->k_token_stride = k.present() ? k.strides[0] : 0;
  p->k_head_stride = k.present() ? k.strides[1] : 0;
  p->positions_stride = pos.strides[0];
  p->cache_row_stride = cache.strides[0];
  p->dtype = q.dtype;
  p->cache_dtype = cache.dtype;
  p->positions_i64 = pos.dtype == kh_kernels::DType::kI64;
  p->neox = neox;
  p->device = q.device;
  return KH_OK;
}

}  // namespace kh_rotary

// rotary_cpu.cpp: the CPU backend of rotary_embedding, also its oracle: every rotation is
// computed in double from the stored values and each output element is rounded to its dtype
// exactly once. Positions are on the host here, so one outside [0, max_position) refuses the
// call (naming it) before anything is written; the GPU backends, which cannot report without a
// host synchronisation, leave such a token untouched instead.
#include "kh_kernel/cpu_dispatch.hpp"
#include "rotary_args.hpp"
#include "rotary_ops.hpp"

namespace kh_rotary {
namespace {

using kh_kernels::from_double;
using kh_kernels::to_double;

int64_t position_of(const RotaryParams& p, int64_t t) {
  const int64_t at = t * p.positions_stride;
  return p.positions_i64 ? static_cast<const int64_t*>(p.positions)[at] : static_cast<const int32_t*>(p.positions)[at];
}

template <typename T>
void rotate_head(const RotaryParams& p, T* x, const void* cache_row) {
  const int64_t half = p.rotary_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double c = kh_kernels::load_as_double(cache_row, p.cache_dtype, i);
    const double s = kh_kernels::load_as_double(cache_row, p.cache_dtype, half + i);
    T& xa = x[p.neox ? i : 2 * i];
    T& xb = x[p.neox ? half + i : 2 * i + 1];
    const double a = to_double(xa), b = to_double(xb);
    xa = from_double<T>(a * c - b * s);
    xb = from_double<T>(b * c + a * s);
  }
}

template <typename T>
void rotate(const RotaryParams& p) {
  const int64_t cache_bytes = kh_kernels::dtype_size(p.cache_dtype);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const void* row = static_cast<const char*>(p.cache) + position_of(p, t) * p.cache_row_stride * cache_bytes;
    for (int64_t h = 0; h < p.heads_q; ++h)
      rotate_head(p, static_cast<T*>(p.query) + t * p.q_token_stride + h * p.q_head_stride, row);
    for (int64_t h = 0; h < p.heads_kv; ++h)
      rotate_head(p, static_cast<T*>(p.key) + t * p.k_token_stride + h * p.k_head_stride, row);
  }
}

}  // namespace

kh_status run_rotary(const kh_kernels::OpContext& c, const RotaryParams& p) {
  if (p.empty()) return KH_OK;
  for (int64_t t = 0; t < p.tokens; ++t) {
    const int64_t pos = position_of(p, t);
    if (pos < 0 || pos >= p.max_position)
      return kh_kernels::arg_error(c, "positions", "positions[%lld] = %lld is outside [0, max_position = "
                                   "cos_sin_cache.shape[0] = %lld); nothing was written",
                                   (long long)t, (long long)pos, (long long)p.max_position);
  }
  kh_kernels::dispatch_float(p.dtype, [&](auto tag) { rotate<typename decltype(tag)::type>(p); });
  return KH_OK;
}

}  // namespace kh_rotary

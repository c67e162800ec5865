// layer_norm_cpu.cpp: the CPU backend of layer-norm, also the test oracle: every sum is taken
// in double and each output element is rounded to its dtype exactly once.
//   layer_norm:            out = (x - mean) / sqrt(var + eps) * weight + bias  (biased var)
//   fused_add_layer_norm:  residual_out = round(x + residual); out = layer_norm(residual_out)
#include <cmath>
#include <vector>

#include "kh_kernel/args.hpp"
#include "kh_kernel/cpu_dispatch.hpp"
#include "layer_norm_args.hpp"
#include "layer_norm_ops.hpp"

namespace kh_layer_norm {
namespace {

using kh_kernels::from_double;
using kh_kernels::to_double;

template <typename T>
void layer_norm_rows(const LayerNormParams& p) {
  const int64_t hidden = p.hidden;
  std::vector<double> row(static_cast<size_t>(hidden));
  std::vector<double> weight(static_cast<size_t>(hidden), 1.0);
  std::vector<double> bias(static_cast<size_t>(hidden), 0.0);
  for (int64_t c = 0; c < hidden; ++c) {
    if (p.weight) weight[c] = kh_kernels::load_as_double(p.weight, p.weight_dtype, c);
    if (p.bias) bias[c] = kh_kernels::load_as_double(p.bias, p.bias_dtype, c);
  }

  for (int64_t r = 0; r < p.rows; ++r) {
    const T* x = static_cast<const T*>(p.x) + p.x_rows.offset(r);
    if (p.fused) {
      const T* residual = static_cast<const T*>(p.residual) + p.residual_rows.offset(r);
      T* residual_out = static_cast<T*>(p.residual_out) + p.residual_out_rows.offset(r);
      for (int64_t c = 0; c < hidden; ++c) {
        const T sum = from_double<T>(to_double(x[c]) + to_double(residual[c]));
        residual_out[c] = sum;  // may be x or residual itself: element c was read just above
        row[c] = to_double(sum);
      }
    } else {
      for (int64_t c = 0; c < hidden; ++c) row[c] = to_double(x[c]);
    }
    double sum = 0;
    for (int64_t c = 0; c < hidden; ++c) sum += row[c];
    const double mean = sum / static_cast<double>(hidden);
    double sum_squares = 0;  // two passes: no cancellation in the variance
    for (int64_t c = 0; c < hidden; ++c) sum_squares += (row[c] - mean) * (row[c] - mean);
    const double inv_std = 1.0 / std::sqrt(sum_squares / static_cast<double>(hidden) + p.eps);
    T* out = static_cast<T*>(p.out) + p.out_rows.offset(r);  // may be x: the row is in `row`
    for (int64_t c = 0; c < hidden; ++c) out[c] = from_double<T>((row[c] - mean) * inv_std * weight[c] + bias[c]);
  }
}

kh_status run(const LayerNormParams& p) {
  if (p.rows == 0) return KH_OK;
  kh_kernels::dispatch_float(p.dtype, [&](auto tag) { layer_norm_rows<typename decltype(tag)::type>(p); });
  return KH_OK;
}

}  // namespace

kh_status layer_norm_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return kh_kernels::guarded({"layer_norm", ctx, KH_DEVICE_TYPE}, [&] {
    LayerNormParams p;
    KH_KERNEL_TRY(parse_layer_norm_args(args, nargs, ctx, &p));
    return run(p);
  });
}

kh_status fused_add_layer_norm_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return kh_kernels::guarded({"fused_add_layer_norm", ctx, KH_DEVICE_TYPE}, [&] {
    LayerNormParams p;
    KH_KERNEL_TRY(parse_fused_add_layer_norm_args(args, nargs, ctx, &p));
    return run(p);
  });
}

}  // namespace kh_layer_norm

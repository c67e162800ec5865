// activation_args.cpp: the rules of the activation ops' arguments (shapes, dtypes, strides,
// memory overlap, the fatrelu threshold). KH_DEVICE_TYPE comes from the library's variant.
// Nothing here reads tensor data: a GPU call needs no host synchronisation.
#include "activation_args.hpp"

#include <cmath>

#include "kh_kernel/args.hpp"
#include "kh_kernel/pointwise_args.hpp"

namespace kh_activation {

using kh_kernels::arg_error;
using kh_kernels::Presence;
using kh_kernels::TensorView;

const char* act_op_name(ActKind kind) {
  switch (kind) {
    case ActKind::kSilu: return "silu_and_mul";
    case ActKind::kGelu: return "gelu_and_mul";
    case ActKind::kGeluTanh: return "gelu_tanh_and_mul";
    case ActKind::kFatRelu: return "fatrelu_and_mul";
  }
  return "activation";
}

namespace {

constexpr uint32_t kActDtypes = KH_DTYPE_F32 | KH_DTYPE_F16 | KH_DTYPE_BF16;

// The largest float at or below v (v finite): a float a exceeds it exactly when a > v, so the
// GPU's fp32 comparison decides as the CPU's double one does.
float float_at_or_below(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) > v) f = std::nextafter(f, -INFINITY);
  return f;
}

bool same_rows(const kh_kernels::RowLayout& a, const kh_kernels::RowLayout& b) {
  if (a.ndim != b.ndim) return false;
  for (int32_t i = 0; i < a.ndim; ++i)
    if (a.size[i] != b.size[i] || a.stride[i] != b.stride[i]) return false;
  return true;
}

}  // namespace

kh_status parse_activation_args(ActKind kind, const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                ActivationParams* p) {
  *p = ActivationParams{};
  const kh_kernels::OpContext c{act_op_name(kind), ctx, KH_DEVICE_TYPE};
  KH_KERNEL_TRY(kh_kernels::check_nargs(c, args, nargs, kind == ActKind::kFatRelu ? kFatReluNumArgs : kActNumArgs));

  TensorView x, out;
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kX, "x", Presence::kRequired, &x));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, "x", x, kActDtypes));
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, "x", x, 1, -1));
  KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, "x", x));
  const int64_t two_d = x.size(-1);
  if (two_d < 2 || two_d % 2 != 0)
    return arg_error(c, "x", "the last dimension must be 2 d with d >= 1 (act's input, then the gate), got %lld",
                     (long long)two_d);
  const int64_t d = two_d / 2;

  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kOut, "out", Presence::kRequired, &out));
  KH_KERNEL_TRY(kh_kernels::check_same_device(c, "out", out, "x", x));
  KH_KERNEL_TRY(kh_kernels::check_same_dtype(c, "out", out, "x", x));
  bool fits = out.ndim == x.ndim && out.size(-1) == d;
  for (int32_t i = 0; fits && i + 1 < x.ndim; ++i) fits = out.shape[i] == x.shape[i];
  if (!fits)
    return arg_error(c, "out", "shape %s does not fit x's shape %s: expected x's leading dims and a last dim of "
                     "d = %lld", kh_kernels::shape_string(out).c_str(), kh_kernels::shape_string(x).c_str(),
                     (long long)d);
  KH_KERNEL_TRY(kh_kernels::check_last_dim_contiguous(c, "out", out));
  KH_KERNEL_TRY(kh_kernels::check_distinct_elements(c, "out", out));
  KH_KERNEL_TRY(kh_kernels::rows_of(c, "x", x, &p->x_rows));
  KH_KERNEL_TRY(kh_kernels::rows_of(c, "out", out, &p->out_rows));

  // In place means out = x[..., :d] exactly; any other shared byte is refused.
  const bool in_place = out.data == x.data && same_rows(p->out_rows, p->x_rows);
  if (!in_place) {
    uintptr_t out_lo, out_hi, x_lo, x_hi;
    out.byte_extent(&out_lo, &out_hi);
    x.byte_extent(&x_lo, &x_hi);
    if (out_lo < x_hi && x_lo < out_hi)
      return arg_error(c, "out", "overlaps x in memory; out must be its own buffer, or x[..., :d] exactly (same data "
                       "pointer and leading strides as x) to compute in place");
  }

  if (kind == ActKind::kFatRelu) {
    KH_KERNEL_TRY(kh_kernels::double_arg(c, args, kThreshold, "threshold", &p->threshold));
    KH_KERNEL_TRY(kh_kernels::check_finite(c, "threshold", p->threshold));
    p->threshold_f32 = float_at_or_below(p->threshold);
  }

  p->out = out.data;
  p->x = x.data;
  p->rows = x.numel() / two_d;
  p->d = d;
  p->dtype = x.dtype;
  p->kind = kind;
  p->device = x.device;
  return KH_OK;
}

}  // namespace kh_activation

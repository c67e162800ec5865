// kh_kernel/norm_args.hpp: the argument rules shared by the row-wise norms (rms-norm and
// layer-norm, plain and fused with a residual add), turning op arguments into NormParams.
// Each package's <pkg>_args.cpp describes where its arguments sit and calls parse_norm_args().
#pragma once

#include <cstdint>

#include "kh_kernel/args.hpp"
#include "kh_kernel/tensor.hpp"

namespace kh_kernels {

// A validated norm call. x, out, residual and residual_out are (rows, hidden) views whose
// rows sit anywhere (RowLayout) and whose elements within a row are contiguous; weight and
// bias are contiguous [hidden] vectors. out may be x or residual exactly, residual_out may be
// x or residual exactly; outputs never overlap each other. Kernels must therefore read a
// row element's inputs before writing that element's outputs (or read the whole row first).
struct NormParams {
  void* out = nullptr;
  void* residual_out = nullptr;  // fused only: x + residual rounded to dtype
  const void* x = nullptr;
  const void* residual = nullptr;  // fused only
  const void* weight = nullptr;    // nullptr: no weight (layer-norm only), i.e. 1
  const void* bias = nullptr;      // nullptr: no bias, i.e. 0
  RowLayout out_rows, residual_out_rows, x_rows, residual_rows;
  int64_t rows = 0;    // 0: nothing to do
  int64_t hidden = 0;  // >= 1
  DType dtype = DType::kUnknown;         // x, out, residual, residual_out: F32, F16 or BF16
  DType weight_dtype = DType::kUnknown;  // F32 or dtype; kUnknown when absent
  DType bias_dtype = DType::kUnknown;    // F32 or dtype; kUnknown when absent
  double eps = 0;                        // finite, >= 0
  bool fused = false;
  DLDevice device = {kDLCPU, 0};
};

// Where an op's arguments sit in its schema; -1: the op has no such argument.
struct NormArgLayout {
  uint32_t count;
  int32_t out, residual_out, x, residual, weight, bias, eps;
  bool weight_optional;
};

constexpr uint32_t kNormDtypes = KH_DTYPE_F32 | KH_DTYPE_F16 | KH_DTYPE_BF16;

namespace detail {

inline kh_status norm_vector_arg(const OpContext& c, const kh_value* args, int32_t index, const char* name,
                                 Presence presence, const TensorView& x, int64_t hidden, TensorView* out) {
  KH_KERNEL_TRY(tensor_arg(c, args, static_cast<uint32_t>(index), name, presence, out));
  if (!out->present()) return KH_OK;
  KH_KERNEL_TRY(check_same_device(c, name, *out, "x", x));
  if (out->dtype != DType::kF32 && out->dtype != x.dtype)
    return arg_error(c, name, "dtype %s is not supported (expected float32 or x's dtype %s)",
                     dtype_name(out->dtype), dtype_name(x.dtype));
  if (out->ndim != 1 || out->shape[0] != hidden)
    return arg_error(c, name, "shape %s does not match x's last dim %lld", shape_string(*out).c_str(),
                     (long long)hidden);
  return check_last_dim_contiguous(c, name, *out);
}

inline kh_status norm_rows(const OpContext& c, const char* name, const TensorView& t, RowLayout* rows) {
  if (!make_row_layout(t, rows))
    return arg_error(c, name, "its leading dimensions do not collapse into %d or fewer strided dims; "
                     "make it contiguous first", kMaxRowDims);
  return KH_OK;
}

}  // namespace detail

inline kh_status parse_norm_args(const OpContext& c, const kh_value* args, uint32_t nargs, const NormArgLayout& L,
                                 NormParams* p) {
  *p = NormParams{};
  KH_KERNEL_TRY(check_nargs(c, args, nargs, L.count));
  p->fused = L.residual >= 0;

  TensorView x, out, residual, residual_out, weight, bias;
  KH_KERNEL_TRY(tensor_arg(c, args, L.x, "x", Presence::kRequired, &x));
  KH_KERNEL_TRY(check_dtype(c, "x", x, kNormDtypes));
  KH_KERNEL_TRY(check_ndim(c, "x", x, 1, -1));
  KH_KERNEL_TRY(check_last_dim_contiguous(c, "x", x));
  const int64_t hidden = x.size(-1);
  if (hidden < 1) return arg_error(c, "x", "the last dimension (hidden size) must be >= 1, got %lld", (long long)hidden);

  struct RowTensor {
    int32_t index;
    const char* name;
    TensorView* view;
  };
  const RowTensor row_tensors[] = {{L.out, "out", &out},
                                   {L.residual_out, "residual_out", &residual_out},
                                   {L.residual, "residual", &residual}};
  for (const RowTensor& r : row_tensors) {
    if (r.index < 0) continue;
    KH_KERNEL_TRY(tensor_arg(c, args, static_cast<uint32_t>(r.index), r.name, Presence::kRequired, r.view));
    KH_KERNEL_TRY(check_same_device(c, r.name, *r.view, "x", x));
    KH_KERNEL_TRY(check_same_dtype(c, r.name, *r.view, "x", x));
    KH_KERNEL_TRY(check_same_shape(c, r.name, *r.view, "x", x));
    KH_KERNEL_TRY(check_last_dim_contiguous(c, r.name, *r.view));
  }
  KH_KERNEL_TRY(detail::norm_vector_arg(c, args, L.weight, "weight",
                                        L.weight_optional ? Presence::kOptional : Presence::kRequired, x, hidden,
                                        &weight));
  if (L.bias >= 0)
    KH_KERNEL_TRY(detail::norm_vector_arg(c, args, L.bias, "bias", Presence::kOptional, x, hidden, &bias));

  double eps = 0;
  KH_KERNEL_TRY(double_arg(c, args, static_cast<uint32_t>(L.eps), "eps", &eps));
  KH_KERNEL_TRY(check_finite(c, "eps", eps));
  if (eps < 0) return arg_error(c, "eps", "must be >= 0, got %g", eps);

  // Outputs never overlap each other; an output may be an input exactly, nothing else.
  KH_KERNEL_TRY(check_no_overlap(c, "out", out, "residual_out", residual_out, Alias::kForbidden));
  const struct {
    const char* name;
    const TensorView* view;
    Alias alias;
  } inputs[] = {{"x", &x, Alias::kExactAllowed},
                {"residual", &residual, Alias::kExactAllowed},
                {"weight", &weight, Alias::kForbidden},
                {"bias", &bias, Alias::kForbidden}};
  for (const auto& in : inputs) {
    KH_KERNEL_TRY(check_no_overlap(c, "out", out, in.name, *in.view, in.alias));
    KH_KERNEL_TRY(check_no_overlap(c, "residual_out", residual_out, in.name, *in.view, in.alias));
  }

  KH_KERNEL_TRY(detail::norm_rows(c, "x", x, &p->x_rows));
  KH_KERNEL_TRY(detail::norm_rows(c, "out", out, &p->out_rows));
  if (p->fused) {
    KH_KERNEL_TRY(detail::norm_rows(c, "residual", residual, &p->residual_rows));
    KH_KERNEL_TRY(detail::norm_rows(c, "residual_out", residual_out, &p->residual_out_rows));
  }

  p->out = out.data;
  p->residual_out = residual_out.data;
  p->x = x.data;
  p->residual = residual.data;
  p->weight = weight.present() ? weight.data : nullptr;
  p->bias = bias.present() ? bias.data : nullptr;
  p->rows = x.numel() / hidden;
  p->hidden = hidden;
  p->dtype = x.dtype;
  p->weight_dtype = weight.present() ? weight.dtype : DType::kUnknown;
  p->bias_dtype = bias.present() ? bias.dtype : DType::kUnknown;
  p->eps = eps;
  p->device = x.device;
  return KH_OK;
}

}  // namespace kh_kernels

// The scale op's argument rules and entry point, the same on every backend: validate (nothing
// runs for a refused call), then the backend's run_scale. No exception crosses the C ABI.
#include "scale_args.hpp"

#include <cmath>

namespace kh_@KH_IDENT@ {

using kh_kernels::Presence;
using kh_kernels::TensorView;

kh_status parse_scale_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx, ScaleParams* p) {
  const kh_kernels::OpContext c{"scale", ctx, KH_DEVICE_TYPE};
  KH_KERNEL_TRY(kh_kernels::check_nargs(c, args, nargs, kScaleNumArgs));
  TensorView out, x;
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kX, "x", Presence::kRequired, &x));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, "x", x, KH_DTYPE_F32));
  KH_KERNEL_TRY(kh_kernels::check_contiguous(c, "x", x));
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, kOut, "out", Presence::kRequired, &out));
  KH_KERNEL_TRY(kh_kernels::check_same_device(c, "out", out, "x", x));
  KH_KERNEL_TRY(kh_kernels::check_same_dtype(c, "out", out, "x", x));
  KH_KERNEL_TRY(kh_kernels::check_same_shape(c, "out", out, "x", x));
  KH_KERNEL_TRY(kh_kernels::check_contiguous(c, "out", out));
  if (out.data != x.data) {  // in place is fine; a partial overlap would read what was written
    uintptr_t out_lo, out_hi, x_lo, x_hi;
    out.byte_extent(&out_lo, &out_hi);
    x.byte_extent(&x_lo, &x_hi);
    if (out_lo < x_hi && x_lo < out_hi)
      return kh_kernels::arg_error(c, "out", "overlaps x in memory; pass x itself to scale in place");
  }
  double alpha = 0;
  KH_KERNEL_TRY(kh_kernels::double_arg(c, args, kAlpha, "alpha", &alpha));
  KH_KERNEL_TRY(kh_kernels::check_finite(c, "alpha", alpha));
  p->out = out.ptr<float>();
  p->x = x.ptr<const float>();
  p->alpha = static_cast<float>(alpha);
  p->n = x.numel();
  p->device = x.device.device_id;
  return KH_OK;
}

kh_status scale_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const kh_kernels::OpContext c{"scale", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&] {
    ScaleParams p;
    KH_KERNEL_TRY(parse_scale_args(args, nargs, ctx, &p));
    return run_scale(c, p);
  });
}

}  // namespace kh_@KH_IDENT@

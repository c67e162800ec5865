// rms_norm_cuda.cu: the op entries of the rms-norm CUDA backend (sm80 and sm90a builds):
// validate with the shared rules, then launch the dtype's kernels on the caller's stream.
//   rms_norm:            out = x / sqrt(mean(x^2) + eps) * weight
//   fused_add_rms_norm:  residual_out = round(x + residual); out = rms_norm(residual_out)
// The kernels are in row_norm_engine.cuh; kernel.json (build.backends.cuda) says how this is built.
#include "kh_kernel/args.hpp"
#include "rms_norm_args.hpp"
#include "rms_norm_cuda.hpp"
#include "rms_norm_ops.hpp"
#include "kh_kernel/row_norm_engine.cuh"

namespace kh_rms_norm {
namespace {

constexpr kh_row_norm::RowNormLaunchers kLaunchers{&launch_rms_norm_f32, &launch_rms_norm_f16,
                                                   &launch_rms_norm_bf16};

}  // namespace

kh_status rms_norm_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const kh_kernels::OpContext c{"rms_norm", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&] {
    RmsNormParams p;
    KH_KERNEL_TRY(parse_rms_norm_args(args, nargs, ctx, &p));
    return kh_row_norm::run_row_norm(c, p, kLaunchers);
  });
}

kh_status fused_add_rms_norm_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const kh_kernels::OpContext c{"fused_add_rms_norm", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&] {
    RmsNormParams p;
    KH_KERNEL_TRY(parse_fused_add_rms_norm_args(args, nargs, ctx, &p));
    return kh_row_norm::run_row_norm(c, p, kLaunchers);
  });
}

}  // namespace kh_rms_norm

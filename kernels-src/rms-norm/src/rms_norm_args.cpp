// rms_norm_args.cpp: where the rms-norm ops' arguments sit; the rules are shared with
// layer-norm (kh_kernel/norm_args.hpp). KH_DEVICE_TYPE comes from the library's variant.
#include "rms_norm_args.hpp"

namespace kh_rms_norm {

kh_status parse_rms_norm_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx, RmsNormParams* p) {
  const kh_kernels::OpContext c{"rms_norm", ctx, KH_DEVICE_TYPE};
  const kh_kernels::NormArgLayout layout{kRmsNormNumArgs, kOut, -1, kX, -1, kWeight, -1, kEps, false};
  return kh_kernels::parse_norm_args(c, args, nargs, layout, p);
}

kh_status parse_fused_add_rms_norm_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                        RmsNormParams* p) {
  const kh_kernels::OpContext c{"fused_add_rms_norm", ctx, KH_DEVICE_TYPE};
  const kh_kernels::NormArgLayout layout{kFusedAddRmsNormNumArgs, kFusedOut, kFusedResidualOut, kFusedX,
                                        kFusedResidual, kFusedWeight, -1, kFusedEps, false};
  return kh_kernels::parse_norm_args(c, args, nargs, layout, p);
}

}  // namespace kh_rms_norm

// layer_norm_args.cpp: where the layer-norm ops' arguments sit; the rules are shared with
// rms-norm (kh_kernel/norm_args.hpp). KH_DEVICE_TYPE comes from the library's variant.
#include "layer_norm_args.hpp"

namespace kh_layer_norm {

kh_status parse_layer_norm_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx, LayerNormParams* p) {
  const kh_kernels::OpContext c{"layer_norm", ctx, KH_DEVICE_TYPE};
  const kh_kernels::NormArgLayout layout{kLayerNormNumArgs, kOut, -1, kX, -1, kWeight, kBias, kEps, true};
  return kh_kernels::parse_norm_args(c, args, nargs, layout, p);
}

kh_status parse_fused_add_layer_norm_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                          LayerNormParams* p) {
  const kh_kernels::OpContext c{"fused_add_layer_norm", ctx, KH_DEVICE_TYPE};
  const kh_kernels::NormArgLayout layout{kFusedAddLayerNormNumArgs, kFusedOut, kFusedResidualOut, kFusedX,
                                        kFusedResidual, kFusedWeight, kFusedBias, kFusedEps, true};
  return kh_kernels::parse_norm_args(c, args, nargs, layout, p);
}

}  // namespace kh_layer_norm

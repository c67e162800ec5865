// layer_norm_args.hpp: the backend-independent argument rules of the layer-norm ops. Every
// backend's entry function calls parse_*_args() first and computes from the params only.
#pragma once

#include <cstdint>

#include "kh/kernel_abi.h"
#include "kh_kernel/norm_args.hpp"

namespace kh_layer_norm {

// Schema positions.
// layer_norm(Tensor(a!) out, Tensor x, Tensor? weight, Tensor? bias, float eps) -> ()
enum LayerNormArg : uint32_t { kOut = 0, kX, kWeight, kBias, kEps, kLayerNormNumArgs };
// fused_add_layer_norm(Tensor(a!) out, Tensor(b!) residual_out, Tensor x, Tensor residual,
//                      Tensor? weight, Tensor? bias, float eps) -> ()
enum FusedAddLayerNormArg : uint32_t {
  kFusedOut = 0,
  kFusedResidualOut,
  kFusedX,
  kFusedResidual,
  kFusedWeight,
  kFusedBias,
  kFusedEps,
  kFusedAddLayerNormNumArgs
};

// out = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias per row (biased variance);
// weight and bias may be NULL (1 and 0).
using LayerNormParams = kh_kernels::NormParams;

kh_status parse_layer_norm_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx, LayerNormParams* p);
// residual_out = round(x + residual); out = layer_norm(residual_out). fused is true.
kh_status parse_fused_add_layer_norm_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                          LayerNormParams* p);

}  // namespace kh_layer_norm

// rms_norm_args.hpp: the backend-independent argument rules of the rms-norm ops. Every
// backend's entry function calls parse_*_args() first and computes from the params only.
#pragma once

#include <cstdint>

#include "kh/kernel_abi.h"
#include "kh_kernel/norm_args.hpp"

namespace kh_rms_norm {

// Schema positions.
// rms_norm(Tensor(a!) out, Tensor x, Tensor weight, float eps) -> ()
enum RmsNormArg : uint32_t { kOut = 0, kX, kWeight, kEps, kRmsNormNumArgs };
// fused_add_rms_norm(Tensor(a!) out, Tensor(b!) residual_out, Tensor x, Tensor residual,
//                    Tensor weight, float eps) -> ()
enum FusedAddRmsNormArg : uint32_t {
  kFusedOut = 0,
  kFusedResidualOut,
  kFusedX,
  kFusedResidual,
  kFusedWeight,
  kFusedEps,
  kFusedAddRmsNormNumArgs
};

// out = x / sqrt(mean(x^2) + eps) * weight, per row. weight is required (weight_dtype set,
// bias NULL); fused is false.
using RmsNormParams = kh_kernels::NormParams;

kh_status parse_rms_norm_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx, RmsNormParams* p);
// residual_out = round(x + residual); out = rms_norm(residual_out) * weight. fused is true.
kh_status parse_fused_add_rms_norm_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                        RmsNormParams* p);

}  // namespace kh_rms_norm

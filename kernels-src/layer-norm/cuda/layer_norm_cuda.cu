// layer_norm_cuda.cu: the op entries of the layer-norm CUDA backend (sm80 and sm90a builds):
// validate with the shared rules, then launch the dtype's kernels on the caller's stream.
//   layer_norm:            out = (x - mean) / sqrt(var + eps) * weight + bias  (biased var)
//   fused_add_layer_norm:  residual_out = round(x + residual); out = layer_norm(residual_out)
// weight and bias are optional (1 and 0). The kernels are in row_norm_engine.cuh;
// kernel.json (build.backends.cuda) says how this is built.
#include "kh_kernel/args.hpp"
#include "layer_norm_args.hpp"
#include "layer_norm_cuda.hpp"
#include "layer_norm_ops.hpp"
#include "kh_kernel/row_norm_engine.cuh"

namespace kh_layer_norm {
namespace {

constexpr kh_row_norm::RowNormLaunchers kLaunchers{&launch_layer_norm_f32, &launch_layer_norm_f16,
                                                   &launch_layer_norm_bf16};

}  // namespace

kh_status layer_norm_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const kh_kernels::OpContext c{"layer_norm", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&] {
    LayerNormParams p;
    KH_KERNEL_TRY(parse_layer_norm_args(args, nargs, ctx, &p));
    return kh_row_norm::run_row_norm(c, p, kLaunchers);
  });
}

kh_status fused_add_layer_norm_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const kh_kernels::OpContext c{"fused_add_layer_norm", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&] {
    LayerNormParams p;
    KH_KERNEL_TRY(parse_fused_add_layer_norm_args(args, nargs, ctx, &p));
    return kh_row_norm::run_row_norm(c, p, kLaunchers);
  });
}

}  // namespace kh_layer_norm

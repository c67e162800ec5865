// activation_ops.cpp: the four op entries, the same on every backend: validate the arguments
// (nothing is launched or written for a refused call), then the backend's run_activation.
// No exception crosses the C ABI (guarded).
#include "activation_ops.hpp"

namespace kh_activation {
namespace {

kh_status invoke(ActKind kind, const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const kh_kernels::OpContext c{act_op_name(kind), ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&] {
    ActivationParams p;
    KH_KERNEL_TRY(parse_activation_args(kind, args, nargs, ctx, &p));
    return run_activation(c, p);
  });
}

}  // namespace

kh_status silu_and_mul_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return invoke(ActKind::kSilu, args, nargs, ctx);
}
kh_status gelu_and_mul_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return invoke(ActKind::kGelu, args, nargs, ctx);
}
kh_status gelu_tanh_and_mul_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return invoke(ActKind::kGeluTanh, args, nargs, ctx);
}
kh_status fatrelu_and_mul_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return invoke(ActKind::kFatRelu, args, nargs, ctx);
}

}  // namespace kh_activation

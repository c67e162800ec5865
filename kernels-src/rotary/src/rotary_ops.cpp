// rotary_ops.cpp: the op entry, the same on every backend: validate the arguments (nothing is
// launched or written for a refused call), then the backend's run_rotary. No exception crosses
// the C ABI (guarded).
#include "rotary_ops.hpp"

namespace kh_rotary {

kh_status rotary_embedding_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const kh_kernels::OpContext c{"rotary_embedding", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&] {
    RotaryParams p;
    KH_KERNEL_TRY(parse_rotary_args(args, nargs, ctx, &p));
    return run_rotary(c, p);
  });
}

}  // namespace kh_rotary

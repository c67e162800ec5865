// pointwise_launch.inl: the host side the element-wise kernels' CUDA and HIP builds share:
// one launch on the tensors' device and the caller's stream, a runtime error turned into a
// status with the runtime's message. pointwise_cuda.cuh / pointwise_hip.hpp include it after
// defining KH_PW_API(name) (cuda##name or hip##name), device_status(e), kDeviceErrorFormat and
// kMaxGridBlocks (how many blocks of up to 256 threads a launch may have).
// Nothing here allocates, copies or synchronises: an op call is legal under graph capture.
#if !defined(KH_PW_API)
#error "pointwise_launch.inl is included by pointwise_cuda.cuh or pointwise_hip.hpp"
#endif

#include <algorithm>
#include <cstddef>

#include "kh_kernel/args.hpp"

namespace kh_pointwise {

using GpuError = KH_PW_API(Error_t);
using GpuStream = KH_PW_API(Stream_t);

// The caller's stream (kh_call_ctx::stream); NULL: the default stream.
inline GpuStream call_stream(const kh_call_ctx* ctx) {
  const bool has = ctx != nullptr && ctx->struct_size >= offsetof(kh_call_ctx, stream) + sizeof(void*);
  return has ? static_cast<GpuStream>(ctx->stream) : nullptr;
}

// Blocks of a launch that needs `needed` of them; kernels loop over the rest.
inline unsigned grid_blocks(int64_t needed) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(needed, kMaxGridBlocks)));
}

// Runs launch(stream) -> GpuError with the tensors' device current, then gives the caller back
// the device it had.
template <typename Launch>
kh_status run_on_device(const kh_kernels::OpContext& c, int device_id, Launch&& launch) {
  int previous = -1;
  GpuError e = KH_PW_API(GetDevice)(&previous);
  if (e == KH_PW_API(Success) && previous != device_id) e = KH_PW_API(SetDevice)(device_id);
  if (e == KH_PW_API(Success)) e = launch(call_stream(c.ctx));
  if (previous >= 0 && previous != device_id) (void)KH_PW_API(SetDevice)(previous);
  if (e != KH_PW_API(Success))
    return kh_kernels::op_error(c, device_status(e), kDeviceErrorFormat, device_id, KH_PW_API(GetErrorString)(e),
                                KH_PW_API(GetErrorName)(e));
  return KH_OK;
}

}  // namespace kh_pointwise

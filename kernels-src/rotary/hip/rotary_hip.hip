// rotary_hip.hip: run_rotary of the HIP backend (rocm-gfx942): the dtype's launcher
// (rotary_hip_<dtype>.hip) on the tensors' device and the caller's stream (a hipStream_t).
// The op entry and its argument rules are in ../src; hip/CMakeLists.txt says how this builds.
#include "rotary_hip.hpp"

namespace kh_rotary {

kh_status run_rotary(const kh_kernels::OpContext& c, const RotaryParams& p) { return gpu::run_on_gpu(c, p); }

}  // namespace kh_rotary

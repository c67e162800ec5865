// activation_hip.hip: run_activation of the HIP backend (rocm-gfx942): the dtype's launcher
// (activation_hip_<dtype>.hip) on the tensors' device and the caller's stream (a hipStream_t).
// The op entries and their argument rules are in ../src; hip/CMakeLists.txt says how this builds.
#include "activation_hip.hpp"

namespace kh_activation {

kh_status run_activation(const kh_kernels::OpContext& c, const ActivationParams& p) {
  return gpu::run_on_gpu(c, p);
}

}  // namespace kh_activation

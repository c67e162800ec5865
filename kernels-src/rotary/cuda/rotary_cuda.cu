// rotary_cuda.cu: run_rotary of the CUDA backend (sm80 and sm90a builds): the dtype's launcher
// (rotary_cuda_<dtype>.cu) on the tensors' device and the caller's stream.
// The op entry and its argument rules are in ../src; cuda/CMakeLists.txt says how this builds.
#include "rotary_cuda.cuh"

namespace kh_rotary {

kh_status run_rotary(const kh_kernels::OpContext& c, const RotaryParams& p) { return gpu::run_on_gpu(c, p); }

}  // namespace kh_rotary

// activation_cuda.cu: run_activation of the CUDA backend (sm80 and sm90a builds): the dtype's
// launcher (activation_cuda_<dtype>.cu) on the tensors' device and the caller's stream.
// The op entries and their argument rules are in ../src; cuda/CMakeLists.txt says how this builds.
#include "activation_cuda.cuh"

namespace kh_activation {

kh_status run_activation(const kh_kernels::OpContext& c, const ActivationParams& p) {
  return gpu::run_on_gpu(c, p);
}

}  // namespace kh_activation

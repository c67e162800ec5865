// rms_norm_cuda_f32.cu: the f32 instantiations of the rms-norm CUDA kernels (plain and fused
// residual add, every row-size configuration, 16-byte and scalar accesses).
#include "rms_norm_cuda.hpp"
#include "kh_kernel/row_norm_engine.cuh"

namespace kh_rms_norm {

cudaError_t launch_rms_norm_f32(const kh_row_norm::RowNormArgs& a, bool fused, cudaStream_t stream) {
  return kh_row_norm::launch_row_norm<kh_row_norm::NormKind::kRms, float>(a, fused, stream);
}

}  // namespace kh_rms_norm

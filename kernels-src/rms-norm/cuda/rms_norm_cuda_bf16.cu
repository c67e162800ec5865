// rms_norm_cuda_bf16.cu: the bf16 instantiations of the rms-norm CUDA kernels (plain and fused
// residual add, every row-size configuration, 16-byte and scalar accesses).
#include "rms_norm_cuda.hpp"
#include "kh_kernel/row_norm_engine.cuh"

namespace kh_rms_norm {

cudaError_t launch_rms_norm_bf16(const kh_row_norm::RowNormArgs& a, bool fused, cudaStream_t stream) {
  return kh_row_norm::launch_row_norm<kh_row_norm::NormKind::kRms, __nv_bfloat16>(a, fused, stream);
}

}  // namespace kh_rms_norm

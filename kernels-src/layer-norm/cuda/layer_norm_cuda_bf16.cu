// layer_norm_cuda_bf16.cu: the bf16 instantiations of the layer-norm CUDA kernels (plain and
// fused residual add, every row-size configuration, 16-byte and scalar accesses).
#include "layer_norm_cuda.hpp"
#include "kh_kernel/row_norm_engine.cuh"

namespace kh_layer_norm {

cudaError_t launch_layer_norm_bf16(const kh_row_norm::RowNormArgs& a, bool fused, cudaStream_t stream) {
  return kh_row_norm::launch_row_norm<kh_row_norm::NormKind::kLayer, __nv_bfloat16>(a, fused, stream);
}

}  // namespace kh_layer_norm

// layer_norm_cuda.hpp: the per-dtype launchers of the layer-norm CUDA backend. Each lives in its
// own translation unit, layer_norm_cuda_<dtype>.cu, generated from layer_norm_cuda_dtype.cu.in
// (kernel.json, build.backends.cuda.generate), so the kernel instantiations build in parallel;
// layer_norm_cuda.cu (the op entries) picks one by dtype.
#pragma once

#include <cuda_runtime_api.h>

namespace kh_row_norm {
struct RowNormArgs;
}

namespace kh_layer_norm {

cudaError_t launch_layer_norm_f32(const kh_row_norm::RowNormArgs& a, bool fused, cudaStream_t stream);
cudaError_t launch_layer_norm_f16(const kh_row_norm::RowNormArgs& a, bool fused, cudaStream_t stream);
cudaError_t launch_layer_norm_bf16(const kh_row_norm::RowNormArgs& a, bool fused, cudaStream_t stream);

}  // namespace kh_layer_norm

// rms_norm_cuda.hpp: the per-dtype launchers of the rms-norm CUDA backend. Each lives in its own
// translation unit, rms_norm_cuda_<dtype>.cu, generated from rms_norm_cuda_dtype.cu.in
// (kernel.json, build.backends.cuda.generate), so the kernel instantiations build in parallel;
// rms_norm_cuda.cu (the op entries) picks one by dtype.
#pragma once

#include <cuda_runtime_api.h>

namespace kh_row_norm {
struct RowNormArgs;
}

namespace kh_rms_norm {

cudaError_t launch_rms_norm_f32(const kh_row_norm::RowNormArgs& a, bool fused, cudaStream_t stream);
cudaError_t launch_rms_norm_f16(const kh_row_norm::RowNormArgs& a, bool fused, cudaStream_t stream);
cudaError_t launch_rms_norm_bf16(const kh_row_norm::RowNormArgs& a, bool fused, cudaStream_t stream);

}  // namespace kh_rms_norm

// layer_norm_hip.hpp: the per-dtype launchers of the layer-norm HIP backend (gfx942). Each lives
// in its own translation unit, layer_norm_hip_<dtype>.hip, generated from
// layer_norm_hip_dtype.hip.in (kernel.json, build.backends.hip.generate), so the kernel
// instantiations build in parallel; layer_norm_hip.hip (the op entries) picks one by dtype.
#pragma once

#include <hip/hip_runtime_api.h>

namespace kh_row_norm {
struct RowNormArgs;
}

namespace kh_layer_norm {

hipError_t launch_layer_norm_f32(const kh_row_norm::RowNormArgs& a, bool fused, hipStream_t stream);
hipError_t launch_layer_norm_f16(const kh_row_norm::RowNormArgs& a, bool fused, hipStream_t stream);
hipError_t launch_layer_norm_bf16(const kh_row_norm::RowNormArgs& a, bool fused, hipStream_t stream);

}  // namespace kh_layer_norm

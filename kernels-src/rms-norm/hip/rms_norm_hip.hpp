// rms_norm_hip.hpp: the per-dtype launchers of the rms-norm HIP backend (gfx942). Each lives in
// its own translation unit, rms_norm_hip_<dtype>.hip, generated from rms_norm_hip_dtype.hip.in
// (kernel.json, build.backends.hip.generate), so the kernel instantiations build in parallel;
// rms_norm_hip.hip (the op entries) picks one by dtype.
#pragma once

#include <hip/hip_runtime_api.h>

namespace kh_row_norm {
struct RowNormArgs;
}

namespace kh_rms_norm {

hipError_t launch_rms_norm_f32(const kh_row_norm::RowNormArgs& a, bool fused, hipStream_t stream);
hipError_t launch_rms_norm_f16(const kh_row_norm::RowNormArgs& a, bool fused, hipStream_t stream);
hipError_t launch_rms_norm_bf16(const kh_row_norm::RowNormArgs& a, bool fused, hipStream_t stream);

}  // namespace kh_rms_norm

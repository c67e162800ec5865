// rms_norm_hip_f32.hip: the f32 instantiations of the rms-norm HIP kernels (plain and fused
// residual add, every row-size configuration, 16-byte and scalar accesses).
#include "rms_norm_hip.hpp"
#include "kh_kernel/row_norm_engine_hip.hpp"

namespace kh_rms_norm {

hipError_t launch_rms_norm_f32(const kh_row_norm::RowNormArgs& a, bool fused, hipStream_t stream) {
  return kh_row_norm::launch_row_norm<kh_row_norm::NormKind::kRms, float>(a, fused, stream);
}

}  // namespace kh_rms_norm

// layer_norm_hip_f16.hip: the f16 instantiations of the layer-norm HIP kernels (plain and fused
// residual add, every row-size configuration, 16-byte and scalar accesses).
#include "layer_norm_hip.hpp"
#include "kh_kernel/row_norm_engine_hip.hpp"

namespace kh_layer_norm {

hipError_t launch_layer_norm_f16(const kh_row_norm::RowNormArgs& a, bool fused, hipStream_t stream) {
  return kh_row_norm::launch_row_norm<kh_row_norm::NormKind::kLayer, _Float16>(a, fused, stream);
}

}  // namespace kh_layer_norm

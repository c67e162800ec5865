// attention_decode_gfx942_launch.hpp: the gfx942 decode launchers (as cuda/attention_decode.hpp
// and cuda/attention_decode_launch.hpp): split kernel instantiations per (dtype, TPR) in
// attention_decode_gfx942_<dtype>.hip, plan + combine in attention_decode_hip.hip.
#pragma once

#include <hip/hip_runtime_api.h>

#include "attention_decode_params.hpp"

namespace kh_attention {
namespace decode {

struct Bf16Tag;
struct F16Tag;

template <typename Tag, int TPR>
hipError_t run_decode_split(const DecodeParams& p, int rows, int row_tiles, int num_splits, hipStream_t stream);
template <typename Tag, int TPR>
int decode_split_occupancy(int rows);
hipError_t run_decode_combine(const DecodeParams& p, int num_splits, hipStream_t stream);
// attention_decode_paged_fp8 (1.2): the split kernel over e4m3 caches (attention_decode_gfx942_fp8_<dtype>.hip).
template <typename Tag, int TPR>
hipError_t run_decode_split_fp8(const DecodeParams& p, int rows, int row_tiles, int num_splits, hipStream_t stream);

struct DecodePlan {
  int tpr = 16, rows = 4, row_tiles = 1, splits = 1;  // as on CUDA (cuda/attention_decode_launch.hpp)
};
DecodePlan plan_decode(const DecodeParams& p, int device);
hipError_t launch_decode(const DecodeParams& p, const DecodePlan& plan, hipStream_t stream);
// p.kv_fp8: the e4m3 split kernel under the same plan (its occupancy is the bf16 kernel's: the same
// registers and merge buffer), then the same combine.
hipError_t launch_decode_fp8(const DecodeParams& p, const DecodePlan& plan, hipStream_t stream);

}  // namespace decode
}  // namespace kh_attention

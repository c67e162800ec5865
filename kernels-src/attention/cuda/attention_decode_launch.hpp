// attention_decode_launch.hpp: how attention_cuda.cu's op entry runs attention_decode_paged:
// plan (lane-group width, rows a CTA, row tiles, splits) from the shapes and the device, then
// launch (split kernel, and the combine kernel when split).
#pragma once

#include <cuda_runtime_api.h>

#include "attention_decode_params.hpp"

namespace kh_attention {
namespace decode {

struct DecodePlan {
  int tpr = 16;       // threads per key: next power of two >= head_dim / 8
  int rows = 4;       // query rows a CTA (4 or 8)
  int row_tiles = 1;  // CTAs per kv head: ceil(q_len * group / rows)
  int splits = 1;     // key splits per sequence, <= p.max_splits() (the workspace rule)
  int variant = 0;    // the split kernel: kVariantStaged, kVariantTensorPv or kVariantSimt (attention_decode.hpp)
  bool wide = false;  // the staged kernel in CTAs of kWideWarps warps (attention_decode_staged.cuh)
  bool tma = false;   // the wide CTA's ring filled by TMA (sm90a; attention_decode_tma.cuh)
  int balanced_grid = 0;  // > 0: the wide CTA on the length-balanced grid of that many CTAs
                          // (attention_decode_balanced.cuh), then its combine of the cut sequences
  bool dependent_combine = false;  // the combine kernel as a programmatic dependent launch (sm90)
};

DecodePlan plan_decode(const DecodeParams& p, int device);
cudaError_t launch_decode(const DecodeParams& p, const DecodePlan& plan, cudaStream_t stream);

}  // namespace decode
}  // namespace kh_attention

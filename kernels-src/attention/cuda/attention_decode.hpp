// attention_decode.hpp: the CUDA decode kernels' launchers, one explicit instantiation per
// (dtype, lane-group width TPR) in attention_decode_<dtype>_tpr<N>.cu; attention_decode_cuda.cu
// picks one per call and launches the combine step.
#pragma once

#include <cuda_runtime_api.h>

#include "attention_decode_params.hpp"

namespace kh_attention {
namespace decode {

struct Bf16Tag;
struct F16Tag;

// Split-kernel variants: staged ships (head dims up to 192; wider rows take tcpv's kernel); a
// development build's KH_ATTENTION_DECODE_VARIANT=tcpv|simt runs another everywhere (comparisons).
constexpr int kVariantStaged = 0, kVariantTensorPv = 1, kVariantSimt = 2;

struct DecodeTma;

// The split kernel over grid (num_splits, heads_kv * row_tiles, batch); rows: 4 or 8 query rows
// a CTA; variant: which kernel (attention_decode_mma.cuh, attention_decode_staged.cuh or
// attention_decode_kernel.inl); wide: the staged kernel's CTAs of kWideWarps warps; tma: the
// tensor maps the wide CTA's ring is filled through (sm90a), or null for cp.async.
template <typename Tag, int TPR>
cudaError_t run_decode_split(const DecodeParams& p, int rows, int row_tiles, int num_splits, int variant, bool wide,
                             const DecodeTma* tma, int balanced_grid, cudaStream_t stream);

// CTAs of the split kernel (for rows query rows, the head dim's kernel, CTA width, balanced
// grid or not) one SM holds at once; 0 for a wide or balanced CTA that is not built or does not fit.
template <typename Tag, int TPR>
int decode_split_occupancy(int rows, int head_dim, int variant, bool wide, bool balanced);

// Merges the splits' partials in the workspace into out and lse.
cudaError_t run_decode_combine(const DecodeParams& p, int num_splits, bool dependent, cudaStream_t stream);

}  // namespace decode
}  // namespace kh_attention

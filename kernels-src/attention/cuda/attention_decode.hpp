// attention_decode.hpp: the CUDA decode kernels' launchers, one explicit instantiation per
// (dtype, lane-group width TPR) in attention_decode_<dtype>_tpr<N>.cu; attention_decode_cuda.cu
// picks one per call and launches the combine step.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "attention_decode_params.hpp"

namespace kh_attention {
namespace decode {

struct Bf16Tag;
struct F16Tag;

// Split-kernel variants: staged ships (head dims up to 192; wider rows take tcpv's kernel); a
// development build's KH_ATTENTION_DECODE_VARIANT=tcpv|simt runs another everywhere (comparisons).
constexpr int kVariantStaged = 0, kVariantTensorPv = 1, kVariantSimt = 2;

struct DecodeTma;

// The tensor maps of a call's K and V caches for the TMA rings (attention_decode_tma.cuh): false
// in a build without them (sm80) or where the driver lacks the encoder or refuses the caches'
// address or strides; the call then takes the cp.async ring. e4m3: one-byte elements (the FP8
// kernel's caches), else q's 16-bit dtype.
bool encode_cache_maps(DecodeTma* maps, const DecodeParams& p, bool e4m3);

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

struct SplitChoice {
  int64_t splits = 1;
  double fill = -1.0;
};

// The split count in [1, smax] (the workspace rule's bound) whose CTAs fill the device's
// resident slots best (CTAs / (waves x slots)): the first that reaches 95%, else the best. A last
// wave that is mostly empty costs as much as a full one: b64 x 8k unsplit is 512 CTAs on 396
// slots, 65% (run 2 of cuda/NOTES.md "decode"). Shared by the bf16 kernels' plan and the FP8 one
// (attention_decode_fp8.cu).
inline SplitChoice best_split(int64_t units, int64_t slots, int64_t smax) {
  SplitChoice best;
  for (int64_t s = 1; s <= smax; ++s) {
    const int64_t ctas = units * s, waves = (ctas + slots - 1) / slots;
    const double fill = static_cast<double>(ctas) / static_cast<double>(waves * slots);
    if (fill > best.fill + 1e-9) best = {s, fill};
    if (fill >= 0.95) break;
  }
  return best;
}

// Merges the splits' partials in the workspace into out and lse.
cudaError_t run_decode_combine(const DecodeParams& p, int num_splits, bool dependent, cudaStream_t stream);

}  // namespace decode
}  // namespace kh_attention

// attention_decode_fp8_launch.hpp: the FP8-cache split kernel (attention_decode_fp8.cuh) as the op
// entries see it: one explicit instantiation per (dtype, head-dim bucket) in
// attention_decode_fp8_<dtype>_d<bucket>.cu (buckets 128, 256). the plan and launch of a decode call, and the packed
// (varlen) mode's launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "attention_decode_params.hpp"

namespace kh_attention {
namespace decode {

struct Bf16Tag;
struct F16Tag;

// The packed mode's sequences (attention_varlen_fwd_fp8 with a bf16/fp16 q); cu_q == nullptr: the
// paged mode (attention_decode_paged_fp8). lse: (heads_q, total_q) float32, or null.
struct Fp8VarlenArgs {
  const int32_t* cu_q = nullptr;
  const int32_t* cu_k = nullptr;
  int64_t cu_q_stride = 1, cu_k_stride = 1;
  int total_q = 0, total_k = 0, max_q = 0, max_k = 0;
  bool causal = false;
  float* lse = nullptr;
};

// Head-dim buckets of the FP8 kernel: 128 (head dims 32-128) and 256 (144-256). Chunks past
// head_dim are neither copied (zero-filled) nor multiplied (the key and value loops stop at the last
// chunk pair holding a dim), so a head dim of 64 in the 128 bucket does the 64 bucket's work; a 64
// bucket of its own faulted with an illegal instruction on the H100 (run 2 of cuda/NOTES.md "FP8")
// and was dropped, which also spares CI two translation units per CUDA target.
constexpr int decode_fp8_bucket(int head_dim) { return head_dim <= 128 ? 128 : 256; }

// The wide CTA (attention_decode_fp8.cuh): kDecodeFp8WideWarps warps, one CTA an SM, rings of
// kDecodeFp8WideStages stages; the 128 bucket only (a 256-bucket ring of 16 warps would not fit).
// Taken where one split of it fills the device while 4-warp CTAs would need several (no
// partials, no combine kernel: the bf16 kernels' rule, attention_decode_cuda.cu). Probe builds
// may reshape it (KH_DECODE_FP8_WIDE_WARPS, KH_DECODE_FP8_WIDE_STAGES; release builds never do).
#ifndef KH_DECODE_FP8_WIDE_WARPS
#define KH_DECODE_FP8_WIDE_WARPS 16
#endif
#ifndef KH_DECODE_FP8_WIDE_STAGES
#define KH_DECODE_FP8_WIDE_STAGES 3
#endif
// The CTA's width otherwise: 4 warps, several CTAs an SM.
constexpr int kDecodeFp8Warps = 4;
constexpr int kDecodeFp8WideWarps = KH_DECODE_FP8_WIDE_WARPS;
constexpr int kDecodeFp8WideStages = KH_DECODE_FP8_WIDE_STAGES;

struct DecodeTma;

// WARPS: kDecodeFp8Warps, or kDecodeFp8WideWarps at the 128 bucket. TMA (sm90a, the 128 bucket):
// the rings filled through tma's maps (encode_cache_maps), else by cp.async (tma unread).
template <typename Tag, int DP, int WARPS, bool TMA>
cudaError_t run_decode_fp8_split(const DecodeParams& p, const Fp8VarlenArgs& va, int row_tiles, int num_splits,
                                 const DecodeTma& tma, cudaStream_t stream);
template <typename Tag, int DP, int WARPS>
int decode_fp8_occupancy();

#define KH_DECODE_FP8_EXTERN(Tag, DP, WARPS)                                                                         \
  extern template cudaError_t run_decode_fp8_split<Tag, DP, WARPS, false>(const DecodeParams&, const Fp8VarlenArgs&, \
                                                                          int, int, const DecodeTma&, cudaStream_t); \
  extern template int decode_fp8_occupancy<Tag, DP, WARPS>();
#define KH_DECODE_FP8_EXTERN_TMA(Tag, DP, WARPS)                                                                    \
  extern template cudaError_t run_decode_fp8_split<Tag, DP, WARPS, true>(const DecodeParams&, const Fp8VarlenArgs&, \
                                                                         int, int, const DecodeTma&, cudaStream_t);

// attention_decode_paged_fp8: split count from the shapes and the device (the bf16 kernels' rule:
// best fill of the resident CTAs within max_splits), the split kernel, the combine when split.
cudaError_t launch_decode_fp8(const DecodeParams& p, cudaStream_t stream);
// attention_varlen_fwd_fp8 with a bf16/fp16 q: the packed mode over p (pointers and strides of q,
// k, v, out; heads, head_dim, scale, window, softcap, scales; batch = sequences, q_len =
// max_seqlen_q), one CTA per (kv head x 8 query rows, sequence), never split.
cudaError_t launch_varlen_fp8(const DecodeParams& p, const Fp8VarlenArgs& va, cudaStream_t stream);
// Query rows a CTA of the FP8 kernel takes (the grid's y is heads_kv x ceil(rows / this)).
constexpr int kDecodeFp8RowsPerCta = 8;

}  // namespace decode
}  // namespace kh_attention

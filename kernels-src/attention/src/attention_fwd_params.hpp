// attention_fwd_params.hpp: what every prefill attention kernel takes (CUDA sm80/sm90a, HIP
// gfx942), for attention_fwd and attention_varlen_fwd alike: raw pointers, element strides and
// sizes, filled by each backend's op entry from the validated op arguments
// (kh_attention::launch_params). Plain C++ (no kh headers): device code includes it too.
#pragma once

#include <cstdint>

namespace kh_attention {

enum class ElementType : uint32_t { kF16 = 0, kBF16 = 1 };

// Everything the kernel needs; strides are in elements, not bytes. Sequence b's rows:
//  - attention_fwd: q + b * q_batch_stride + i * q_row_stride (i < seqlen_q), likewise k, v, out;
//  - attention_varlen_fwd (cu_seqlens_q != nullptr): batch strides are 0 and row i of sequence
//    b is packed row seq_bounds(...).q_start + i (attention_visibility.hpp); seqlen_q and
//    seqlen_k hold max_seqlen_q and max_seqlen_k (the grid is sized from them).
// lse of row i of sequence b, head h: lse[b * lse_batch_stride + h * lse_head_stride +
// (q_start + i) * lse_row_stride] (attention_fwd: q_start 0).
struct FwdLaunchParams {
  const void* q = nullptr;  // (batch, seqlen_q, heads_q, head_dim) or (total_q, heads_q, head_dim)
  const void* k = nullptr;  // (batch, seqlen_k, heads_kv, head_dim) or (total_k, heads_kv, head_dim)
  const void* v = nullptr;  // (batch, seqlen_k, heads_kv, head_dim_v) or (total_k, heads_kv, head_dim_v)
  void* out = nullptr;      // (batch, seqlen_q, heads_q, head_dim_v) or (total_q, heads_q, head_dim_v)
  float* lse = nullptr;     // (batch, heads_q, seqlen_q) or (heads_q, total_q) fp32, or null

  int64_t q_batch_stride = 0, q_row_stride = 0, q_head_stride = 0;
  int64_t k_batch_stride = 0, k_row_stride = 0, k_head_stride = 0;
  int64_t v_batch_stride = 0, v_row_stride = 0, v_head_stride = 0;
  int64_t o_batch_stride = 0, o_row_stride = 0, o_head_stride = 0;
  int64_t lse_batch_stride = 0, lse_head_stride = 0, lse_row_stride = 0;

  // attention_varlen_fwd only (null: attention_fwd): (batch + 1) int32 offsets on the device.
  const int32_t* cu_seqlens_q = nullptr;
  const int32_t* cu_seqlens_k = nullptr;
  int64_t cu_seqlens_q_stride = 1, cu_seqlens_k_stride = 1;
  int64_t total_q = 0, total_k = 0;  // packed rows of q/out and of k/v

  int batch = 0;      // sequences
  int seqlen_q = 0;   // attention_fwd: every sequence's length; varlen: max_seqlen_q
  int seqlen_k = 0;   // attention_fwd: every sequence's length; varlen: max_seqlen_k
  int heads_q = 0;
  int heads_kv = 0;
  int head_dim = 0;    // of q and k
  int head_dim_v = 0;  // of v and out (head_dim, or 128 with head_dim 192)
  int window_left = -1;  // -1: no window; else keys j >= i + seqlen_k - seqlen_q - window_left
  float scale = 1.f;     // softmax scale applied to q.k
  float softcap = 0.f;   // 0: none; else s = softcap * tanh(scale * q.k / softcap)
  // The soft-cap's constants, computed once on the host: kernels read them from the parameter
  // bank where they use them (no register held across the key loop).
  float softcap_log2 = 0.f;        // softcap * log2(e): the capped score in the exp2 domain
  float scale_over_softcap = 0.f;  // scale / softcap
  bool causal = false;
  ElementType dtype = ElementType::kBF16;  // of out (and of q, k, v but in FP8)
  // attention_varlen_fwd_fp8 with an e4m3 q (FP8 prefill; the sm90a kernel): q, k and v hold
  // e4m3 bytes (strides in elements are bytes); the dequantized values are e4m3 *
  // <x>_scale[kv head * <x>_scale_stride] (stride 0: one factor), float32 on the device.
  bool fp8 = false;
  const float* q_scale = nullptr;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  int64_t q_scale_stride = 0, k_scale_stride = 0, v_scale_stride = 0;
  // FP8 prefill given a workspace (attention_fp8_vt.hpp): V transposed by a pre-pass into vt
  // (vt_columns bytes a head-dim row), each sequence's first column in vt_col0 (batch + 1 of
  // them, written on the device). Null vt: the kernel transposes each V block itself.
  void* vt = nullptr;
  int32_t* vt_col0 = nullptr;
  int64_t vt_columns = 0;
};

}  // namespace kh_attention

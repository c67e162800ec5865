// attention_fwd_gfx942.hpp: the host-side interface of the gfx942 (MI300, MFMA) attention
// forward: what the kernel takes (raw pointers, element strides, sizes) and the launchers.
//
// attention_hip.hip (the op entry) fills FwdParams from the validated op arguments and calls
// run_attention_fwd_gfx942(), which picks the compiled instantiation (head dim x dtype;
// causal is chosen inside). Each (head dim, dtype) pair lives in its own translation unit
// (attention_fwd_gfx942_hd<D>_<dtype>.hip) so the builds run in parallel.
#pragma once

#include <hip/hip_runtime_api.h>

#include <cstdint>

namespace kh_attention::gfx942 {

enum class ElementType : uint32_t { kF16 = 0, kBF16 = 1 };

// Everything the kernel needs; strides are in elements, not bytes.
struct FwdParams {
  const void* q = nullptr;  // (batch, seqlen_q, heads_q, head_dim), last dim contiguous
  const void* k = nullptr;  // (batch, seqlen_k, heads_kv, head_dim)
  const void* v = nullptr;  // (batch, seqlen_k, heads_kv, head_dim)
  void* out = nullptr;      // (batch, seqlen_q, heads_q, head_dim)
  float* lse = nullptr;     // (batch, heads_q, seqlen_q) fp32, or null

  int64_t q_batch_stride = 0, q_row_stride = 0, q_head_stride = 0;
  int64_t k_batch_stride = 0, k_row_stride = 0, k_head_stride = 0;
  int64_t v_batch_stride = 0, v_row_stride = 0, v_head_stride = 0;
  int64_t o_batch_stride = 0, o_row_stride = 0, o_head_stride = 0;
  int64_t lse_batch_stride = 0, lse_head_stride = 0, lse_row_stride = 0;

  int batch = 0;
  int seqlen_q = 0;
  int seqlen_k = 0;
  int heads_q = 0;
  int heads_kv = 0;
  int head_dim = 0;
  float scale = 1.f;  // softmax scale applied to q.k
  bool causal = false;
  ElementType dtype = ElementType::kBF16;
};

// Head dims this path compiles (the CUDA backends add 256).
constexpr bool gfx942_supports_head_dim(int head_dim) { return head_dim == 64 || head_dim == 128; }

// The kernel moves 16-byte chunks: data pointers must be 16-byte aligned and batch/row/head
// strides multiples of 8 elements.
bool fwd_params_aligned(const FwdParams& p);

// Launches on `stream`. Returns hipErrorInvalidValue for an unsupported head dim, else the
// launch's error (hipSuccess when it was queued). Shapes are assumed validated.
hipError_t run_attention_fwd_gfx942(const FwdParams& p, hipStream_t stream);

// One per translation unit; causal is chosen inside.
template <int kHeadDim, ElementType kType>
hipError_t run_attention_fwd_gfx942_instance(const FwdParams& p, hipStream_t stream);

}  // namespace kh_attention::gfx942

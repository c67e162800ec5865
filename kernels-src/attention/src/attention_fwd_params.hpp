// attention_fwd_params.hpp: what every GPU attention kernel takes (CUDA sm80/sm90a, HIP
// gfx942): raw pointers, element strides and sizes, filled by each backend's op entry from
// the validated op arguments.
#pragma once

#include <cstdint>

namespace kh_attention {

enum class ElementType : uint32_t { kF16 = 0, kBF16 = 1 };

// Everything the kernel needs; strides are in elements, not bytes.
struct FwdLaunchParams {
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

}  // namespace kh_attention

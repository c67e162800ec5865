// attention_fwd_sm80.hpp: the host-side interface of the sm80 (mma.sync) attention forward.
//
// The kernel reads raw pointers and element strides from Sm80FwdParams; the package's
// op entry (attention_cuda.cu) fills it from the validated op arguments and calls
// run_attention_fwd_sm80(), which picks the compiled instantiation (head dim x dtype x
// causal). Each (head dim, dtype) pair lives in its own translation unit
// (attention_fwd_sm80_hd<D>_<dtype>.cu) so the builds run in parallel.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace kh_attention::sm80 {

enum class ElementType : uint32_t { kF16 = 0, kBF16 = 1 };

// Everything the kernel needs; strides are in elements, not bytes.
struct Sm80FwdParams {
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

// Head dims this path compiles.
constexpr bool sm80_supports_head_dim(int head_dim) {
  return head_dim == 64 || head_dim == 128 || head_dim == 256;
}

// The kernel copies 16-byte chunks with cp.async: every row start must be 16-byte aligned.
bool sm80_params_aligned(const Sm80FwdParams& p);

// Launches on `stream`. Returns cudaErrorInvalidValue for an unsupported head dim, else
// the launch's error (cudaSuccess when it was queued). Shapes are assumed validated.
cudaError_t run_attention_fwd_sm80(const Sm80FwdParams& p, cudaStream_t stream);

// One per translation unit; causal is chosen inside.
template <int kHeadDim, ElementType kType>
cudaError_t run_attention_fwd_sm80_instance(const Sm80FwdParams& p, cudaStream_t stream);

}  // namespace kh_attention::sm80

// attention_sm80_shim.cu: a development entry into the sm80 attention launcher that takes
// raw pointers, for the standalone harness (attention_dev_check.py) to call through ctypes
// without the package's op module. Not part of any shipped build.
#include <cstdint>

#include "../../../kernels-src/attention/cuda/attention_fwd_sm80.hpp"

using kh_attention::ElementType;
using kh_attention::FwdLaunchParams;

// strides: q, k, v, out as (batch, row, head) each, then lse as (batch, head, row).
// dims: batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim. Returns a cudaError_t.
extern "C" __attribute__((visibility("default"))) int kh_attn_sm80_dev_launch(
    const void* q, const void* k, const void* v, void* out, float* lse, const int64_t* strides, const int* dims,
    float scale, int causal, int bf16, void* stream) {
  FwdLaunchParams p;
  p.q = q;
  p.k = k;
  p.v = v;
  p.out = out;
  p.lse = lse;
  p.q_batch_stride = strides[0], p.q_row_stride = strides[1], p.q_head_stride = strides[2];
  p.k_batch_stride = strides[3], p.k_row_stride = strides[4], p.k_head_stride = strides[5];
  p.v_batch_stride = strides[6], p.v_row_stride = strides[7], p.v_head_stride = strides[8];
  p.o_batch_stride = strides[9], p.o_row_stride = strides[10], p.o_head_stride = strides[11];
  p.lse_batch_stride = strides[12], p.lse_head_stride = strides[13], p.lse_row_stride = strides[14];
  p.batch = dims[0], p.seqlen_q = dims[1], p.seqlen_k = dims[2];
  p.heads_q = dims[3], p.heads_kv = dims[4], p.head_dim = dims[5];
  p.scale = scale;
  p.causal = causal != 0;
  p.dtype = bf16 ? ElementType::kBF16 : ElementType::kF16;
  if (!kh_attention::fwd_params_aligned(p)) return static_cast<int>(cudaErrorMisalignedAddress);
  return static_cast<int>(kh_attention::sm80::run_attention_fwd_sm80(p, static_cast<cudaStream_t>(stream)));
}

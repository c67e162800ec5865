// attention_fwd_sm80.cu: picks the compiled sm80 instantiation for a call's head dims and dtype;
// the alignment rule both CUDA paths share.
#include "attention_fwd_sm80.hpp"

namespace kh_attention {

bool fwd_params_aligned(const FwdLaunchParams& p) {
  auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  auto rows_aligned = [](int64_t batch, int64_t row, int64_t head) {
    return batch % 8 == 0 && row % 8 == 0 && head % 8 == 0;  // 8 two-byte elements = 16 bytes
  };
  return aligned(p.q) && aligned(p.k) && aligned(p.v) && aligned(p.out) &&
         rows_aligned(p.q_batch_stride, p.q_row_stride, p.q_head_stride) &&
         rows_aligned(p.k_batch_stride, p.k_row_stride, p.k_head_stride) &&
         rows_aligned(p.v_batch_stride, p.v_row_stride, p.v_head_stride) &&
         rows_aligned(p.o_batch_stride, p.o_row_stride, p.o_head_stride);
}

}  // namespace kh_attention

namespace kh_attention::sm80 {

cudaError_t run_attention_fwd_sm80(const FwdLaunchParams& p, cudaStream_t stream) {
  return with_cuda_fwd_bucket(p, [&](auto qk, auto v, auto type) {
    return run_attention_fwd_sm80_instance<decltype(qk)::value, decltype(v)::value, decltype(type)::value>(p, stream);
  });
}

}  // namespace kh_attention::sm80

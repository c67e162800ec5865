// attention_fwd_sm80_hd128_fp16.cu: the sm80 attention forward for head_dim 128, fp16.
// One translation unit per (head dim, dtype) so the builds run in parallel; see
// attention_fwd_sm80.cuh for the kernel.
#include "attention_fwd_sm80.cuh"

namespace kh_attention::sm80 {
template cudaError_t run_attention_fwd_sm80_instance<128, ElementType::kF16>(const FwdLaunchParams&, cudaStream_t);
}  // namespace kh_attention::sm80

// attention_fwd_sm90_hd128_bf16.cu: the sm90a attention forward for head_dim 128, bf16.
// One translation unit per (head dim, dtype) so the builds run in parallel; see
// attention_fwd_sm90.cuh for the kernel. Built for the sm90a variant only.
#include "attention_fwd_sm90.cuh"

namespace kh_attention::sm90 {
template cudaError_t run_attention_fwd_sm90_instance<128, ElementType::kBF16>(const FwdLaunchParams&,
                                                                          const FwdTensorMaps&, cudaStream_t);
}  // namespace kh_attention::sm90

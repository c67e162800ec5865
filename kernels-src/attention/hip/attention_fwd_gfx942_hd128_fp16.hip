// attention_fwd_gfx942_hd128_fp16.hip: the gfx942 attention forward for head_dim 128, fp16.
// One translation unit per (head dim, dtype) so the builds run in parallel; see
// attention_fwd_gfx942_kernel.hpp for the kernel.
#include "attention_fwd_gfx942_kernel.hpp"

namespace kh_attention::gfx942 {
template hipError_t run_attention_fwd_gfx942_instance<128, ElementType::kF16>(const FwdParams&, hipStream_t);
}  // namespace kh_attention::gfx942

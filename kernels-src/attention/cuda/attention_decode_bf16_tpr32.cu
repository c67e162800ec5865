// attention_decode_bf16_tpr32.cu: the decode split kernel for bf16, lane groups of 32
// threads (head dims 136-256). One translation unit per (dtype, TPR) so the builds run in parallel.
#include "attention_decode.cuh"

namespace kh_attention {
namespace decode {
KH_DECODE_INSTANTIATE(Bf16Tag, 32)
}  // namespace decode
}  // namespace kh_attention

// attention_decode_bf16_tpr8.cu: the decode split kernel for bf16, lane groups of 8
// threads (head dims 40-64). One translation unit per (dtype, TPR) so the builds run in parallel.
#include "attention_decode.cuh"

namespace kh_attention {
namespace decode {
KH_DECODE_INSTANTIATE(Bf16Tag, 8)
}  // namespace decode
}  // namespace kh_attention

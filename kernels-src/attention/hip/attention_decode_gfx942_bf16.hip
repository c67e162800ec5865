// attention_decode_gfx942_bf16.hip: the gfx942 decode split kernels for bf16, every lane-group
// width (4, 8, 16, 32 threads: head dims up to 32, 64, 128, 256).
#include "attention_decode_gfx942.hpp"

namespace kh_attention {
namespace decode {
KH_DECODE_INSTANTIATE(Bf16Tag, 4)
KH_DECODE_INSTANTIATE(Bf16Tag, 8)
KH_DECODE_INSTANTIATE(Bf16Tag, 16)
KH_DECODE_INSTANTIATE(Bf16Tag, 32)
}  // namespace decode
}  // namespace kh_attention

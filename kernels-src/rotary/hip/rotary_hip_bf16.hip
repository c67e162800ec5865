// rotary_hip_bf16.hip: the bf16 instantiations of the gfx942 rotary kernels (NeoX and GPT-J x
// 16-byte and element accesses).
#include "rotary_hip.hpp"

KH_ROTARY_LAUNCHER(launch_bf16, kh_pointwise::Bf16)

// rotary_hip_f16.hip: the f16 instantiations of the gfx942 rotary kernels (NeoX and GPT-J x
// 16-byte and element accesses).
#include "rotary_hip.hpp"

KH_ROTARY_LAUNCHER(launch_f16, kh_pointwise::F16)

// rotary_hip_f32.hip: the f32 instantiations of the gfx942 rotary kernels (NeoX and GPT-J x
// 16-byte and element accesses).
#include "rotary_hip.hpp"

KH_ROTARY_LAUNCHER(launch_f32, float)

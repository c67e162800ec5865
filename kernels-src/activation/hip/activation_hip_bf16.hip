// activation_hip_bf16.hip: the bf16 instantiations of the gfx942 activation kernels (silu, gelu,
// gelu_tanh, fatrelu x 16-byte and element accesses).
#include "activation_hip.hpp"

KH_ACTIVATION_LAUNCHER(launch_bf16, kh_pointwise::Bf16)

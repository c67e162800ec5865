// activation_hip_f16.hip: the f16 instantiations of the gfx942 activation kernels (silu, gelu,
// gelu_tanh, fatrelu x 16-byte and element accesses).
#include "activation_hip.hpp"

KH_ACTIVATION_LAUNCHER(launch_f16, kh_pointwise::F16)

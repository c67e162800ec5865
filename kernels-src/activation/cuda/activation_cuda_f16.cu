// activation_cuda_f16.cu: the f16 instantiations of the activation kernels (silu, gelu, gelu_tanh,
// fatrelu x 16-byte and element accesses).
#include "activation_cuda.cuh"

KH_ACTIVATION_LAUNCHER(launch_f16, kh_pointwise::F16)

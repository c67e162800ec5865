// activation_cuda_f32.cu: the f32 instantiations of the activation kernels (silu, gelu, gelu_tanh,
// fatrelu x 16-byte and element accesses).
#include "activation_cuda.cuh"

KH_ACTIVATION_LAUNCHER(launch_f32, float)

// activation_cuda_bf16.cu: the bf16 instantiations of the activation kernels (silu, gelu, gelu_tanh,
// fatrelu x 16-byte and element accesses).
#include "activation_cuda.cuh"

KH_ACTIVATION_LAUNCHER(launch_bf16, kh_pointwise::Bf16)

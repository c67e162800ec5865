// rotary_cuda_bf16.cu: the bf16 instantiations of the rotary kernels (NeoX and GPT-J x 16-byte and
// element accesses).
#include "rotary_cuda.cuh"

KH_ROTARY_LAUNCHER(launch_bf16, kh_pointwise::Bf16)

// rotary_cuda_f16.cu: the f16 instantiations of the rotary kernels (NeoX and GPT-J x 16-byte and
// element accesses).
#include "rotary_cuda.cuh"

KH_ROTARY_LAUNCHER(launch_f16, kh_pointwise::F16)

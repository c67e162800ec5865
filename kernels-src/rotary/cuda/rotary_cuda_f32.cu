// rotary_cuda_f32.cu: the f32 instantiations of the rotary kernels (NeoX and GPT-J x 16-byte and
// element accesses).
#include "rotary_cuda.cuh"

KH_ROTARY_LAUNCHER(launch_f32, float)

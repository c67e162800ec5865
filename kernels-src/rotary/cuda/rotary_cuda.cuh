// rotary_cuda.cuh: the rotary kernels for CUDA (sm80, sm90a): the CUDA primitives of the
// element-wise kernels, then the kernel body and launchers shared with HIP
// (../src/rotary_kernels.inl). Included by every .cu file of this folder.
#pragma once

#include "kh_kernel/pointwise_cuda.cuh"
#include "kh_kernel/tensor.hpp"
#include "rotary_args.hpp"
#include "rotary_ops.hpp"

#include "rotary_kernels.inl"

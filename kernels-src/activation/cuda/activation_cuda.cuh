// activation_cuda.cuh: the activation kernels for CUDA (sm80, sm90a): the CUDA primitives of
// the element-wise kernels, then the kernel body and launchers shared with HIP
// (../src/activation_kernels.inl). Included by every .cu file of this folder.
#pragma once

#include "activation_args.hpp"
#include "activation_ops.hpp"
#include "kh_kernel/pointwise_cuda.cuh"
#include "kh_kernel/tensor.hpp"

#include "activation_kernels.inl"

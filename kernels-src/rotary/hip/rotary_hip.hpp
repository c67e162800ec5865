// rotary_hip.hpp: the rotary kernels for HIP (rocm-gfx942): the HIP primitives of the
// element-wise kernels, then the kernel body and launchers shared with CUDA
// (../src/rotary_kernels.inl). Included by every .hip file of this folder, and by the host
// emulator (tests/hip/emulate/pointwise_emulate.cpp, KH_GFX942_EMULATION: the kernel alone).
#pragma once

#include "kh_kernel/pointwise_hip.hpp"
#include "kh_kernel/tensor.hpp"
#include "rotary_args.hpp"
#if !defined(KH_GFX942_EMULATION)
#include "rotary_ops.hpp"
#endif

#include "rotary_kernels.inl"

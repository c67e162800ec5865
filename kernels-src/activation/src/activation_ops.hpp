// activation_ops.hpp: the op entry points of the activation package and the one function each
// backend defines. module.cpp lists the entries in the op table; activation_ops.cpp defines
// them once for every backend (validate with parse_activation_args, then run_activation);
// exactly one backend file per library defines run_activation (cpu/activation_cpu.cpp,
// cuda/activation_cuda.cu, hip/activation_hip.hip).
#pragma once

#include <cstdint>

#include "activation_args.hpp"
#include "kh/kernel_abi.h"
#include "kh_kernel/args.hpp"

namespace kh_activation {

kh_status silu_and_mul_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);
kh_status gelu_and_mul_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);
kh_status gelu_tanh_and_mul_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);
kh_status fatrelu_and_mul_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);

// Computes one validated call (p.rows may be 0) on the backend's device and, on a GPU, the
// caller's stream (c.ctx->stream); errors are written through c.
kh_status run_activation(const kh_kernels::OpContext& c, const ActivationParams& p);

}  // namespace kh_activation

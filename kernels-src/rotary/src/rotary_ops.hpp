// rotary_ops.hpp: the op entry point of the rotary package and the one function each backend
// defines. module.cpp lists the entry in the op table; rotary_ops.cpp defines it once for every
// backend (validate with parse_rotary_args, then run_rotary); exactly one backend file per
// library defines run_rotary (cpu/rotary_cpu.cpp, cuda/rotary_cuda.cu, hip/rotary_hip.hip).
#pragma once

#include <cstdint>

#include "kh/kernel_abi.h"
#include "kh_kernel/args.hpp"
#include "rotary_args.hpp"

namespace kh_rotary {

kh_status rotary_embedding_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);

// Computes one validated call on the backend's device and, on a GPU, the caller's stream
// (c.ctx->stream); errors are written through c.
kh_status run_rotary(const kh_kernels::OpContext& c, const RotaryParams& p);

}  // namespace kh_rotary

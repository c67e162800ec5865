// rms_norm_ops.hpp: the op entry points of the rms-norm package. module.cpp lists them in the
// op table; exactly one backend file per library defines them (cpu/rms_norm_cpu.cpp, later
// cuda/*.cu, hip/*.hip), each starting with parse_*_args() from rms_norm_args.hpp.
#pragma once

#include <cstdint>

#include "kh/kernel_abi.h"

namespace kh_rms_norm {

kh_status rms_norm_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);
kh_status fused_add_rms_norm_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);

}  // namespace kh_rms_norm

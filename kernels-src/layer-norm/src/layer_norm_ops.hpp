// layer_norm_ops.hpp: the op entry points of the layer-norm package. module.cpp lists them in
// the op table; exactly one backend file per library defines them (cpu/layer_norm_cpu.cpp,
// later cuda/*.cu, hip/*.hip), each starting with parse_*_args() from layer_norm_args.hpp.
#pragma once

#include <cstdint>

#include "kh/kernel_abi.h"

namespace kh_layer_norm {

kh_status layer_norm_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);
kh_status fused_add_layer_norm_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);

}  // namespace kh_layer_norm

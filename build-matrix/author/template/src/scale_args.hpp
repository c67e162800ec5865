// The scale op's validated arguments, and the backend function that runs them: every backend
// (cpu/, cuda/, hip/) defines run_scale; src/ holds what they share.
#pragma once

#include <cstdint>

#include "kh/kernel_abi.h"
#include "kh_kernel/args.hpp"

namespace kh_@KH_IDENT@ {

// Argument positions, as kernel.json's schema lists them.
enum ScaleArg : uint32_t { kOut = 0, kX = 1, kAlpha = 2, kScaleNumArgs = 3 };

struct ScaleParams {
  float* out = nullptr;
  const float* x = nullptr;
  float alpha = 1.f;
  int64_t n = 0;      // elements
  int32_t device = 0;  // the tensors' device id (GPU builds launch there)
};

// Checks the call's arguments against the op's rules (kernel.json's docs) and fills *p;
// writes the reason into ctx's error buffer on failure. Reads no tensor data.
kh_status parse_scale_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx, ScaleParams* p);

// The backend's kernel on validated arguments: no allocation, no synchronisation, the caller's stream.
kh_status run_scale(const kh_kernels::OpContext& c, const ScaleParams& p);

// The op's entry point (src/module.cpp's table names it).
kh_status scale_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);

}  // namespace kh_@KH_IDENT@

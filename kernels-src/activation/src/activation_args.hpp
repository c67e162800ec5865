// activation_args.hpp: the backend-independent argument rules of the activation ops. Every op
// entry (activation_ops.cpp) calls parse_activation_args() first; each backend computes from
// the params only (run_activation, activation_ops.hpp).
//   out[..., i] = act(x[..., i]) * x[..., d + i],  i < d,  x (..., 2 d), out (..., d)
#pragma once

#include <cstdint>

#include "kh/kernel_abi.h"
#include "kh_kernel/tensor.hpp"

namespace kh_activation {

// Which act(). The values index the op table (module.cpp) and the GPU kernels' template.
enum class ActKind : uint32_t {
  kSilu = 0,      // a / (1 + exp(-a))
  kGelu = 1,      // 0.5 a (1 + erf(a / sqrt 2)), the exact (erf) GELU
  kGeluTanh = 2,  // 0.5 a (1 + tanh(sqrt(2 / pi) (a + 0.044715 a^3))), the tanh approximation
  kFatRelu = 3,   // a if a > threshold, else 0
};
constexpr uint32_t kNumActKinds = 4;

const char* act_op_name(ActKind kind);

// Schema positions: <op>(Tensor(a!) out, Tensor x) -> (); fatrelu_and_mul adds float threshold.
enum ActivationArg : uint32_t { kOut = 0, kX = 1, kThreshold = 2 };
constexpr uint32_t kActNumArgs = 2;
constexpr uint32_t kFatReluNumArgs = 3;

// A validated call. Rows sit where out_rows / x_rows say; within a row, elements are contiguous.
// out may be x[..., :d] exactly (same data, same row layout): each element of x's first half
// is read before the output at its address is written, by the same thread. Nothing else may
// share memory with out.
struct ActivationParams {
  void* out = nullptr;
  const void* x = nullptr;
  kh_kernels::RowLayout out_rows, x_rows;
  int64_t rows = 0;  // 0: nothing to do
  int64_t d = 0;     // >= 1; x's rows hold 2 d elements: act's input, then the gate
  kh_kernels::DType dtype = kh_kernels::DType::kUnknown;  // out and x: F32, F16 or BF16
  ActKind kind = ActKind::kSilu;
  double threshold = 0;      // fatrelu: as given (finite); the CPU compares in double
  float threshold_f32 = 0;   // the largest float <= threshold: for every float a,
                             // a > threshold_f32 exactly when a > threshold
  DLDevice device = {kDLCPU, 0};
};

kh_status parse_activation_args(ActKind kind, const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                ActivationParams* p);

}  // namespace kh_activation

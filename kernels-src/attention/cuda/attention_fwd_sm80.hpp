// attention_fwd_sm80.hpp: the host-side interface of the sm80 (mma.sync) attention forward.
//
// The kernel reads raw pointers and element strides from FwdLaunchParams; the package's
// op entry (attention_cuda.cu) fills it from the validated op arguments and calls
// run_attention_fwd_sm80(), which picks the compiled instantiation (head dim x dtype x
// causal). Each (head dim, dtype) pair lives in its own translation unit
// (attention_fwd_sm80_hd<D>_<dtype>.cu) so the builds run in parallel.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "attention_fwd_launch.hpp"

namespace kh_attention::sm80 {

using kh_attention::ElementType;
using kh_attention::FwdLaunchParams;

// Head dims this path compiles.
constexpr bool sm80_supports_head_dim(int head_dim) {
  return head_dim == 64 || head_dim == 128 || head_dim == 256;
}

// Launches on `stream`. Returns cudaErrorInvalidValue for an unsupported head dim, else
// the launch's error (cudaSuccess when it was queued). Shapes are assumed validated.
cudaError_t run_attention_fwd_sm80(const FwdLaunchParams& p, cudaStream_t stream);

// One per translation unit; causal is chosen inside.
template <int kHeadDim, ElementType kType>
cudaError_t run_attention_fwd_sm80_instance(const FwdLaunchParams& p, cudaStream_t stream);

}  // namespace kh_attention::sm80

// attention_fwd_launch.hpp: the CUDA side of the prefill attention launch, shared by the sm80
// and sm90a paths; the parameters themselves (FwdLaunchParams) are common to every GPU backend.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "../src/attention_fwd_buckets.hpp"
#include "../src/attention_fwd_params.hpp"

namespace kh_attention {

// Both paths copy 16-byte chunks (cp.async, TMA): data pointers must be 16-byte aligned and
// batch/row/head strides multiples of 8 elements.
bool fwd_params_aligned(const FwdLaunchParams& p);

// Calls f(std::integral_constant<int, qk>, std::integral_constant<int, v>, dtype constant) for
// the CUDA bucket (attention_fwd_buckets.hpp) that serves p's head dims and the dtype of p;
// cudaErrorInvalidValue when none does.
template <typename F>
cudaError_t with_cuda_fwd_bucket(const FwdLaunchParams& p, F&& f) {
  return dispatch_fwd_bucket(CudaFwdDims{}, cuda_fwd_bucket(p.head_dim, p.head_dim_v), p.dtype, cudaErrorInvalidValue,
                             f);
}

}  // namespace kh_attention

// attention_fwd_gfx942.hpp: the host-side interface of the gfx942 (MI300, MFMA) attention
// forward: what the kernel takes (raw pointers, element strides, sizes) and the launchers.
//
// attention_hip.hip (the op entry) fills FwdParams from the validated op arguments and calls
// run_attention_fwd_gfx942(), which picks the compiled instantiation (head dim x dtype;
// causal is chosen inside). Each (head dim, dtype) pair lives in its own translation unit
// (attention_fwd_gfx942_hd<D>_<dtype>.hip) so the builds run in parallel.
#pragma once

#include <hip/hip_runtime_api.h>

#include <cstdint>

#include "../src/attention_fwd_params.hpp"

namespace kh_attention::gfx942 {

// The parameters are the same for every GPU backend (src/attention_fwd_params.hpp).
using ElementType = kh_attention::ElementType;
using FwdParams = kh_attention::FwdLaunchParams;

// Head dims this path compiles (the CUDA backends add 256).
constexpr bool gfx942_supports_head_dim(int head_dim) { return head_dim == 64 || head_dim == 128; }

// The kernel moves 16-byte chunks: data pointers must be 16-byte aligned and batch/row/head
// strides multiples of 8 elements.
bool fwd_params_aligned(const FwdParams& p);

// Launches on `stream`. Returns hipErrorInvalidValue for an unsupported head dim, else the
// launch's error (hipSuccess when it was queued). Shapes are assumed validated.
hipError_t run_attention_fwd_gfx942(const FwdParams& p, hipStream_t stream);

// One per translation unit; causal is chosen inside.
template <int kHeadDim, ElementType kType>
hipError_t run_attention_fwd_gfx942_instance(const FwdParams& p, hipStream_t stream);

}  // namespace kh_attention::gfx942

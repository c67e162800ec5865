// attention_fwd_launch.hpp: the CUDA side of the attention launch, shared by the sm80 and
// sm90a paths; the parameters themselves (FwdLaunchParams) are common to every GPU backend.
#pragma once

#include <cstdint>

#include "../src/attention_fwd_params.hpp"

namespace kh_attention {

// Both paths copy 16-byte chunks (cp.async, TMA): data pointers must be 16-byte aligned and
// batch/row/head strides multiples of 8 elements.
bool fwd_params_aligned(const FwdLaunchParams& p);

}  // namespace kh_attention

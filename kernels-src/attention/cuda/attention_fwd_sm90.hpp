// attention_fwd_sm90.hpp: the host-side interface of the sm90a (wgmma + TMA) attention forward.
//
// Built only for the cuda*-sm90a variant (the translation units need -arch sm_90a). Head dims
// 64 and 128; the op entry sends other head dims, and calls whose tensors TMA cannot
// describe, to the sm80 kernel, which the sm90a variant also carries.
#pragma once

#include <cuda.h>  // CUtensorMap (a plain struct; no driver library is linked)
#include <cuda_runtime_api.h>

#include "attention_fwd_launch.hpp"

namespace kh_attention::sm90 {

constexpr bool sm90_supports_head_dim(int head_dim) { return head_dim == 64 || head_dim == 128; }

// Where a 4-D tensor map puts the row, head and batch dims (1..3; dim 0 is head_dim): the
// host orders them by stride, smallest first, as TMA expects of a tensor's dims.
struct TmaDimOrder {
  int row = 2, head = 1, batch = 3;
};

// The tensor maps of one call (TMA loads of q, k and v tiles, 128-byte swizzled).
struct FwdTensorMaps {
  CUtensorMap q, k, v;
  TmaDimOrder q_order, k_order, v_order;
};

// Launches on `stream`. cudaErrorNotSupported: this call cannot take the sm90a path (head
// dim, or tensor maps the driver refused): run the sm80 kernel instead.
cudaError_t run_attention_fwd_sm90(const FwdLaunchParams& p, cudaStream_t stream);

// The current device's SM count (a persistent grid's size), cached per device.
int sm90_sm_count();

// One per translation unit; causal is chosen inside.
template <int kHeadDim, ElementType kType>
cudaError_t run_attention_fwd_sm90_instance(const FwdLaunchParams& p, const FwdTensorMaps& maps,
                                            cudaStream_t stream);

}  // namespace kh_attention::sm90

// attention_fp8_args.hpp: argument rules the 1.2 FP8 ops share (attention_decode_paged_fp8,
// attention_varlen_fwd_fp8, paged_kv_cache_write): an e4m3 tensor is uint8 (the bytes of
// float8_e4m3fn, attention_fp8.hpp), and a descale factor is a float32 tensor of shape (1) or
// (heads_kv) on the data's device, read where it lives (never on the host of a GPU call).
#pragma once

#include <cstdint>

#include "kh/kernel_abi.h"
#include "kh_kernel/args.hpp"
#include "kh_kernel/tensor.hpp"

namespace kh_attention {

// A descale factor argument: *ptr (nullptr for an omitted optional) and the stride between KV
// heads' factors (0 for a single factor); *view, when given, the tensor (for the overlap checks).
inline kh_status fp8_scale_arg(const kh_kernels::OpContext& c, const kh_value* args, uint32_t index, const char* name,
                               const kh_kernels::TensorView& data, const char* data_name, int64_t heads_kv,
                               kh_kernels::Presence presence, const float** ptr, int64_t* stride,
                               kh_kernels::TensorView* view = nullptr) {
  kh_kernels::TensorView local;
  kh_kernels::TensorView& s = view != nullptr ? *view : local;
  *ptr = nullptr;
  *stride = 0;
  KH_KERNEL_TRY(kh_kernels::tensor_arg(c, args, index, name, presence, &s));
  if (!s.present()) return KH_OK;
  KH_KERNEL_TRY(kh_kernels::check_same_device(c, name, s, data_name, data));
  KH_KERNEL_TRY(kh_kernels::check_dtype(c, name, s, KH_DTYPE_F32));
  KH_KERNEL_TRY(kh_kernels::check_ndim(c, name, s, 1, 1));
  if (s.size(0) != 1 && s.size(0) != heads_kv)
    return kh_kernels::arg_error(c, name,
                                 "shape %s: a descale factor is per tensor (1) or per KV head (heads_kv = %lld)",
                                 kh_kernels::shape_string(s).c_str(), (long long)heads_kv);
  *ptr = s.ptr<const float>();
  *stride = s.size(0) == 1 ? 0 : s.strides[0];
  return KH_OK;
}

// An e4m3 tensor: uint8 (the dtype the loader's constraint already checked; repeated for calls
// that reach the op by another way, such as the tests' raw invoke).
inline kh_status check_e4m3(const kh_kernels::OpContext& c, const char* name, const kh_kernels::TensorView& t) {
  if (t.dtype != kh_kernels::DType::kU8)
    return kh_kernels::arg_error(c, name,
                                 "expected uint8 holding float8_e4m3fn bytes, got %s (view an FP8 tensor as uint8: "
                                 "tensor.view(torch.uint8))",
                                 kh_kernels::dtype_name(t.dtype));
  return KH_OK;
}

}  // namespace kh_attention

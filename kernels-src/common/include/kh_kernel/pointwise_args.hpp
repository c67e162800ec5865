// kh_kernel/pointwise_args.hpp: argument rules shared by the element-wise packages
// (activation, rotary) on top of args.hpp: the row layout of a (..., n) tensor, and the rule
// that a tensor an op writes holds every element at its own address (a zero or overlapping
// stride would make two GPU threads write one element).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "kh_kernel/args.hpp"
#include "kh_kernel/tensor.hpp"

namespace kh_kernels {

// The RowLayout of t's leading dims (every dim but the last), or a message naming `name`.
inline kh_status rows_of(const OpContext& c, const char* name, const TensorView& t, RowLayout* rows) {
  if (make_row_layout(t, rows)) return KH_OK;
  return arg_error(c, name, "its leading dimensions do not collapse into %d or fewer strided dims; "
                   "make it contiguous first", kMaxRowDims);
}

// No two elements of t share an address: with its dims of size > 1 ordered by |stride|, each
// stride is larger than the span of the dims inside it (a sufficient rule that every dense or
// sliced layout meets). Refuses broadcast (stride 0) and self-overlapping views of outputs.
inline kh_status check_distinct_elements(const OpContext& c, const char* name, const TensorView& t) {
  int32_t order[kMaxNdim];
  int32_t n = 0;
  for (int32_t d = 0; d < t.ndim; ++d)
    if (t.shape[d] > 1) order[n++] = d;
  std::sort(order, order + n, [&](int32_t a, int32_t b) { return std::llabs(t.strides[a]) < std::llabs(t.strides[b]); });
  int64_t span = 0;  // elements covered by the dims seen so far, minus one
  for (int32_t i = 0; i < n; ++i) {
    const int32_t d = order[i];
    const int64_t stride = std::llabs(t.strides[d]);
    if (stride <= span)
      return arg_error(c, name, "dimension %d (size %lld, stride %lld) overlaps the dimensions inside it: an output "
                       "must hold each element at its own address (no broadcast or overlapping strides)",
                       d, (long long)t.shape[d], (long long)t.strides[d]);
    span += (t.shape[d] - 1) * stride;
  }
  return KH_OK;
}

}  // namespace kh_kernels

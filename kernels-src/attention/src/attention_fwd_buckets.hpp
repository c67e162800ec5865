// attention_fwd_buckets.hpp: the head-dim buckets the GPU prefill kernels are compiled for,
// which bucket serves a call, and the dispatch from a call to its bucket's instantiation. A
// bucket (qk, v) is one instantiation per dtype; it serves every supported (head_dim,
// head_dim_v) that rounds up to it: the kernel loads zeros past the call's head dims (TMA zero
// fill, cp.async with src-size 0, predicated loads) and stores only the call's columns, so a
// smaller head dim costs the bucket's FLOPs, no more.
//
//   CUDA (sm80 mma.sync and sm90a wgmma kernels; tiles per bucket in each kernel's header):
//     64, 80, 96, 128, 192, 256 (q/k and v alike) and 192/128: each of the head dims the brief
//     names as fast runs its own exact bucket; 32-56 run 64, 72 runs 80, 88 runs 96,
//     104-120 run 128, 136-184 run 192, 200-248 run 256.
//   gfx942 (MFMA kernel; 32-dim MFMA groups): 64, 96, 128, 192, 256 and 192/128 (80 runs 96).
// The CMake lists of instantiations (cuda/CMakeLists.txt, hip/CMakeLists.txt) hold the same
// buckets; tests/kernels/test_attention_tiles.cpp checks the selection.
// Plain C++ (no kh headers).
#pragma once

#include <initializer_list>
#include <type_traits>
#include <utility>

#include "attention_fwd_params.hpp"

namespace kh_attention {

// The buckets with equal q/k and v head dims, ascending; every backend adds 192/128.
using CudaFwdDims = std::integer_sequence<int, 64, 80, 96, 128, 192, 256>;
using Gfx942FwdDims = std::integer_sequence<int, 64, 96, 128, 192, 256>;

struct FwdBucket {
  int qk = 0, v = 0;  // 0: no bucket
};

// The bucket of `Dims` that serves (head_dim, head_dim_v): 192/128, or the smallest dim >= a
// head dim that v shares.
template <int... kDims>
constexpr FwdBucket fwd_bucket(std::integer_sequence<int, kDims...>, int head_dim, int head_dim_v) {
  if (head_dim == 192 && head_dim_v == 128) return FwdBucket{192, 128};
  if (head_dim_v != head_dim) return FwdBucket{};
  for (int d : {kDims...})
    if (head_dim <= d) return FwdBucket{d, d};
  return FwdBucket{};
}

constexpr FwdBucket cuda_fwd_bucket(int head_dim, int head_dim_v) {
  return fwd_bucket(CudaFwdDims{}, head_dim, head_dim_v);
}
constexpr FwdBucket gfx942_fwd_bucket(int head_dim, int head_dim_v) {
  return fwd_bucket(Gfx942FwdDims{}, head_dim, head_dim_v);
}

// Calls f(std::integral_constant<int, qk>, std::integral_constant<int, v>,
// std::integral_constant<ElementType, dtype>) for bucket b of the list `Dims` (or 192/128) and
// returns what it returns; `none` when b is not one of them. Only the list's buckets are
// instantiated, so f may name templates that exist for those alone.
template <typename R, typename F, int... kDims>
R dispatch_fwd_bucket(std::integer_sequence<int, kDims...>, FwdBucket b, ElementType dtype, R none, F&& f) {
  auto typed = [&](auto qk, auto v) {
    return dtype == ElementType::kBF16 ? f(qk, v, std::integral_constant<ElementType, ElementType::kBF16>{})
                                       : f(qk, v, std::integral_constant<ElementType, ElementType::kF16>{});
  };
  R result = none;
  if (b.qk == 192 && b.v == 128) return typed(std::integral_constant<int, 192>{}, std::integral_constant<int, 128>{});
  (void)((b.qk == kDims && b.v == kDims &&
          (result = typed(std::integral_constant<int, kDims>{}, std::integral_constant<int, kDims>{}), true)) ||
         ...);
  return result;
}

}  // namespace kh_attention

// attention_visibility.hpp: which keys a query row sees, in one place for every backend of
// attention_fwd and attention_varlen_fwd: the CPU oracle, the CUDA and HIP kernels (host and
// device code) and the host tests of this index math (tests/kernels/test_attention_tiles.cpp).
//
//  - seq_bounds: where sequence b's rows start in the packed tensors and how many there are
//    (varlen: from cu_seqlens, clamped so that no row outside the tensors is ever touched);
//  - visible_keys: the keys [lo, end) query row i of a sequence sees: bottom-right aligned
//    causal (row i sits at key position i + len_k - len_q) and a window to the left;
//  - tile_visibility: for a tile of query rows, the key blocks that hold any key a valid row
//    sees, and which of those blocks every valid row sees whole (no per-element mask needed).
// Plain C++ (no kh headers).
#pragma once

#include <cstdint>

#include "attention_fwd_params.hpp"

#if defined(__CUDACC__) || defined(__HIP__)
#define KH_ATTN_HD __host__ __device__ __forceinline__
#else
#define KH_ATTN_HD inline
#endif

namespace kh_attention {

template <typename T>
KH_ATTN_HD T vis_min(T a, T b) {
  return a < b ? a : b;
}
template <typename T>
KH_ATTN_HD T vis_max(T a, T b) {
  return a < b ? b : a;
}

// Sequence b of a call: its first packed row of q (and out, lse) and of k (and v), and its
// lengths. attention_fwd (cu_q == nullptr): rows start at 0 in each batch entry and every
// sequence has the call's lengths. attention_varlen_fwd: start = clamp(cu[b], 0, total),
// end = clamp(cu[b + 1], start, total), length = min(end - start, max_seqlen): values a caller
// got wrong shorten a sequence, never reach outside the tensors.
struct SeqBounds {
  int64_t q_start = 0, k_start = 0;
  int64_t len_q = 0, len_k = 0;
};

KH_ATTN_HD int64_t clamped_offset(const int32_t* cu, int64_t stride, int64_t b, int64_t lo, int64_t hi) {
  return vis_min<int64_t>(vis_max<int64_t>(cu[b * stride], lo), hi);
}

KH_ATTN_HD SeqBounds seq_bounds(const int32_t* cu_q, int64_t cu_q_stride, const int32_t* cu_k, int64_t cu_k_stride,
                                int64_t total_q, int64_t total_k, int64_t len_q, int64_t len_k, int64_t b) {
  SeqBounds s;
  if (cu_q == nullptr) {
    s.len_q = len_q;
    s.len_k = len_k;
    return s;
  }
  s.q_start = clamped_offset(cu_q, cu_q_stride, b, 0, total_q);
  s.k_start = clamped_offset(cu_k, cu_k_stride, b, 0, total_k);
  s.len_q = vis_min<int64_t>(clamped_offset(cu_q, cu_q_stride, b + 1, s.q_start, total_q) - s.q_start, len_q);
  s.len_k = vis_min<int64_t>(clamped_offset(cu_k, cu_k_stride, b + 1, s.k_start, total_k) - s.k_start, len_k);
  return s;
}

// Sequence b of a GPU launch: attention_fwd's lengths from the parameters when kPacked is false
// (nothing read from memory), cu_seqlens otherwise.
template <bool kPacked>
KH_ATTN_HD SeqBounds launch_seq_bounds(const FwdLaunchParams& p, int64_t b) {
  if (!kPacked) {
    SeqBounds s;
    s.len_q = p.seqlen_q;
    s.len_k = p.seqlen_k;
    return s;
  }
  return seq_bounds(p.cu_seqlens_q, p.cu_seqlens_q_stride, p.cu_seqlens_k, p.cu_seqlens_k_stride, p.total_q,
                    p.total_k, p.seqlen_q, p.seqlen_k, b);
}

// The keys [lo, end) that query row i (0 <= i < len_q) sees; empty when end <= lo. Row i sits
// at key position pos = i + len_k - len_q; causal: keys j <= pos; window_left >= 0: keys
// j >= pos - window_left (with or without causal).
template <typename T>
struct KeyRange {
  T lo, end;
};

template <typename T>
KH_ATTN_HD KeyRange<T> visible_keys(T i, T len_q, T len_k, bool causal, T window_left) {
  const T pos = i + len_k - len_q;
  KeyRange<T> r;
  r.end = causal ? vis_min<T>(len_k, pos + 1) : len_k;
  r.lo = window_left >= 0 ? vis_max<T>(T(0), pos - window_left) : T(0);
  return r;
}

// A tile of block_m query rows starting at row m0 (possibly < 0 or running past len_q: only
// rows in [0, len_q) are valid) against key blocks of block_n keys. Both ends of a row's key
// range grow with the row, so the valid rows together see the keys [lo(first), end(last)),
// and block n is seen whole by every valid row iff lo(last) <= n * block_n and
// (n + 1) * block_n <= end(first).
template <typename T>
struct TileVisibility {
  T n_lo = 0, n_hi = 0;     // the key blocks [n_lo, n_hi) to visit (n_hi <= n_lo: none)
  T lo_max = 0, end_min = 0;  // lo of the last valid row, end of the first

  KH_ATTN_HD T blocks() const { return n_hi > n_lo ? n_hi - n_lo : T(0); }
  KH_ATTN_HD bool needs_mask(T n, T block_n) const { return !(lo_max <= n * block_n && (n + 1) * block_n <= end_min); }
};

template <typename T>
KH_ATTN_HD TileVisibility<T> tile_visibility(T m0, T block_m, T len_q, T len_k, bool causal, T window_left,
                                             T block_n) {
  TileVisibility<T> v;
  const T r0 = vis_max<T>(m0, T(0)), r1 = vis_min<T>(m0 + block_m, len_q);  // valid rows [r0, r1)
  if (r1 <= r0 || len_k <= 0) return v;
  const KeyRange<T> first = visible_keys<T>(r0, len_q, len_k, causal, window_left);
  const KeyRange<T> last = visible_keys<T>(r1 - 1, len_q, len_k, causal, window_left);
  v.lo_max = last.lo;
  v.end_min = first.end;
  if (last.end <= first.lo) return v;  // no valid row sees a key
  v.n_lo = first.lo / block_n;
  v.n_hi = (last.end + block_n - 1) / block_n;
  return v;
}

}  // namespace kh_attention

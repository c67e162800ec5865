// attention_decode_kernel.inl: the paged-KV decode kernels of attention_decode_paged, written
// once for CUDA (cuda/attention_decode.cuh) and HIP (hip/attention_decode_gfx942.hpp). The
// including header defines, before including this file:
//   KH_DEC_DEV                          __device__ __forceinline__ (or the HIP spelling)
//   float kh_dec_shfl_xor(float, int)   butterfly exchange among the lanes of a warp/wavefront
//   float kh_dec_exp2(float)            2^x (approximate is fine: |err| ~ 2 ulp)
//   uint4 kh_dec_ld16(const void*)      16-byte global load of streamed data (K, V)
//   float2 kh_dec_f16x2_to_float2(uint32_t)  two fp16 (low first) to float
//   uint16_t kh_dec_float_to_f16(float)      round to nearest even
//   KH_DEC_SPLIT_BOUNDS(ROWS)           the split kernel's __launch_bounds__ (kThreads threads)
// and may define (both default to nothing: the combine kernel then starts after the split
// kernel, as any stream-ordered launch):
//   KH_DEC_LAUNCH_DEPENDENTS()          the split kernel lets a programmatic dependent grid
//                                       (the combine) start: CUDA sm90's griddepcontrol
//   KH_DEC_WAIT_PRIOR_GRID()            the combine waits for the split kernel's writes
//
// Design of the all-CUDA-core (SIMT) split kernel: the gfx942 build's, and on CUDA the
// KH_ATTENTION_DECODE_VARIANT=simt comparison (the CUDA default, cuda/attention_decode_mma.cuh,
// puts the scores on the tensor cores and reuses Tile, MergeSmem, decode_epilogue and the
// combine kernel from here; see cuda/NOTES.md "Decode"):
//  - split kernel: one CTA of kThreads threads per (split, kv head x row tile, sequence). The
//    CTA reads the K/V rows of its key range once for all rows of its tile (ROWS query rows:
//    the q heads of one kv head's group times q_len). A "lane group" of TPR threads owns one
//    key at a time, each thread 8 elements of the head dim (one 16-byte load); the CTA's
//    kThreads / TPR lane groups walk interleaved keys, kUnroll keys each per step, all loads
//    of a step issued before any use and the block ids of the next step prefetched. Scores
//    are reduced within the lane group by shuffles; each lane group keeps its own online
//    softmax state (max, sum, accumulator), merged through shared memory at the end.
//  - one split: the CTA writes out and lse. Several: it writes its normalised partial output
//    and its log2-sum-exp to the workspace, and the combine kernel merges the splits.
// Head dims: TPR = next power of two >= head_dim / 8 (4, 8, 16, 32); lanes past head_dim / 8
// load nothing and add zeros, so every multiple of 8 from 32 to 256 runs on 4 TPR variants
// (64, 128, 256 use every lane).

#include "attention_fp8.hpp"

#ifndef KH_DEC_WAIT_PRIOR_GRID
#define KH_DEC_WAIT_PRIOR_GRID() ((void)0)
#endif
#ifndef KH_DEC_LAUNCH_DEPENDENTS
#define KH_DEC_LAUNCH_DEPENDENTS() ((void)0)
#endif

namespace kh_attention {
namespace decode {

constexpr int kThreads = 128;
constexpr int kUnroll = 4;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct Bf16Tag {};
struct F16Tag {};
// The caches of attention_decode_paged_fp8 (1.2): e4m3 bytes (attention_fp8.hpp). The split kernel's
// Kv parameter: Tag (bf16/fp16 caches, the default) or E4m3Kv.
struct E4m3Kv {};

template <typename Kv>
struct KvTraits {
  using Elem = uint16_t;  // a bf16/fp16 cache: 8 elements a 16-byte load
  static constexpr bool kFp8 = false;
};
template <>
struct KvTraits<E4m3Kv> {
  using Elem = uint8_t;  // e4m3: 8 elements an 8-byte load
  static constexpr bool kFp8 = true;
};

// A lane's 8 cache elements: 16 bytes (bf16/fp16), 8 bytes (e4m3).
template <typename Kv>
KH_DEC_DEV uint4 kv_ld8(const uint16_t* ptr, Kv) {
  return kh_dec_ld16(ptr);
}
KH_DEC_DEV uint2 kv_ld8(const uint8_t* ptr, E4m3Kv) { return *reinterpret_cast<const uint2*>(ptr); }

// An e4m3 byte's value with integer operations (the CUDA FP8 kernel's decoding: NaN bytes read as
// +-480, no test an element).
KH_DEC_DEV float e4m3_value_fast(uint32_t b) {
  const uint32_t em = b & 0x7fu;
  const float mag = em < 8u ? static_cast<float>(em) * 0.001953125f : __uint_as_float((em << 20) + (120u << 23));
  return (b & 0x80u) ? -mag : mag;
}

KH_DEC_DEV void unpack8(uint4 raw, float f[8], Bf16Tag) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

KH_DEC_DEV void unpack8(uint4 raw, float f[8], F16Tag) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t = kh_dec_f16x2_to_float2(w[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

KH_DEC_DEV uint32_t to_bits(float f, Bf16Tag) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;  // NaN stays NaN
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;        // round to nearest even
}

KH_DEC_DEV uint32_t to_bits(float f, F16Tag) { return kh_dec_float_to_f16(f); }

KH_DEC_DEV void unpack8(uint2 raw, float f[8], E4m3Kv) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[i] = e4m3_value_fast((raw.x >> (8 * i)) & 0xffu);
    f[4 + i] = e4m3_value_fast((raw.y >> (8 * i)) & 0xffu);
  }
}

template <typename Tag>
KH_DEC_DEV uint4 pack8(const float f[8]) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) w[i] = to_bits(f[2 * i], Tag{}) | (to_bits(f[2 * i + 1], Tag{}) << 16);
  return make_uint4(w[0], w[1], w[2], w[3]);
}

template <typename Tag>
KH_DEC_DEV uint16_t to_bits16(float f) {
  return static_cast<uint16_t>(to_bits(f, Tag{}));
}

// Where a CTA's rows and keys are, and where its results go. Rows of a tile: local index r in
// [0, nrows) is query row idx = r0 + r of the kv head's q_len x group rows, idx -> (token
// i = idx / group, q head kv_head * group + idx % group). Results: out and lse when no other CTA
// has keys of these rows (whole), else slot `split` of each row's `slots` in the workspace (the
// length-balanced grid of cuda/attention_decode_balanced.cuh cuts some sequences, not others).
struct Tile {
  int b, kv_head, r0, nrows, group, len;
  int split;             // which of the sequence's key splits this CTA takes
  int key_beg, key_end;  // this split's keys [key_beg, key_end)
  int tile_beg;          // key_beg rounded down to a multiple of 16 (>= the window's start rounded down)
  int slots;             // workspace slots a row (the call's split count, or max_splits)
  bool whole;            // no other CTA has keys of these rows
};

// Sequence b's length as the kernels read it: clamped to [0, the table's keys].
KH_DEC_DEV int clamped_len(const DecodeParams& p, int64_t b) {
  const int len = p.seq_lens[b * p.seq_lens_stride];
  const int max_kv = p.max_blocks_per_seq << p.block_shift;
  return len < 0 ? 0 : (len > max_kv ? max_kv : len);
}

KH_DEC_DEV Tile make_tile(const DecodeParams& p, int rows, int row_tiles, int num_splits) {
  Tile t;
  t.b = blockIdx.z;
  const int head_tile = p.grid_heads_first ? blockIdx.x : blockIdx.y;
  t.split = p.grid_heads_first ? blockIdx.y : blockIdx.x;
  t.kv_head = head_tile / row_tiles;
  const int rt = head_tile - t.kv_head * row_tiles;
  t.group = p.heads_q / p.heads_kv;
  const int total_rows = p.q_len * t.group;
  t.r0 = rt * rows;
  t.nrows = min(rows, total_rows - t.r0);
  const int len = clamped_len(p, t.b);
  t.len = len;
  // Keys any row of the tile sees: up to the newest row's position, down to the oldest
  // row's window start.
  const int i_first = t.r0 / t.group, i_last = (t.r0 + t.nrows - 1) / t.group;
  int hi = len - p.q_len + i_last + 1;  // exclusive
  hi = hi < 0 ? 0 : hi;
  int lo = 0;
  if (p.window_left >= 0) {
    const long long w = static_cast<long long>(len) - p.q_len + i_first - p.window_left;
    lo = w < 0 ? 0 : static_cast<int>(w);
  }
  // Splits are whole 16-key tiles from lo rounded down to 16 (the tensor-core kernel walks
  // tiles of 16 keys aligned to multiples of 16; keys below lo are masked).
  const int lo_al = lo & ~15;
  const int n = hi > lo_al ? hi - lo_al : 0;
  const int chunk = (((n + num_splits - 1) / num_splits) + 15) & ~15;
  const long long beg = static_cast<long long>(lo_al) + static_cast<long long>(t.split) * chunk;
  const int b0 = beg > hi ? hi : static_cast<int>(beg);
  t.tile_beg = b0;
  t.key_beg = b0 < lo ? lo : b0;
  t.key_end = b0 + chunk > hi ? hi : b0 + chunk;
  if (t.key_end < t.key_beg) t.key_end = t.key_beg;
  t.slots = num_splits;
  t.whole = num_splits == 1;
  return t;
}

// Shared memory of the end-of-CTA merge: every lane group's state (THREADS: the CTA's threads;
// the CUDA staged kernel also runs CTAs of 12 warps). PAD floats after each row of acc: rows of
// TPR * 8 floats all start in bank 0, so a kernel whose lanes store to several rows at once pads
// them (the CUDA FP8 kernel: 4, attention_decode_fp8.cuh).
template <int TPR, int ROWS, int THREADS = kThreads, int PAD = 0>
struct MergeSmem {
  static constexpr int kGroups = THREADS / TPR;
  float acc[kGroups][ROWS][TPR * 8 + PAD];
  float m[kGroups][ROWS];
  float l[kGroups][ROWS];
  float scale[kGroups][ROWS];  // exp2(m_g - M) / L
  float lse2[ROWS];            // M + log2(L), -inf when no key
};

// The end of a split CTA, after every lane group has put its state (m, l in base 2, and its
// unnormalised accumulator) in sm and synchronised: merge the groups, then write out and
// lse (one split) or the normalised partial and its log2-sum-exp (several).
template <typename Tag, int TPR, int ROWS, int THREADS = kThreads, int PAD = 0>
KH_DEC_DEV void decode_epilogue(const DecodeParams& p, const Tile& t, MergeSmem<TPR, ROWS, THREADS, PAD>& sm) {
  constexpr int kGroups = THREADS / TPR;
  const int tid = threadIdx.x;
  KH_DEC_LAUNCH_DEPENDENTS();  // the key loop is done: the combine grid may be scheduled
  if (tid < t.nrows) {
    const int r = tid;
    float mx = -INFINITY;
    for (int g = 0; g < kGroups; ++g) mx = fmaxf(mx, sm.m[g][r]);
    float sum = 0.f;
    if (mx != -INFINITY)
      for (int g = 0; g < kGroups; ++g) sum += sm.l[g][r] * kh_dec_exp2(sm.m[g][r] - mx);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    for (int g = 0; g < kGroups; ++g) sm.scale[g][r] = sum > 0.f ? kh_dec_exp2(sm.m[g][r] - mx) * inv : 0.f;
    sm.lse2[r] = sum > 0.f ? mx + log2f(sum) : -INFINITY;
  }
  __syncthreads();

  const int chunks = p.head_dim / 8;
  const bool single = t.whole;
  const int num_splits = t.slots;
  const int64_t total_rows = static_cast<int64_t>(p.batch) * p.q_len * p.heads_q;
  for (int c = tid; c < t.nrows * chunks; c += THREADS) {
    const int r = c / chunks, ce = (c - r * chunks) * 8;
    float o[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] = 0.f;
    for (int g = 0; g < kGroups; ++g) {
      const float f = sm.scale[g][r];
#pragma unroll
      for (int e = 0; e < 8; ++e) o[e] = fmaf(f, sm.acc[g][r][ce + e], o[e]);
    }
    const int idx = t.r0 + r;
    const int i = idx / t.group, h = t.kv_head * t.group + (idx - i * t.group);
    if (single) {
      uint16_t* orow = static_cast<uint16_t*>(p.out) + static_cast<int64_t>(t.b) * p.o_batch_stride +
                       static_cast<int64_t>(i) * p.o_row_stride + static_cast<int64_t>(h) * p.o_head_stride;
      *reinterpret_cast<uint4*>(orow + ce) = pack8<Tag>(o);
    } else {
      const int64_t row = (static_cast<int64_t>(t.b) * p.q_len + i) * p.heads_q + h;
      float* dst = p.workspace + (row * num_splits + t.split) * p.head_dim + ce;
      *reinterpret_cast<float4*>(dst) = make_float4(o[0], o[1], o[2], o[3]);
      *reinterpret_cast<float4*>(dst + 4) = make_float4(o[4], o[5], o[6], o[7]);
      if (ce == 0) p.workspace[total_rows * num_splits * p.head_dim + row * num_splits + t.split] = sm.lse2[r];
    }
    if (single && ce == 0 && p.lse != nullptr)
      p.lse[(static_cast<int64_t>(t.b) * p.heads_q + h) * p.q_len + i] =
          sm.lse2[r] == -INFINITY ? -INFINITY : sm.lse2[r] * kLn2;
  }
}

// Kv: the caches' format, Tag (q's: bf16/fp16) or E4m3Kv (attention_decode_paged_fp8: k_scale folded
// into q's scale, v_scale applied to the accumulator before the merge).
template <typename Tag, int TPR, int ROWS, typename Kv = Tag>
__global__ void KH_DEC_SPLIT_BOUNDS(ROWS) decode_split_kernel(const DecodeParams p, const int row_tiles,
                                                                const int num_splits) {
  static_assert(kThreads % TPR == 0 && TPR <= 32, "a lane group lies within one warp");
  using KvElem = typename KvTraits<Kv>::Elem;
  constexpr int kGroups = kThreads / TPR;
  constexpr int kStep = kGroups * kUnroll;  // keys per CTA step
  __shared__ MergeSmem<TPR, ROWS> sm;

  const Tile t = make_tile(p, ROWS, row_tiles, num_splits);
  const int tid = threadIdx.x;
  const int grp = tid / TPR;
  const int lane = tid - grp * TPR;
  const int e0 = lane * 8;
  const bool lane_on = e0 < p.head_dim;
  const bool softcap = p.softcap > 0.f;
  // Scores in log2 units: log2(e) folded into q's scale, or applied after the soft-cap.
  float q_scale = softcap ? p.scale : p.scale * kLog2e;
  if constexpr (KvTraits<Kv>::kFp8) q_scale *= fp8_scale_at(p.k_scale, p.k_scale_stride, t.kv_head);
  const float cap_log2 = p.softcap * kLog2e, inv_cap = softcap ? 1.f / p.softcap : 0.f;

  // This thread's 8 elements of each row's q (pre-scaled) and each row's key limits.
  float q[ROWS][8];
  int pos[ROWS], low[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const int idx = t.r0 + (r < t.nrows ? r : 0);
    const int i = idx / t.group, h = t.kv_head * t.group + (idx - i * t.group);
    pos[r] = r < t.nrows ? t.len - p.q_len + i : -1;  // row r sees keys <= pos[r] ...
    low[r] = p.window_left >= 0 ? pos[r] - p.window_left : 0;  // ... and >= low[r]
    if (lane_on && r < t.nrows) {
      const uint4 raw = *reinterpret_cast<const uint4*>(
          static_cast<const uint16_t*>(p.q) + static_cast<int64_t>(t.b) * p.q_batch_stride +
          static_cast<int64_t>(i) * p.q_row_stride + static_cast<int64_t>(h) * p.q_head_stride + e0);
      unpack8(raw, q[r], Tag{});
#pragma unroll
      for (int e = 0; e < 8; ++e) q[r][e] *= q_scale;
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) q[r][e] = 0.f;
    }
  }

  float m[ROWS], l[ROWS], acc[ROWS][8];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[r][e] = 0.f;
  }

  const int32_t* table = p.block_table + static_cast<int64_t>(t.b) * p.bt_batch_stride;
  const KvElem* kbase = static_cast<const KvElem*>(p.k) + static_cast<int64_t>(t.kv_head) * p.k_head_stride + e0;
  const KvElem* vbase = static_cast<const KvElem*>(p.v) + static_cast<int64_t>(t.kv_head) * p.v_head_stride + e0;
  const int bmask = p.block_size - 1;

  // Block ids of this thread's keys in the first step.
  int blk[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int key = t.key_beg + u * kGroups + grp;
    blk[u] = key < t.key_end ? table[key >> p.block_shift] : 0;
  }

  for (int base = t.key_beg; base < t.key_end; base += kStep) {
    using KvRaw = decltype(kv_ld8(kbase, Kv{}));
    KvRaw kraw[kUnroll], vraw[kUnroll];
    // Bit u: key u of this step is within the range and its block id may be read (a bad id's
    // key is left out, as if masked: decode_block_ok).
    unsigned read = 0;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int key = base + u * kGroups + grp;
      const bool on = key < t.key_end && decode_block_ok(blk[u], p.num_blocks);
      read |= static_cast<unsigned>(on) << u;
      if (lane_on && on) {
        const int64_t off = static_cast<int64_t>(key & bmask);
        kraw[u] = kv_ld8(kbase + static_cast<int64_t>(blk[u]) * p.k_block_stride + off * p.k_row_stride, Kv{});
        vraw[u] = kv_ld8(vbase + static_cast<int64_t>(blk[u]) * p.v_block_stride + off * p.v_row_stride, Kv{});
      } else {
        kraw[u] = KvRaw{};
        vraw[u] = KvRaw{};
      }
    }
    // The next step's block ids, while this step's K and V are in flight.
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int key = base + kStep + u * kGroups + grp;
      blk[u] = key < t.key_end ? table[key >> p.block_shift] : 0;
    }

    float s[kUnroll][ROWS];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float kf[8];
      unpack8(kraw[u], kf, Kv{});
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        float dot = 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e) dot = fmaf(q[r][e], kf[e], dot);
        s[u][r] = dot;
      }
    }
#pragma unroll
    for (int off = TPR / 2; off >= 1; off /= 2) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int r = 0; r < ROWS; ++r) s[u][r] += kh_dec_shfl_xor(s[u][r], off);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int key = base + u * kGroups + grp;
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        float x = s[u][r];
        if (softcap) x = cap_log2 * tanhf(x * inv_cap);
        const bool seen = ((read >> u) & 1u) && key <= pos[r] && key >= low[r];
        s[u][r] = seen ? x : -INFINITY;
      }
    }

    // Online softmax: per row, the new max, the correction of the old state, then the
    // weights (in s); V is unpacked one key at a time (8 registers, not 8 x kUnroll).
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      float mx = m[r];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) mx = fmaxf(mx, s[u][r]);
      // A row that has seen nothing yet keeps m = -inf; its weights are exp2(-inf) = 0.
      const float corr = mx == -INFINITY ? 1.f : kh_dec_exp2(m[r] - mx);
      const float mref = mx == -INFINITY ? 0.f : mx;
      m[r] = mx;
      float sum = 0.f;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        s[u][r] = kh_dec_exp2(s[u][r] - mref);
        sum += s[u][r];
      }
      l[r] = l[r] * corr + sum;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r][e] *= corr;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float vf[8];
      unpack8(vraw[u], vf, Kv{});
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[r][e] = fmaf(s[u][r], vf[e], acc[r][e]);
    }
  }

  if constexpr (KvTraits<Kv>::kFp8) {
    const float v_descale = fp8_scale_at(p.v_scale, p.v_scale_stride, t.kv_head);
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r][e] *= v_descale;
  }
  // Merge the lane groups' states.
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
#pragma unroll
    for (int e = 0; e < 8; ++e) sm.acc[grp][r][e0 + e] = acc[r][e];
    if (lane == 0) {
      sm.m[grp][r] = m[r];
      sm.l[grp][r] = l[r];
    }
  }
  __syncthreads();
  decode_epilogue<Tag, TPR, ROWS>(p, t, sm);
}

// Merges the num_splits partials of each query row. A row takes 1, 2 or 4 warps (32 lanes; on a
// 64-wide wavefront, half of one) of a 4-warp CTA, as many as its splits fill in batches of
// kCombineBatch; warp k of a row's W takes splits k, k + W, ..., a lane 4 dims of them, and the
// warps' sums meet in shared memory. Each batch (partial O and lse of up to 8 splits) is loaded
// before anything waits on a load, so up to 32 splits cost one L2 trip: at batch 1 the merge is
// latency-bound, and a warp a row walking its splits 8 at a time after a separate trip for the
// lse took five (cuda/NOTES.md "Decode", run 10).
constexpr int kCombineWarps = 4;
constexpr int kCombineThreads = 32 * kCombineWarps;
constexpr int kCombineBatch = 8;

struct CombineShape {
  int warps_per_row = 1;
  int64_t blocks = 0;
};

// The combine grid of a call with num_splits > 1. Its CTAs fit the grid's x limit: a call splits
// only when batch x heads_kv < 4096 (decode_max_splits), so rows < 4096 x q_len x group.
inline CombineShape decode_combine_shape(const DecodeParams& p, int num_splits) {
  CombineShape c;
  c.warps_per_row = num_splits <= kCombineBatch ? 1 : num_splits <= 2 * kCombineBatch ? 2 : 4;
  const int64_t rows = static_cast<int64_t>(p.batch) * p.q_len * p.heads_q, per_cta = kCombineWarps / c.warps_per_row;
  c.blocks = (rows + per_cta - 1) / per_cta;
  return c;
}

template <typename Tag>
__global__ void __launch_bounds__(kCombineThreads) decode_combine_kernel(const DecodeParams p, const int num_splits,
                                                                         const int warps_per_row) {
  __shared__ float sums[kCombineWarps][kDecodeMaxHeadDim];
  // Launched as a programmatic dependent of the split kernel (sm90), this grid may start
  // before the split kernel ends: nothing of the workspace is read before it has.
  KH_DEC_WAIT_PRIOR_GRID();
  const int w = threadIdx.x / 32, lane = threadIdx.x - w * 32;
  const int wpr = warps_per_row, rw = w / wpr, sw = w - rw * wpr;  // the CTA's row, the row's warp
  const int d = p.head_dim;
  const int64_t total_rows = static_cast<int64_t>(p.batch) * p.q_len * p.heads_q;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (kCombineWarps / wpr) + rw;
  // A row past the end (the last CTA's) loads nothing; its warps still reach the barrier.
  const bool on = row < total_rows;
  const float* part = p.workspace + row * num_splits * d;
  const float* part_lse = p.workspace + total_rows * num_splits * d + row * num_splits;

  // Splits s0, s0 + wpr, ... (kCombineBatch of them) at dims e..e+3; a split past the end loads
  // nothing and weighs 0.
  float4 v[kCombineBatch];
  float ls[kCombineBatch];
  auto load = [&](int e, int s0) {
#pragma unroll
    for (int k = 0; k < kCombineBatch; ++k) {
      const int s = s0 + k * wpr;
      const bool in = on && s < num_splits && e < d;
      v[k] = in ? *reinterpret_cast<const float4*>(part + static_cast<int64_t>(s) * d + e) : make_float4(0.f, 0.f, 0.f, 0.f);
      ls[k] = in ? part_lse[s] : -INFINITY;
    }
  };
  const int e0 = lane * 4;
  load(e0, sw);  // in flight while the row's max and sum below wait for theirs

  // The row's max and sum of 2^lse over its splits, in each of its warps (xor offsets < 32 stay
  // inside the half wavefront on a 64-wide machine too).
  const float a = on && lane < num_splits ? part_lse[lane] : -INFINITY;
  const float b = on && lane + 32 < num_splits ? part_lse[lane + 32] : -INFINITY;
  float mx = fmaxf(a, b);
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) mx = fmaxf(mx, kh_dec_shfl_xor(mx, off));
  float sum = mx == -INFINITY ? 0.f : kh_dec_exp2(a - mx) + kh_dec_exp2(b - mx);
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) sum += kh_dec_shfl_xor(sum, off);
  const float inv = sum > 0.f ? 1.f / sum : 0.f;

  for (int e = e0; e < d; e += 32 * 4) {
    float o[4] = {0.f, 0.f, 0.f, 0.f};
    for (int s0 = sw; s0 < num_splits; s0 += wpr * kCombineBatch) {
      if (e != e0 || s0 != sw) load(e, s0);
#pragma unroll
      for (int k = 0; k < kCombineBatch; ++k) {
        const float wk = ls[k] == -INFINITY ? 0.f : kh_dec_exp2(ls[k] - mx) * inv;
        o[0] = fmaf(wk, v[k].x, o[0]);
        o[1] = fmaf(wk, v[k].y, o[1]);
        o[2] = fmaf(wk, v[k].z, o[2]);
        o[3] = fmaf(wk, v[k].w, o[3]);
      }
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) sums[w][e + k] = o[k];
  }
  __syncthreads();
  if (!on) return;

  const int64_t bi = row / (static_cast<int64_t>(p.q_len) * p.heads_q);
  const int i = static_cast<int>((row / p.heads_q) % p.q_len), h = static_cast<int>(row % p.heads_q);
  uint16_t* orow = static_cast<uint16_t*>(p.out) + bi * p.o_batch_stride + static_cast<int64_t>(i) * p.o_row_stride +
                   static_cast<int64_t>(h) * p.o_head_stride;
  // The row's warps write it together: 2 dims a lane, summed over the row's warps.
  for (int e = 2 * (sw * 32 + lane); e < d; e += 2 * 32 * wpr) {
    float o0 = 0.f, o1 = 0.f;
    for (int k = 0; k < wpr; ++k) {
      o0 += sums[rw * wpr + k][e];
      o1 += sums[rw * wpr + k][e + 1];
    }
    *reinterpret_cast<uint32_t*>(orow + e) = to_bits(o0, Tag{}) | (to_bits(o1, Tag{}) << 16);
  }
  if (sw == 0 && lane == 0 && p.lse != nullptr)
    p.lse[(bi * p.heads_q + h) * p.q_len + i] = sum > 0.f ? (mx + log2f(sum)) * kLn2 : -INFINITY;
}

}  // namespace decode
}  // namespace kh_attention
